// The compile timeline: when each compile and each phase of it ran, from PyTorch's own
// chromium_event trace events (or, for a compile without them, its compilation_metrics), for
// the Perfetto export and the HTML report. Private to replay/inspect.
// Thread-safety: built once, then read only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/job.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

// One span (or instant) on a track; times in microseconds since the Unix epoch.
struct TimelineSlice {
  std::string name;
  double beginUs = 0, endUs = 0;
  bool instant = false;
  int depth = 0;  // nesting on its track: 0 for the compile's own slice, 1 for its outermost phases
  nlohmann::json args = nlohmann::json::object();
};

// One compile of one frame (all its attempts), or, with frame -1, the events outside any compile.
struct TimelineTrack {
  int frame = -1, compile = -1;
  std::vector<const Compile*> attempts;  // the job's compiles on this track, attempt order
  std::vector<TimelineSlice> slices;     // sorted by begin, enclosing slices first; empty: no timing
};

struct JobTimeline {
  std::vector<TimelineTrack> tracks;  // by frame then compile; the track outside compiles first
  double beginUs = 0, endUs = 0;      // the span of every slice; 0 when none
  std::vector<std::string> notes;     // what could not be placed, and why
};

JobTimeline buildTimeline(const StoreReader& reader, const Job& job);

// "0/1" for a track, "(outside compiles)" for the other.
std::string trackName(const TimelineTrack& t);

}  // namespace dynrep::replay
