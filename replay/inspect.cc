// replay-inspect's reports: info, ls and verify, as aligned text or JSON.
#include "dynrep/replay/inspect.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/capture/records.h"
#include "dynrep/replay/job.h"
#include "dynrep/replay/json_fields.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

std::string paint(const InspectOptions& o, const char* ansi, const std::string& text) {
  return o.color ? fmt::format("\033[{}m{}\033[0m", ansi, text) : text;
}

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

// Prints "error: MESSAGE" on err and returns exit code 1 (a problem in the data).
int reportError(const InspectOptions& o, std::ostream& err, const std::string& message) {
  fmt::print(err, "{}: {}\n", paint(o, "31", "error"), message);
  return 1;
}

// Opens the store or reports why not; the message already names the path.
std::unique_ptr<StoreReader> openOrReport(const std::string& path, const InspectOptions& o, std::ostream& err) {
  Result<std::unique_ptr<StoreReader>> r = StoreReader::open(path);
  if (r.isOk()) return std::move(*r);
  reportError(o, err, r.status().message());
  return nullptr;
}

void noteUnfinished(const StoreReader& r, const InspectOptions& o, std::ostream& err) {
  if (r.state() == StoreState::Finished) return;
  fmt::print(err, "{}: {}: {} store: {}\n", paint(o, "33", "warning"), r.path(), stateName(r.state()),
             r.recoveryNote());
}

std::string baseName(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// The first line of `s` with runs of spaces folded, for one-line table cells.
std::string firstLine(const std::string& s) {
  std::string out;
  for (char ch : s.substr(0, s.find('\n'))) {
    if (ch == ' ' && !out.empty() && out.back() == ' ') continue;
    out += ch;
  }
  return out;
}

json frameJson(const UserFrame& f) {
  return {{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", f.code}};
}

// "(unreadable metadata: artifact x2, compilation_metrics)": the events the report could not read.
std::string unreadableText(const Compile& c) {
  std::string names;
  for (const auto& [name, n] : c.unreadable)
    names += fmt::format("{}{}{}", names.empty() ? "" : ", ", name, n > 1 ? fmt::format(" x{}", n) : "");
  return "(unreadable metadata: " + names + ")";
}

void printCompiles(const std::string& path, const Job& job, const InspectOptions& o, std::ostream& out) {
  size_t recompiles = 0;
  for (const Compile& c : job.compiles()) recompiles += c.id.compile > 0;
  if (o.json) {
    json rows = json::array();
    for (const Compile& c : job.compiles()) {
      json graphs = json::array();
      for (const auto& [name, key] : c.graphs) graphs.push_back(name);
      rows.push_back({{"compile_id", c.id.str()}, {"function", c.function}, {"file", c.file},
                      {"line", c.firstLine}, {"graphs", graphs}, {"guards", c.guardCount},
                      {"status", c.status}, {"reason", c.reason}, {"graph_breaks", c.graphBreaks},
                      {"not_saved", c.notSaved}, {"dropped_guards", c.dropped.size()},
                      {"unreadable_events", c.unreadable}});
    }
    out << dumpJson({{"path", path}, {"frames", job.frameCount()}, {"recompiles", recompiles}, {"compiles", rows}}, 2)
        << "\n";
    return;
  }
  // Columns as wide as their widest cell, so resume functions' long names stay aligned.
  size_t fnWidth = 8, locWidth = 8;
  for (const Compile& c : job.compiles()) {
    fnWidth = std::max(fnWidth, c.function.size());
    locWidth = std::max(locWidth, fmt::format("{}:{}", baseName(c.file), c.firstLine).size());
  }
  fmt::print(out, "{:<9}  {:<{}}  {:<{}}  {:>6}  {:>6}  {:>6}  {:<10}  {}\n", "COMPILE", "FUNCTION", fnWidth, "LOCATION",
             locWidth, "GRAPHS", "GUARDS", "BREAKS", "STATUS", "REASON");
  for (const Compile& c : job.compiles()) {
    std::string status = firstLine(c.status).substr(0, 10);
    status = fmt::format("{:<10}", status);  // pad before colouring, so escapes do not count
    status = paint(o, c.status == "ok" ? "32" : c.status == "restarted" ? "33" : "31", status);
    fmt::print(out, "{:<9}  {:<{}}  {:<{}}  {:>6}  {:>6}  {:>6}  {}  {}\n", c.id.str(), c.function, fnWidth,
               fmt::format("{}:{}", baseName(c.file), c.firstLine), locWidth, c.graphs.size(), c.guardCount,
               c.graphBreaks.size(), status, firstLine(c.reason));
  }
  fmt::print(out, "total: {} frames, {} compiles, {} recompiles\n", job.frameCount(), job.compiles().size(), recompiles);
  for (const Compile& c : job.compiles())
    if (!c.notSaved.empty())
      fmt::print(out, "not saved for replay without Dynamo: {} {}: {}\n", c.id.str(), c.function, firstLine(c.notSaved));
  for (const Compile& c : job.compiles())
    if (!c.unreadable.empty()) fmt::print(out, "{} {}: {}\n", c.id.str(), c.function, unreadableText(c));
}

json droppedJson(const DroppedGuard& g) {
  return {{"kind", g.kind}, {"source", g.source}, {"value", g.value}, {"line", g.line}, {"risky", g.risky}};
}

// The guards PyTorch's precompile left out of the saved frame, after the guard tree: one line
// each, columns as wide as their widest cell.
void printDropped(const Compile& c, const InspectOptions& o, std::ostream& out) {
  if (c.dropped.empty()) return;
  size_t risky = 0, kindWidth = 0, sourceWidth = 0;
  for (const DroppedGuard& g : c.dropped) {
    risky += g.risky;
    kindWidth = std::max(kindWidth, g.kind.size());
    sourceWidth = std::max(sourceWidth, g.source.size());
  }
  fmt::print(out, "\n{}\n", paint(o, "1", fmt::format("dropped by PyTorch's precompile ({}, {} re-checked at replay):",
                                                     c.dropped.size(), risky)));
  for (const DroppedGuard& g : c.dropped) {
    std::string value = g.value.empty() ? "(value not recorded)" : g.value;
    std::string mark = g.risky ? "[risky]" : "[pinned by the torch build]";
    fmt::print(out, "  {:<{}}  {:<{}}  {} {}{}\n", g.kind, kindWidth, g.source, sourceWidth, value, mark,
               g.line.empty() ? "" : "  " + g.line);
  }
}

// "graph IR: N nodes; operators: aten::addmm.default x2, ..." from a graph IR document.
std::string operatorSummary(const std::string& irText) {
  json ir = json::parse(irText, nullptr, false);
  if (!ir.is_object() || !ir.contains("nodes") || !ir["nodes"].is_array()) return "graph IR: unreadable\n";
  std::map<std::string, int> counts;
  for (const json& node : ir["nodes"]) {
    if (field(node, "op", "") == "call_function") counts[field(node, "target", "?")]++;
  }
  std::string ops;
  for (const auto& [target, n] : counts) ops += fmt::format("{}{}{}", ops.empty() ? "" : ", ", target, n > 1 ? fmt::format(" x{}", n) : "");
  size_t schemas = ir.contains("schemas") && ir["schemas"].is_object() ? ir["schemas"].size() : 0;
  return fmt::format("graph IR: {} nodes, {} operator schemas; operators: {}\n", ir["nodes"].size(), schemas, ops);
}

// One sampled value: "float32[8, 16] l_x_", "float32[32, 16] parameter l_self_..._weight_", "3".
std::string sampleValue(const json& v) {
  if (!v.is_object()) return "?";
  std::string text;
  if (v.contains("value")) {
    text = dumpJson(v["value"]);
  } else if (v.contains("unsupported")) {
    text = "<" + field(v, "unsupported", "?") + ">";
  } else {
    std::string shape;
    json dims = v.value("shape", json::array());
    for (const json& d : dims.is_array() ? dims : json::array()) shape += (shape.empty() ? "" : ", ") + dumpJson(d);
    text = fmt::format("{}[{}]", field(v, "dtype", "?"), shape);
    if (field<bool>(v, "parameter", false)) text += " parameter";
  }
  if (!field(v, "name", "").empty()) text += " " + field(v, "name", "");
  if (v.contains("skipped")) text += " (not stored: " + field(v, "skipped", "?") + ")";
  return text;
}

// The Dynamo graph's placeholder names, in the order its compiled function takes its inputs.
std::vector<std::string> placeholderNames(const std::string& irText) {
  std::vector<std::string> names;
  json ir = json::parse(irText, nullptr, false);
  if (!ir.is_object() || !ir.contains("nodes") || !ir["nodes"].is_array()) return names;
  for (const json& node : ir["nodes"]) {
    if (field(node, "op", "") == "placeholder") names.push_back(field(node, "name", ""));
  }
  return names;
}

// A first-call sample with each input named by the Dynamo graph's placeholder, when the counts
// agree (a compile that made more than one graph leaves them unnamed).
json namedSample(const std::string& sampleJson, const std::vector<std::string>& names) {
  json sample = parseOrNote(sampleJson);
  if (!sample.is_object() || !sample.contains("inputs") || !sample["inputs"].is_array()) return sample;
  json& inputs = sample["inputs"];
  if (inputs.size() != names.size()) return sample;
  for (size_t i = 0; i < names.size(); ++i) {
    if (inputs[i].is_object()) inputs[i]["name"] = names[i];
  }
  return sample;
}

// "sample of __compiled_fn_1 (first call): 5 inputs, 1 outputs, 3216 bytes stored" and a line a value.
std::string sampleSummary(const json& sample) {
  if (!sample.is_object()) return "sample: unreadable\n";
  uint64_t stored = 0;
  std::string lines;
  for (const auto& [side, label] : {std::pair{"inputs", "in "}, std::pair{"outputs", "out"}}) {
    const json values = arrayField(sample, side);
    for (size_t i = 0; i < values.size(); ++i) {
      stored += field<uint64_t>(values[i], "bytes", 0);
      lines += fmt::format("    {} {}: {}\n", label, i, sampleValue(values[i]));
    }
  }
  return fmt::format("sample of {} (first call): {} inputs, {} outputs, {} bytes stored\n{}", field(sample, "graph", "?"),
                     arrayField(sample, "inputs").size(), arrayField(sample, "outputs").size(),
                     stored, lines);
}

// The compile's samples, inputs named (see namedSample).
std::vector<json> samplesOf(const Job& job, const Compile& c) {
  auto ir = c.graphIrs.find("dynamo_output_graph");
  std::vector<std::string> names = ir == c.graphIrs.end() || c.samples.size() != 1 ? std::vector<std::string>{}
                                                                                    : placeholderNames(job.text(ir->second));
  std::vector<json> samples;
  for (const std::string& sample : c.samples) samples.push_back(namedSample(sample, names));
  return samples;
}

}  // namespace

int inspectShow(const std::string& path, const std::string& compileId, ShowSections s, const InspectOptions& o,
                std::ostream& out, std::ostream& err) {
  auto r = openOrReport(path, o, err);
  if (!r) return 1;
  Result<Job> job = Job::load(*r);
  if (!job.isOk()) {
    return reportError(o, err, job.status().message());
  }
  const Compile* c = job->find(compileId);
  if (!c) {
    return reportError(o, err, fmt::format("{}: no compile {} (replay-inspect ls lists them)", path, compileId));
  }
  if (!s.any()) s = ShowSections{true, true, true, true};
  if (o.json) {
    json j = {{"compile_id", c->id.str()}, {"function", c->function}, {"file", c->file}, {"line", c->firstLine},
              {"reason", c->reason}, {"status", c->status}, {"guard_count", c->guardCount},
              {"phase_seconds", c->phaseSeconds}, {"graph_breaks", c->graphBreaks}, {"not_saved", c->notSaved},
              {"unreadable_events", c->unreadable}};
    if (s.guards) {
      j["guards"] = job->text(c->guardTreeKey);
      json dropped = json::array();
      for (const DroppedGuard& g : c->dropped) dropped.push_back(droppedJson(g));
      j["dropped_guards"] = dropped;
      j["guard_list"] = c->guardListKey.empty() ? json::array() : parseOrNote(job->text(c->guardListKey));
    }
    if (s.graph) {
      json graphs = json::object();
      for (const auto& [name, key] : c->graphs) graphs[name] = job->text(key);
      j["graphs"] = graphs;
      json irs = json::object();
      for (const auto& [name, key] : c->graphIrs) irs[name] = parseOrNote(job->text(key));
      j["graph_ir"] = irs;
      j["samples"] = samplesOf(*job, *c);
    }
    if (s.code) {
      json code = json::array();
      for (const capture::CodeObject& co : c->code)
        code.push_back({{"role", co.role}, {"name", co.name}, {"file", co.filename}, {"first_line", co.firstLine},
                        {"fields", parseOrNote(co.fieldsJson)},
                        {"disassembly", job->text(co.disassemblyKey)}});
      j["code"] = code;
    }
    if (s.shapes) {
      json shapes = json::array();
      for (const ShapeEvent& e : c->shapes) {
        json stack = json::array();
        for (const UserFrame& f : e.userStack) stack.push_back(frameJson(f));
        shapes.push_back({{"event", e.event}, {"symbol", e.symbol}, {"range", e.valueRange}, {"source", e.source},
                          {"expr", e.expr}, {"value", e.value}, {"user_stack", stack}});
      }
      j["shapes"] = shapes;
    }
    out << dumpJson(j, 2) << "\n";
    return 0;
  }
  auto heading = [&](const std::string& h) { fmt::print(out, "\n{}\n", paint(o, "1", h)); };
  fmt::print(out, "compile {}: {} at {}:{}\n", c->id.str(), c->function, c->file, c->firstLine);
  fmt::print(out, "reason:  {}\nstatus:  {}\nguards:  {}\n", c->reason, c->status, c->guardCount);
  if (!c->notSaved.empty())
    fmt::print(out, "saved:   no, replay traces it with Dynamo: {}\n", firstLine(c->notSaved));
  if (!c->unreadable.empty()) fmt::print(out, "{}\n", unreadableText(*c));
  if (!c->phaseSeconds.empty()) {
    std::string phases;
    for (const auto& [phase, secs] : c->phaseSeconds) phases += fmt::format("{}{} {:.3f}s", phases.empty() ? "" : ", ", phase, secs);
    fmt::print(out, "time:    {}\n", phases);
  }
  for (const std::string& b : c->graphBreaks) fmt::print(out, "graph break: {}\n", firstLine(b));
  if (s.guards) {
    heading("guards");
    out << job->text(c->guardTreeKey) << "\n";
    printDropped(*c, o, out);
  }
  if (s.code) {
    for (const capture::CodeObject& co : c->code) {
      heading(fmt::format("code: {} {} ({}:{})", co.role, co.name, co.filename, co.firstLine));
      out << job->text(co.disassemblyKey);
    }
  }
  if (s.graph) {
    for (const auto& [name, key] : c->graphs) {
      heading("graph: " + name);
      out << job->text(key) << "\n";
      if (auto ir = c->graphIrs.find(name); ir != c->graphIrs.end()) out << operatorSummary(job->text(ir->second));
    }
    for (const json& sample : samplesOf(*job, *c)) out << sampleSummary(sample);
  }
  if (s.shapes) {
    heading("symbolic shapes");
    for (const ShapeEvent& e : c->shapes) {
      std::string what = e.symbol.empty() ? e.expr : e.symbol;
      fmt::print(out, "{:<30} {:<12} range {:<16} {}{}\n", e.event, what, e.valueRange,
                 e.source.empty() ? "" : "source " + e.source + " ", e.value.empty() ? "" : "value " + e.value);
      for (const UserFrame& f : e.userStack)
        fmt::print(out, "    {}:{} in {}: {}\n", f.file, f.line, f.function, f.code);
    }
  }
  return 0;
}

int inspectInfo(const std::string& path, const InspectOptions& o, std::ostream& out, std::ostream& err) {
  auto r = openOrReport(path, o, err);
  if (!r) return 1;
  StoreStats s = r->stats();
  const format::Header& h = r->header();
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
    out << dumpJson(j, 2) << "\n";
    return 0;
  }
  noteUnfinished(*r, o, err);
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
  return 0;
}

int inspectLs(const std::string& path, LsWhat what, const InspectOptions& o, std::ostream& out, std::ostream& err) {
  auto r = openOrReport(path, o, err);
  if (!r) return 1;
  if (!o.json) noteUnfinished(*r, o, err);
  if (what == LsWhat::Default) {
    Result<Job> job = Job::load(*r);
    if (!job.isOk()) {
      return reportError(o, err, job.status().message());
    }
    if (!job->compiles().empty()) {
      printCompiles(path, *job, o, out);
      return 0;
    }
  }
  int status = 0;
  if (what == LsWhat::Blobs) {
    const auto& idx = r->index();
    json rows = json::array();
    if (!o.json) fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6}  {:>6}\n", "KEY", "RAW", "STORED", "RATIO", "CHUNKS");
    uint64_t raw = 0, stored = 0;
    for (const auto& b : idx.blobs) {
      raw += b.rawSize;
      stored += b.storedSize;
      double q = b.storedSize ? double(b.rawSize) / double(b.storedSize) : 1.0;
      if (o.json) {
        rows.push_back({{"key", b.key.hex()}, {"raw_bytes", b.rawSize}, {"stored_bytes", b.storedSize},
                        {"chunks", b.chunkCount}, {"offset", idx.chunks[b.firstChunk].offset}});
      } else {
        fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6.2f}  {:>6}\n", b.key.hex(), b.rawSize, b.storedSize, q, b.chunkCount);
      }
    }
    if (o.json) {
      out << dumpJson(json{{"path", path}, {"state", stateName(r->state())}, {"blobs", rows}}, 2) << "\n";
    } else {
      fmt::print(out, "{:<32}  {:>12}  {:>12}  {:>6.2f}  {:>6}\n", fmt::format("total: {} blobs", idx.blobs.size()),
                 raw, stored, stored ? double(raw) / double(stored) : 1.0, idx.chunks.size());
    }
    return 0;
  }
  json rows = json::array();
  if (!o.json) fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", "#", "OFFSET", "KIND", "BYTES", "DESCRIPTION");
  uint64_t total = 0;
  for (size_t i = 0; i < r->recordCount(); ++i) {
    const format::RecordEntry& e = r->index().records[i];
    Result<std::string_view> p = r->recordPayload(i);
    std::string what = p.isOk() ? capture::describe(e.kind, *p) : "(" + p.status().message() + ")";
    if (!p.isOk()) status = 1;
    total += e.payloadSize;
    if (o.json) {
      rows.push_back({{"index", i}, {"offset", e.offset}, {"kind", capture::kindName(e.kind)},
                      {"kind_id", e.kind}, {"bytes", e.payloadSize}, {"description", what}});
    } else {
      fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", i, e.offset, capture::kindName(e.kind), e.payloadSize, what);
    }
  }
  if (o.json) {
    out << dumpJson(json{{"path", path}, {"state", stateName(r->state())}, {"records", rows}}, 2) << "\n";
  } else {
    fmt::print(out, "{:>5}  {:>12}  {:<10}  {:>9}  {}\n", "", "", "total", total,
               fmt::format("{} records, {} blobs", r->recordCount(), r->index().blobs.size()));
  }
  return status;
}

int inspectVerify(const std::string& path, const InspectOptions& o, std::ostream& out, std::ostream& err) {
  auto r = openOrReport(path, o, err);
  if (!r) {
    if (o.json) out << dumpJson(json{{"path", path}, {"ok", false}, {"problems", json::array()}}, 2) << "\n";
    return 1;
  }
  std::vector<std::string> problems;
  bool sound = r->verify(&problems);
  StoreStats s = r->stats();
  if (o.json) {
    out << dumpJson({{"path", path}, {"ok", sound}, {"state", stateName(r->state())}, {"problems", problems},
                     {"records", r->recordCount()}, {"blobs", s.blobCount}, {"raw_bytes", s.rawBlobBytes}},
                    2)
        << "\n";
    return sound ? 0 : 1;
  }
  for (const std::string& p : problems) reportError(o, err, p);
  if (sound) {
    fmt::print(out, "{}: {} ({} records, {} blobs, {} checked)\n", path, paint(o, "32", "ok"), r->recordCount(),
               s.blobCount, humanBytes(s.rawBlobBytes));
    return 0;
  }
  fmt::print(out, "{}: {} {}\n", path, problems.size(), problems.size() == 1 ? "problem" : "problems");
  return 1;
}

}  // namespace dynrep::replay
