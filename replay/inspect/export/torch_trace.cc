// replay-inspect export --torch-trace: the store's trace events written back as the log
// PyTorch's TORCH_TRACE handler writes (torch/_logging/_internal.py, TorchLogsFormatter with
// trace=True), which tlparse reads. Format: docs/exports.md "The TORCH_TRACE log".
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/capture/records.h"
#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "export/md5.h"
#include "render.h"

namespace dynrep::replay {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kCapturePrefix = "dynamo_replay.";

// JSON text in the key order it was read in; invalid UTF-8 from the store is replaced.
std::string dumpOrdered(const ordered_json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// The glog prefix PyTorch writes: level V, month, day, time with microseconds, process id,
// then the logging call site. The store keeps neither the process id nor the call site, so
// the site names the record the line came from. Times are UTC: glog's prefix carries no
// zone, and tlparse reads it as UTC.
std::string glogPrefix(double unixSeconds, size_t record) {
  if (!std::isfinite(unixSeconds) || unixSeconds < 0 || unixSeconds > 1e11) unixSeconds = 0;
  std::time_t whole = std::time_t(unixSeconds);
  long micros = std::lround((unixSeconds - double(whole)) * 1e6);
  if (micros > 999999) micros = 999999;
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%m%d %H:%M:%S", &tm);
  return fmt::format("V{}.{:06d} 0 dynamo_replay/store:{}]", stamp, micros, record);
}

// The payload lines as PyTorch writes them: each line of the text after a newline and a tab.
void writePayload(std::ostream& out, const std::string& payload) {
  size_t start = 0;
  while (true) {
    size_t end = payload.find('\n', start);
    out << "\n\t"
        << std::string_view(payload).substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

struct ExportCounts {
  size_t pytorch = 0, capture = 0, artifacts = 0, skipped = 0;
  std::vector<std::string> problems;  // "record 17 (...): ..."
};

bool isCaptureEvent(const capture::TraceEvent& e) {
  return std::string_view(e.name).substr(0, kCapturePrefix.size()) == kCapturePrefix;
}

class TraceLogWriter {
 public:
  TraceLogWriter(const StoreReader& reader, std::ostream& out, bool withCapture)
      : reader_(reader), out_(out), withCapture_(withCapture) {}

  // The trace event in record i, or nullopt (noted) when it cannot be decoded.
  std::optional<capture::TraceEvent> read(size_t i) {
    Result<std::string_view> payload = reader_.recordPayload(i);
    capture::TraceEvent e;
    if (payload.isOk() && capture::decode(*payload, &e).isOk()) return e;
    counts.problems.push_back(fmt::format("record {}: unreadable trace event; left out", i));
    return std::nullopt;
  }

  // Capture's own events of one name and compile go out as one artifact, where the first of
  // them was: dozens of dropped_guard or symbol_origin events would otherwise each be a file.
  void groupCaptureEvent(size_t record, const capture::TraceEvent& e) {
    std::vector<size_t>& group = groups_[{e.compileId, e.name}];
    if (group.empty()) firstOfGroup_[record] = &group;
    group.push_back(record);
  }

  void write(size_t record, const capture::TraceEvent& e) {
    if (isCaptureEvent(e)) {
      if (!withCapture_) counts.skipped++;
      if (auto first = firstOfGroup_.find(record); withCapture_ && first != firstOfGroup_.end())
        writeCaptureGroup(record, e, *first->second);
      return;
    }
    if (json::parse(e.metadataJson, nullptr, /*allow_exceptions=*/false).is_discarded()) {
      problem(record, e, "metadata is not JSON; left out");
      return;
    }
    std::string payload;
    bool hasPayload = readPayload(record, e, &payload);
    // The metadata text goes out as capture kept it (json.dumps of the dict PyTorch logged), so
    // the line is PyTorch's own; reserialized only if it would break the line.
    std::string metadata = e.metadataJson.find_first_of("\r\n") == std::string::npos
                               ? e.metadataJson
                               : dumpOrdered(ordered_json::parse(e.metadataJson, nullptr, false));
    writeLine(record, e, dumpJson(json(e.name)), metadata, hasPayload ? &payload : nullptr);
    counts.pytorch++;
  }

  ExportCounts counts;

 private:
  bool readPayload(size_t record, const capture::TraceEvent& e, std::string* payload) {
    if (e.payloadKey.empty()) return false;
    std::optional<BlobKey> key = BlobKey::fromHex(e.payloadKey);
    Result<std::string> data = key ? reader_.readBlob(*key) : Result<std::string>(Status::corruption("bad blob key"));
    if (!data.isOk()) {
      problem(record, e,
              "payload " + e.payloadKey + " unreadable (" + data.status().message() + "); written without it");
      return false;
    }
    *payload = std::move(*data);
    return true;
  }

  // The artifact: a JSON list with one {"metadata", "payload"?, "time"} per event, metadata
  // and payload parsed where they are JSON (capture writes JSON), else as text.
  void writeCaptureGroup(size_t record, const capture::TraceEvent& first, const std::vector<size_t>& records) {
    ordered_json events = ordered_json::array();
    for (size_t i : records) {
      std::optional<capture::TraceEvent> e = i == record ? first : read(i);
      if (!e) continue;
      ordered_json md = ordered_json::parse(e->metadataJson, nullptr, false);
      ordered_json item = {{"metadata", md.is_discarded() ? ordered_json(e->metadataJson) : md}};
      if (std::string payload; readPayload(i, *e, &payload)) {
        ordered_json p = ordered_json::parse(payload, nullptr, false);
        item["payload"] = p.is_discarded() ? ordered_json(payload) : p;
      }
      item["time"] = e->time;
      events.push_back(std::move(item));
      counts.capture++;
    }
    std::string artifact = dumpOrdered(events, 0);
    writeLine(record, first, "\"artifact\"", dumpOrdered({{"name", first.name}, {"encoding", "json"}}), &artifact);
    counts.artifacts++;
  }

  // One event: {"<name>": metadata, frame_id, frame_compile_id, attempt, has_payload}, the
  // keys in the order trace_structured adds them, then the payload lines.
  void writeLine(size_t record, const capture::TraceEvent& e, const std::string& nameJson, const std::string& metadata,
                 const std::string* payload) {
    out_ << glogPrefix(e.time, record) << " {" << nameJson << ": " << metadata;
    const capture::CompileId& id = e.compileId;
    if (id.valid()) {
      out_ << ", \"frame_id\": " << id.frame << ", \"frame_compile_id\": " << id.compile;
      if (id.attempt >= 0) out_ << ", \"attempt\": " << id.attempt;
    }
    if (payload) out_ << ", \"has_payload\": \"" << md5Hex(*payload) << "\"";
    out_ << "}";
    if (payload) writePayload(out_, *payload);
    out_ << "\n";
  }

  void problem(size_t record, const capture::TraceEvent& e, const std::string& what) {
    counts.problems.push_back(fmt::format("record {} ({} {}): {}", record, e.name, e.compileId.str(), what));
  }

  const StoreReader& reader_;
  std::ostream& out_;
  bool withCapture_;
  std::map<std::pair<capture::CompileId, std::string>, std::vector<size_t>> groups_;  // records, file order
  std::map<size_t, const std::vector<size_t>*> firstOfGroup_;                         // first record -> its group
};

// "dedicated_log_torch_trace_<store name>.log": PyTorch's prefix, so tlparse and tools that
// look for it find the file; the rest is the store's file name in characters safe anywhere.
std::string logFileName(const std::string& storePath) {
  std::string stem = fs::path(storePath).stem().string(), safe;
  for (char ch : stem) safe += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
  return "dedicated_log_torch_trace_" + (safe.empty() ? std::string("store") : safe) + ".log";
}

}  // namespace

Result<Report> exportTorchTrace(const std::string& path, const std::string& dir, const TorchTraceOptions& options,
                                const InspectOptions& o) {
  Result<std::unique_ptr<StoreReader>> opened = StoreReader::open(path);
  if (!opened.isOk()) return opened.status();
  const std::unique_ptr<StoreReader>& reader = *opened;
  Report report;
  noteUnfinished(*reader, report);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::ioError(fmt::format("{}: cannot create the directory: {}", dir, ec.message()));
  std::string file = (fs::path(dir) / logFileName(path)).string();
  std::ofstream log(file, std::ios::binary | std::ios::trunc);
  if (!log) return Status::ioError(fmt::format("{}: cannot write the file", file));

  TraceLogWriter writer(*reader, log, !options.pytorchOnly);
  std::vector<size_t> events;
  for (size_t i = 0; i < reader->recordCount(); ++i)
    if (reader->recordKind(i) == uint16_t(capture::RecordKind::TraceEvent)) events.push_back(i);
  for (size_t i : events)
    if (std::optional<capture::TraceEvent> e = writer.read(i); e && isCaptureEvent(*e)) writer.groupCaptureEvent(i, *e);
  writer.counts.problems.clear();  // the second pass notes the same ones
  for (size_t i : events)
    if (std::optional<capture::TraceEvent> e = writer.read(i)) writer.write(i, *e);
  log.close();
  if (!log) return Status::ioError(fmt::format("{}: write failed", file));

  const ExportCounts& n = writer.counts;
  for (const std::string& p : n.problems) report.notes.push_back({ReportNote::Level::Warning, path + ": " + p});
  report.problemFound = !n.problems.empty();
  if (o.json) {
    report.output = dumpJson({{"path", path},
                              {"file", file},
                              {"pytorch_events", n.pytorch},
                              {"capture_events", n.capture},
                              {"capture_artifacts", n.artifacts},
                              {"capture_events_left_out", n.skipped},
                              {"problems", n.problems}},
                             2) +
                    "\n";
  } else {
    report.output = fmt::format("{}: {} PyTorch events, {} capture events in {} artifacts{}\n", file, n.pytorch,
                                n.capture, n.artifacts, n.skipped ? fmt::format(" ({} left out)", n.skipped) : "");
  }
  return report;
}

}  // namespace dynrep::replay
