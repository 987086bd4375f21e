// replay-inspect's reports on a store: info, ls (compiles, records or blobs) and verify, as
// aligned text or JSON. show is in show.cc.
#include "dynrep/replay/inspect/inspect.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/capture/records.h"
#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/json_fields.h"
#include "dynrep/store/reader.h"
#include "provenance.h"
#include "render.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

std::string stateText(const InspectOptions& o, StoreState s) {
  return paint(o, s == StoreState::Finished ? "32" : "33", stateName(s));
}

std::string isoTime(uint64_t unixSeconds) {
  std::time_t t = std::time_t(unixSeconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string humanBytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

double ratio(const StoreStats& s) {
  return s.storedBlobBytes ? double(s.rawBlobBytes) / double(s.storedBlobBytes) : 1.0;
}

// Per frame: how often its compiled code ran, and how many calls found no entry whose guards
// passed and so compiled again (each recompile is one such call).
struct FrameCalls {
  std::string function, file;
  int line = 0;
  int64_t compiles = 0, calls = 0, fellThrough = 0;
  bool counted = false;
};

std::vector<FrameCalls> frameCalls(const Job& job) {
  std::vector<FrameCalls> frames;
  std::map<int32_t, size_t> index;
  for (const Compile& c : job.compiles()) {
    auto [it, added] = index.emplace(c.id.frame, frames.size());
    if (added) frames.push_back({c.function, c.file, c.firstLine});
    FrameCalls& f = frames[it->second];
    if (c.id.attempt == 0) f.compiles++;
    if (c.id.attempt == 0 && c.id.compile > 0) f.fellThrough++;
    if (c.calls >= 0) f.calls += c.calls, f.counted = true;
  }
  return frames;
}

void printCompiles(const std::string& path, const Job& job, const InspectOptions& o, std::ostream& out) {
  size_t recompiles = 0;
  for (const Compile& c : job.compiles()) recompiles += c.id.compile > 0;
  if (o.json) {
    json rows = json::array();
    for (const Compile& c : job.compiles()) {
      json graphs = json::array();
      for (const auto& [name, key] : c.graphs) graphs.push_back(name);
      rows.push_back({{"compile_id", c.id.str()},
                      {"function", c.function},
                      {"file", c.file},
                      {"line", c.firstLine},
                      {"graphs", graphs},
                      {"guards", c.guardCount},
                      {"status", c.status},
                      {"reason", c.reason},
                      {"graph_breaks", c.graphBreaks},
                      {"not_saved", c.notSaved},
                      {"dropped_guards", c.dropped.size()},
                      {"unreadable_events", c.unreadable},
                      {"calls", callsJson(c)},
                      {"runtime_failures", c.runtimeFailures.size()},
                      {"generation", c.generation}});
    }
    json functions = json::array();
    for (const FrameCalls& f : frameCalls(job))
      functions.push_back({{"function", f.function},
                           {"file", f.file},
                           {"line", f.line},
                           {"compiles", f.compiles},
                           {"calls", f.counted ? json(f.calls) : json(nullptr)},
                           {"fell_through", f.fellThrough}});
    out << dumpJson({{"path", path},
                     {"frames", job.frameCount()},
                     {"recompiles", recompiles},
                     {"compiles", rows},
                     {"functions", functions}},
                    2)
        << "\n";
    return;
  }
  // Columns as wide as their widest cell, so resume functions' long names stay aligned.
  size_t fnWidth = 8, locWidth = 8;
  for (const Compile& c : job.compiles()) {
    fnWidth = std::max(fnWidth, c.function.size());
    locWidth = std::max(locWidth, fmt::format("{}:{}", baseName(c.file), c.firstLine).size());
  }
  // A store that updates grew (replay --update) says which generation added each compile.
  bool grown =
      std::any_of(job.compiles().begin(), job.compiles().end(), [](const Compile& c) { return c.generation > 0; });
  auto generation = [&](const Compile& c) { return grown ? fmt::format("{:>3}  ", c.generation) : std::string(); };
  fmt::print(out, "{:<9}  {}{:<{}}  {:<{}}  {:>6}  {:>6}  {:>6}  {:>6}  {:<10}  {}\n", "COMPILE", grown ? "GEN  " : "",
             "FUNCTION", fnWidth, "LOCATION", locWidth, "GRAPHS", "GUARDS", "BREAKS", "CALLS", "STATUS", "REASON");
  for (const Compile& c : job.compiles()) {
    // A compile whose code then failed when it ran is marked, not "ok".
    bool runFailed = c.status == "ok" && !c.runtimeFailures.empty();
    std::string status = runFailed ? "run failed" : firstLine(c.status).substr(0, 10);
    status = fmt::format("{:<10}", status);  // pad before colouring, so escapes do not count
    status = paint(o, c.status == "ok" && !runFailed ? "32" : c.status == "restarted" ? "33" : "31", status);
    fmt::print(out, "{:<9}  {}{:<{}}  {:<{}}  {:>6}  {:>6}  {:>6}  {:>6}  {}  {}\n", c.id.str(), generation(c),
               c.function, fnWidth, fmt::format("{}:{}", baseName(c.file), c.firstLine), locWidth, c.graphs.size(),
               c.guardCount, c.graphBreaks.size(), c.calls < 0 ? "-" : std::to_string(c.calls), status,
               firstLine(c.reason));
  }
  fmt::print(out, "total: {} frames, {} compiles, {} recompiles\n", job.frameCount(), job.compiles().size(),
             recompiles);
  for (const Compile& c : job.compiles())
    for (const RuntimeFailure& r : c.runtimeFailures)
      fmt::print(out, "{} failed at run time (call {}): {}: {}  (replay-inspect why {})\n", c.id.str(), r.call, r.type,
                 firstLine(r.message), c.id.str());
  for (const FrameCalls& f : frameCalls(job))
    if (f.fellThrough > 0)
      fmt::print(out, "{}: {} compiles, {} calls ran compiled code, {} fell through to a recompile\n", f.function,
                 f.compiles, f.counted ? std::to_string(f.calls) : "?", f.fellThrough);
  for (const Compile& c : job.compiles())
    if (!c.notSaved.empty())
      fmt::print(out, "not saved for replay without Dynamo: {} {}: {}\n", c.id.str(), c.function,
                 firstLine(c.notSaved));
  for (const Compile& c : job.compiles())
    if (!c.unreadable.empty()) fmt::print(out, "{} {}: {}\n", c.id.str(), c.function, unreadableText(c));
}

}  // namespace

Result<Report> inspectInfo(const std::string& path, const InspectOptions& o) {
  Result<std::unique_ptr<StoreReader>> opened = StoreReader::open(path);
  if (!opened.isOk()) return opened.status();
  const std::unique_ptr<StoreReader>& r = *opened;
  Report report;
  std::ostringstream out;
  StoreStats s = r->stats();
  const StoreHeader& h = r->header();
  uint64_t recordTotal = 0;
  for (const auto& [kind, n] : s.recordsByKind) recordTotal += n;
  if (o.json) {
    json records = json::object();
    for (const auto& [kind, n] : s.recordsByKind) records[capture::kindName(kind)] = n;
    json j = {{"path", path},
              {"format_version", fmt::format("{}.{}", h.major, h.minor)},
              {"writer", h.writerVersion},
              {"created", isoTime(h.createdUnixSeconds)},
              {"state", stateName(r->state())},
              {"recovery_note", r->recoveryNote()},
              {"file_bytes", s.fileBytes},
              {"record_count", recordTotal},
              {"records", records},
              {"blob_count", s.blobCount},
              {"raw_bytes", s.rawBlobBytes},
              {"stored_bytes", s.storedBlobBytes},
              {"ratio", ratio(s)}};
    report.output = dumpJson(j, 2) + "\n";
    return report;
  }
  noteUnfinished(*r, report);
  auto row = [&](const std::string& k, const std::string& v) { fmt::print(out, "{:<14}{}\n", k, v); };
  row("store", path);
  row("format", fmt::format("{}.{} (written by {})", h.major, h.minor, h.writerVersion));
  row("created", isoTime(h.createdUnixSeconds));
  row("state", stateText(o, r->state()));
  row("file size", fmt::format("{} ({} bytes)", humanBytes(s.fileBytes), s.fileBytes));
  row("records", std::to_string(recordTotal));
  for (const auto& [kind, n] : s.recordsByKind) row("  " + capture::kindName(kind), std::to_string(n));
  row("blobs", std::to_string(s.blobCount));
  row("raw bytes", fmt::format("{} ({} bytes)", humanBytes(s.rawBlobBytes), s.rawBlobBytes));
  row("stored bytes", fmt::format("{} ({} bytes)", humanBytes(s.storedBlobBytes), s.storedBlobBytes));
  row("ratio", fmt::format("{:.2f}", ratio(s)));
  report.output = out.str();
  return report;
}

Result<Report> inspectLs(const std::string& path, LsWhat what, const InspectOptions& o) {
  Result<std::unique_ptr<StoreReader>> opened = StoreReader::open(path);
  if (!opened.isOk()) return opened.status();
  const std::unique_ptr<StoreReader>& r = *opened;
  Report report;
  std::ostringstream out;
  if (!o.json) noteUnfinished(*r, report);
  if (what == LsWhat::Default) {
    Result<Job> job = Job::load(*r);
    if (!job.isOk()) return job.status();
    if (!job->compiles().empty()) {
      printCompiles(path, *job, o, out);
      report.output = out.str();
      return report;
    }
  }
  if (what == LsWhat::Blobs) {
    std::vector<BlobInfo> blobs = r->blobs();
    json rows = json::array();
    if (!o.json) fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6}  {:>6}\n", "KEY", "RAW", "STORED", "RATIO", "CHUNKS");
    uint64_t raw = 0, stored = 0, chunks = 0;
    for (const BlobInfo& b : blobs) {
      chunks += b.chunks;
      raw += b.rawSize;
      stored += b.storedSize;
      double q = b.storedSize ? double(b.rawSize) / double(b.storedSize) : 1.0;
      if (o.json) {
        rows.push_back({{"key", b.key.hex()},
                        {"raw_bytes", b.rawSize},
                        {"stored_bytes", b.storedSize},
                        {"chunks", b.chunks},
                        {"offset", b.offset}});
      } else {
        fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6.2f}  {:>6}\n", b.key.hex(), b.rawSize, b.storedSize, q, b.chunks);
      }
    }
    if (o.json) {
      out << dumpJson(json{{"path", path}, {"state", stateName(r->state())}, {"blobs", rows}}, 2) << "\n";
    } else {
      fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6.2f}  {:>6}\n", fmt::format("total: {} blobs", blobs.size()), raw,
                 stored, stored ? double(raw) / double(stored) : 1.0, chunks);
    }
    report.output = out.str();
    return report;
  }
  json rows = json::array();
  if (!o.json) fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", "#", "OFFSET", "KIND", "BYTES", "DESCRIPTION");
  uint64_t total = 0;
  for (size_t i = 0; i < r->recordCount(); ++i) {
    RecordInfo e = r->record(i);
    Result<std::string_view> p = r->recordPayload(i);
    std::string what = p.isOk() ? capture::describe(e.kind, *p) : "(" + p.status().message() + ")";
    if (!p.isOk()) report.problemFound = true;
    total += e.payloadSize;
    if (o.json) {
      rows.push_back({{"index", i},
                      {"offset", e.offset},
                      {"kind", capture::kindName(e.kind)},
                      {"kind_id", e.kind},
                      {"bytes", e.payloadSize},
                      {"description", what}});
    } else {
      fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", i, e.offset, capture::kindName(e.kind), e.payloadSize,
                 what);
    }
  }
  if (o.json) {
    out << dumpJson(json{{"path", path}, {"state", stateName(r->state())}, {"records", rows}}, 2) << "\n";
  } else {
    fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", "", "", "total", total,
               fmt::format("{} records, {} blobs", r->recordCount(), r->blobs().size()));
  }
  report.output = out.str();
  return report;
}

Result<Report> inspectVerify(const std::string& path, const InspectOptions& o) {
  Result<std::unique_ptr<StoreReader>> opened = StoreReader::open(path);
  Report report;
  if (!opened.isOk()) {
    if (!o.json) return opened.status();
    report.output = dumpJson(json{{"path", path}, {"ok", false}, {"problems", json::array()}}, 2) + "\n";
    report.notes.push_back({ReportNote::Level::Error, opened.status().message()});
    report.problemFound = true;
    return report;
  }
  const std::unique_ptr<StoreReader>& r = *opened;
  std::vector<std::string> problems;  // each problem's message, which names the file and where
  for (const Status& p : r->verify()) problems.push_back(p.message());
  bool sound = problems.empty();
  StoreStats s = r->stats();
  report.problemFound = !sound;
  if (o.json) {
    report.output = dumpJson({{"path", path},
                              {"ok", sound},
                              {"state", stateName(r->state())},
                              {"problems", problems},
                              {"records", r->recordCount()},
                              {"blobs", s.blobCount},
                              {"raw_bytes", s.rawBlobBytes}},
                             2) +
                    "\n";
    return report;
  }
  for (const std::string& p : problems) report.notes.push_back({ReportNote::Level::Error, p});
  if (sound) {
    report.output = fmt::format("{}: {} ({} records, {} blobs, {} checked)\n", path, paint(o, "32", "ok"),
                                r->recordCount(), s.blobCount, humanBytes(s.rawBlobBytes));
    return report;
  }
  report.output = fmt::format("{}: {} {}\n", path, problems.size(), problems.size() == 1 ? "problem" : "problems");
  return report;
}

}  // namespace dynrep::replay
