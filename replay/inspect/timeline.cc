// buildTimeline: pairs PyTorch's chromium_event begin/end events per compile into spans.
// PyTorch logs them with ph B (begin), E (end) or i (instant) and ts in microseconds
// (torch/_dynamo/utils.py, ChromiumEventLogger); a compile's events nest, its attempts share
// one track, and a lazily compiled backward lands on its forward's track later on.
#include "timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "dynrep/capture/records.h"
#include "dynrep/replay/query/json_fields.h"
#include "dynrep/replay/query/store_records.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;
using TrackKey = std::pair<int, int>;  // frame, compile; (-1, -1) outside compiles

// "0/1" or "0/1_2" as PyTorch prints a compile id into chromium events' args.
std::optional<TrackKey> parseCompileId(const json& args) {
  std::string text = field(args, "compile_id", "");
  int frame = -1, compile = -1;
  if (std::sscanf(text.c_str(), "%d/%d", &frame, &compile) != 2 || frame < 0 || compile < 0) return std::nullopt;
  return TrackKey{frame, compile};
}

// B's args and then E's (E adds what the phase measured); a non-object is kept under "args".
void mergeArgs(json& into, const json& more) {
  if (more.is_null()) return;
  if (!more.is_object()) {
    into["args"] = more;
    return;
  }
  for (auto it = more.begin(); it != more.end(); ++it)
    if (!into.contains(it.key())) into[it.key()] = it.value();
}

class Builder {
 public:
  // A payload that cannot be read counts as an unreadable chromium_event, as one that does not parse.
  void chromiumEvent(const capture::TraceEvent& e, const Result<std::string>& payload) {
    json ev = payload.isOk() ? json::parse(*payload, nullptr, /*allow_exceptions=*/false) : json();
    std::string name = field(ev, "name", ""), ph = field(ev, "ph", "");
    std::optional<double> ts = ev.is_object() && ev.contains("ts") ? as<double>(ev["ts"]) : std::nullopt;
    if (name.empty() || ph.empty() || !ts || !std::isfinite(*ts)) {
      skipped_["unreadable chromium_event"]++;
      return;
    }
    json args = ev.is_object() ? ev.value("args", json()) : json();
    TrackKey key = e.compileId.valid() ? TrackKey{e.compileId.frame, e.compileId.compile}
                                       : parseCompileId(args).value_or(TrackKey{-1, -1});
    TimelineSlice s;
    s.name = name;
    s.beginUs = s.endUs = *ts;
    mergeArgs(s.args, args);
    seen(key, *ts);
    if (ph == "B") {
      open_[key].push_back(std::move(s));
    } else if (ph == "E") {
      end(key, std::move(s));
    } else if (ph == "X") {
      double dur = field<double>(ev, "dur", 0);
      s.endUs += std::isfinite(dur) && dur > 0 ? dur : 0;
      seen(key, s.endUs);
      done_[key].push_back(std::move(s));
    } else if (ph == "i" || ph == "I") {
      s.instant = true;
      done_[key].push_back(std::move(s));
    } else {
      skipped_["chromium_event of phase " + ph]++;
    }
  }

  void compilationMetrics(const capture::TraceEvent& e) {
    json md = json::parse(e.metadataJson, nullptr, /*allow_exceptions=*/false);
    double start = field<double>(md, "start_time", 0), seconds = field<double>(md, "entire_frame_compile_time_s", 0);
    if (!e.compileId.valid() || !(start > 0) || !std::isfinite(start)) return;
    metrics_.emplace(TrackKey{e.compileId.frame, e.compileId.compile},
                     std::make_pair(start * 1e6, std::isfinite(seconds) && seconds > 0 ? seconds * 1e6 : 0));
  }

  JobTimeline finish(const Job& job) {
    std::map<TrackKey, TimelineTrack> tracks;
    for (const Compile& c : job.compiles()) tracks[{c.id.frame, c.id.compile}].attempts.push_back(&c);
    for (auto& [key, slices] : done_) tracks[key];
    for (auto& [key, slices] : open_) tracks[key];
    JobTimeline out;
    for (auto& [key, track] : tracks) {
      track.frame = key.first;
      track.compile = key.second;
      collect(key, track);
      if (track.slices.empty() && !track.attempts.empty())
        out.notes.push_back(trackName(track) +
                            ": no timing recorded (no chromium_event, no compilation_metrics start_time)");
      if (!track.slices.empty() && key.first >= 0) track.slices.insert(track.slices.begin(), compileSlice(track));
      arrange(track, key.first >= 0);
      for (const TimelineSlice& s : track.slices) {
        bool first = out.beginUs == 0 && out.endUs == 0;
        out.beginUs = first ? s.beginUs : std::min(out.beginUs, s.beginUs);
        out.endUs = first ? s.endUs : std::max(out.endUs, s.endUs);
      }
      out.tracks.push_back(std::move(track));
    }
    for (const auto& [what, n] : skipped_) out.notes.push_back(fmt::format("{} left out: {}", what, n));
    return out;
  }

 private:
  void seen(const TrackKey& key, double us) {
    auto [it, fresh] = span_.emplace(key, std::make_pair(us, us));
    if (fresh) return;
    it->second.first = std::min(it->second.first, us);
    it->second.second = std::max(it->second.second, us);
  }

  // Closes the innermost open span of that name; spans opened inside it and never closed end here.
  void end(const TrackKey& key, TimelineSlice e) {
    std::vector<TimelineSlice>& stack = open_[key];
    auto match = std::find_if(stack.rbegin(), stack.rend(), [&](const TimelineSlice& s) { return s.name == e.name; });
    if (match == stack.rend()) {
      // Its begin is lost: it begins with the innermost span still open (or with the track's
      // first event), so that it nests with every other span.
      e.beginUs = stack.empty() ? span_[key].first : stack.back().beginUs;
      e.args["begin_not_recorded"] = true;
      done_[key].push_back(std::move(e));
      return;
    }
    while (&stack.back() != &*match) {
      TimelineSlice inner = std::move(stack.back());
      stack.pop_back();
      inner.endUs = e.endUs;
      inner.args["end_not_recorded"] = true;
      done_[key].push_back(std::move(inner));
    }
    TimelineSlice s = std::move(stack.back());
    stack.pop_back();
    s.endUs = e.endUs;
    mergeArgs(s.args, e.args);
    done_[key].push_back(std::move(s));
  }

  // The track's slices: closed spans and spans never closed (they end with the track's last
  // event), or the metrics' span as a last resort.
  void collect(const TrackKey& key, TimelineTrack& track) {
    double last = span_.count(key) ? span_[key].second : 0.0;
    track.slices = std::move(done_[key]);
    for (TimelineSlice& s : open_[key]) {
      s.endUs = last;
      s.args["end_not_recorded"] = true;
      track.slices.push_back(std::move(s));
    }
    if (!track.slices.empty() || !metrics_.count(key)) return;
    auto [start, dur] = metrics_[key];
    TimelineSlice s;
    s.name = "entire_frame_compile";
    s.beginUs = start;
    s.endUs = start + dur;
    s.args["from"] = "compilation_metrics";
    track.slices.push_back(std::move(s));
  }

  // The compile itself, spanning its phases, with what the report and Perfetto show for it.
  static TimelineSlice compileSlice(const TimelineTrack& track) {
    TimelineSlice s;
    s.name = "compile " + trackName(track);
    s.beginUs = track.slices.front().beginUs;
    s.endUs = track.slices.front().endUs;
    for (const TimelineSlice& p : track.slices) {
      s.beginUs = std::min(s.beginUs, p.beginUs);
      s.endUs = std::max(s.endUs, p.endUs);
    }
    if (track.attempts.empty()) return s;
    const Compile& first = *track.attempts.front();
    const Compile& last = *track.attempts.back();
    s.name += " " + first.function;
    s.args = {{"function", first.function}, {"file", first.file},      {"line", first.firstLine},
              {"reason", first.reason},     {"status", last.status},   {"attempts", track.attempts.size()},
              {"guards", last.guardCount},  {"graphs", json::array()}, {"phase_seconds", last.phaseSeconds}};
    for (const auto& [graph, key] : last.graphs) s.args["graphs"].push_back(graph);
    if (last.calls >= 0) s.args["calls"] = last.calls;
    return s;
  }

  // Sorted by begin, enclosing slices first; depth from containment.
  static void arrange(TimelineTrack& track, bool hasCompileSlice) {
    std::stable_sort(track.slices.begin() + (hasCompileSlice && !track.slices.empty() ? 1 : 0), track.slices.end(),
                     [](const TimelineSlice& a, const TimelineSlice& b) {
                       if (a.beginUs != b.beginUs) return a.beginUs < b.beginUs;
                       return a.endUs > b.endUs;
                     });
    std::vector<const TimelineSlice*> enclosing;
    for (TimelineSlice& s : track.slices) {
      while (!enclosing.empty() && s.endUs > enclosing.back()->endUs) enclosing.pop_back();
      s.depth = int(enclosing.size());
      if (!s.instant) enclosing.push_back(&s);
    }
  }

  std::map<TrackKey, std::vector<TimelineSlice>> open_, done_;
  std::map<TrackKey, std::pair<double, double>> span_;     // first and last time seen
  std::map<TrackKey, std::pair<double, double>> metrics_;  // start and duration, from metrics
  std::map<std::string, int> skipped_;
};

}  // namespace

std::string trackName(const TimelineTrack& t) {
  return t.frame < 0 ? "(outside compiles)" : fmt::format("{}/{}", t.frame, t.compile);
}

JobTimeline buildTimeline(const StoreReader& reader, const Job& job) {
  Builder builder;
  forEachRecord<capture::TraceEvent>(reader, [&](const capture::TraceEvent& e) {
    if (e.name == "compilation_metrics") builder.compilationMetrics(e);
    if (e.name == "chromium_event" && !e.payloadKey.empty()) builder.chromiumEvent(e, job.text(e.payloadKey));
  });
  return builder.finish(job);
}

}  // namespace dynrep::replay
