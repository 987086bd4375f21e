// replay-inspect export --perfetto: the compile timeline in the Chrome trace-event format
// (JSON object form), which Perfetto and chrome://tracing open. One process per frame, one
// thread per compile of it; complete events (ph X) so that every span is closed. Layout:
// docs/exports.md "The Perfetto timeline".

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "render.h"
#include "timeline.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

json metadataEvent(const char* name, int pid, int tid, json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// Process names and order (frames), thread names and order (compiles).
void nameTracks(const JobTimeline& timeline, json& events) {
  std::map<int, bool> named;
  for (const TimelineTrack& t : timeline.tracks) {
    int pid = t.frame + 1, tid = t.compile + 1;
    if (!named[pid]) {
      named[pid] = true;
      std::string name = "outside compiles";
      if (t.frame >= 0 && !t.attempts.empty())
        name = fmt::format("frame {}: {} ({}:{})", t.frame, t.attempts.front()->function,
                           baseName(t.attempts.front()->file), t.attempts.front()->firstLine);
      else if (t.frame >= 0)
        name = fmt::format("frame {}", t.frame);
      events.push_back(metadataEvent("process_name", pid, 0, {{"name", name}}));
      events.push_back(metadataEvent("process_sort_index", pid, 0, {{"sort_index", pid}}));
    }
    events.push_back(metadataEvent("thread_name", pid, tid, {{"name", "compile " + trackName(t)}}));
    events.push_back(metadataEvent("thread_sort_index", pid, tid, {{"sort_index", tid}}));
  }
}

json traceEvents(const JobTimeline& timeline) {
  json events = json::array();
  nameTracks(timeline, events);
  for (const TimelineTrack& t : timeline.tracks) {
    int pid = t.frame + 1, tid = t.compile + 1;
    for (const TimelineSlice& s : t.slices) {
      json e = {{"name", s.name},
                {"cat", s.depth == 0 && t.frame >= 0 ? "compile" : "dynamo_timed"},
                {"ph", s.instant ? "i" : "X"},
                {"ts", s.beginUs},
                {"pid", pid},
                {"tid", tid},
                {"args", s.args}};
      if (s.instant)
        e["s"] = "t";
      else
        e["dur"] = s.endUs - s.beginUs;
      events.push_back(std::move(e));
    }
  }
  return events;
}

}  // namespace

Result<Report> exportPerfetto(const std::string& path, const std::string& file, const InspectOptions& o) {
  Report report;
  Result<OpenedJob> opened = openJobNoting(path, report);
  if (!opened.isOk()) return opened.status();
  JobTimeline timeline = buildTimeline(*opened->reader, opened->job);
  json trace = {
      {"traceEvents", traceEvents(timeline)},
      {"displayTimeUnit", "ms"},
      {"otherData", {{"store", path}, {"exported_by", "replay-inspect export --perfetto"}, {"notes", timeline.notes}}}};
  std::string text = dumpJson(trace) + "\n";
  size_t spans = 0;
  for (const TimelineTrack& t : timeline.tracks) spans += t.slices.size();
  if (file == "-") {
    report.output = text;
  } else {
    if (Status written = writeFile(file, text); !written.isOk()) return written;
    if (o.json)
      report.output = dumpJson({{"path", path},
                                {"file", file},
                                {"tracks", timeline.tracks.size()},
                                {"events", spans},
                                {"notes", timeline.notes}},
                               2) +
                      "\n";
    else
      report.output = fmt::format("{}: {} events on {} tracks\n", file, spans, timeline.tracks.size());
  }
  for (const std::string& note : timeline.notes) report.notes.push_back({ReportNote::Level::Note, path + ": " + note});
  return report;
}

}  // namespace dynrep::replay
