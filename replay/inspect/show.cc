// replay-inspect show: one compile in detail (reason, guards, code, graphs and their first-call
// samples, symbolic shapes), as text or JSON.
#include "dynrep/replay/inspect/inspect.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/capture/records.h"
#include "dynrep/replay/query/graph_ir.h"
#include "dynrep/replay/query/guard_list.h"
#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"
#include "render.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// The compile's guard list as capture wrote it: the keys each guard has (a location and the
// user's line only where PyTorch gave them); a note in place of a list that cannot be read.
json guardListJson(const Job& job, const Compile& c) {
  Result<std::vector<GuardListEntry>> list = readGuardList(job, c);
  if (!list.isOk())
    return list.status().code() == Status::Code::NotFound ? json::array()
                                                          : json("(unreadable: " + list.status().message() + ")");
  json out = json::array();
  for (const GuardListEntry& g : *list) {
    json e = {{"kind", g.kind}, {"source", g.source}, {"code", g.code}};
    if (!g.file.empty()) e.update({{"file", g.file}, {"line", g.line}, {"function", g.function}});
    if (!g.userCode.empty()) e["user_code"] = g.userCode;
    if (!g.note.empty()) e["note"] = g.note;
    out.push_back(std::move(e));
  }
  return out;
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
  fmt::print(
      out, "\n{}\n",
      paint(o, "1",
            fmt::format("dropped by PyTorch's precompile ({}, {} re-checked at replay):", c.dropped.size(), risky)));
  for (const DroppedGuard& g : c.dropped) {
    std::string value = g.value.empty() ? "(value not recorded)" : g.value;
    std::string mark = g.risky ? "[risky]" : "[pinned by the torch build]";
    fmt::print(out, "  {:<{}}  {:<{}}  {} {}{}\n", g.kind, kindWidth, g.source, sourceWidth, value, mark,
               g.line.empty() ? "" : "  " + g.line);
  }
}

// "graph IR: N nodes; operators: aten::addmm.default x2, ..." from a graph IR document.
std::string operatorSummary(const std::string& irText) {
  Result<Graph> ir = parseGraph(irText);
  if (!ir.isOk()) return "graph IR: unreadable\n";
  std::string ops;
  for (const auto& [target, n] : ir->operatorCounts())
    ops += fmt::format("{}{}{}", ops.empty() ? "" : ", ", target, n > 1 ? fmt::format(" x{}", n) : "");
  return fmt::format("graph IR: {} nodes, {} operator schemas; operators: {}\n", ir->nodes.size(), ir->schemas.size(),
                     ops);
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
  Result<Graph> ir = parseGraph(irText);
  if (!ir.isOk()) return names;
  for (const Node* node : ir->placeholders()) names.push_back(node->name);
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
  bool backward = field(sample, "pass", "forward") == "backward";
  return fmt::format("sample of {} ({}): {} inputs, {} outputs, {} bytes stored\n{}", field(sample, "graph", "?"),
                     backward ? "first backward: gradients in and out" : "first call",
                     arrayField(sample, "inputs").size(), arrayField(sample, "outputs").size(), stored, lines);
}

// The compile's samples, the first call's inputs named (see namedSample); backward samples
// (gradients, "pass": "backward") as they are.
std::vector<json> samplesOf(const Job& job, const Compile& c) {
  auto isForward = [](const std::string& text) { return text.find("\"pass\": \"backward\"") == std::string::npos; };
  auto ir = c.graphIrs.find("dynamo_output_graph");
  size_t forward = std::count_if(c.samples.begin(), c.samples.end(), isForward);
  Result<std::string> irText = ir == c.graphIrs.end() ? Result<std::string>(std::string()) : job.text(ir->second);
  // Without a readable IR of the graph (or with several forward samples) a sample's inputs go unnamed.
  std::vector<std::string> names =
      forward != 1 || !irText.isOk() || irText->empty() ? std::vector<std::string>{} : placeholderNames(*irText);
  std::vector<json> samples;
  for (const std::string& sample : c.samples)
    samples.push_back(isForward(sample) ? namedSample(sample, names) : parseOrNote(sample));
  return samples;
}

// "file.py:4: if n.numel() == 0:", or "(no user line recorded)".
std::string lineText(const UserFrame& f) {
  if (f.file.empty()) return "(no user line recorded)";
  return fmt::format("{}:{}{}", f.file, f.line, f.code.empty() ? "" : ": " + f.code);
}

// One line per symbol: its final range, then where it came from.
void printSymbols(const Job& job, const Compile& c, std::ostream& out) {
  Result<std::vector<SymbolEntry>> table = readSymbols(job, c);
  if (!table.isOk()) fmt::print(out, "(symbol table unreadable: {})\n", table.status().message());
  if (table.isOk() && table->empty()) fmt::print(out, "(no symbol table recorded)\n");
  for (const SymbolEntry& entry : table.isOk() ? *table : std::vector<SymbolEntry>{}) {
    std::string origin = entry.source;
    for (const SymbolOrigin& o : c.origins) {
      if (o.symbol != entry.symbol) continue;
      if (!o.op.empty()) origin = fmt::format("{} ({}) at {}", o.op, o.phase, lineText(o.userFrame));
      break;
    }
    fmt::print(out, "{:<8} {:<20} {}{}\n", entry.symbol, rangeText(entry), origin,
               entry.replacedBy.empty() ? "" : " = " + entry.replacedBy);
  }
}

// The symbol table as capture wrote it; a note in place of a table that cannot be read.
json symbolTableJson(const Job& job, const Compile& c) {
  Result<std::vector<SymbolEntry>> table = readSymbols(job, c);
  if (!table.isOk()) return "(unreadable: " + table.status().message() + ")";
  json out = json::array();
  for (const SymbolEntry& entry : *table) out.push_back(symbolEntryJson(entry));
  return out;
}

}  // namespace

Result<Report> inspectShow(const std::string& path, const std::string& compileId, ShowSections s,
                           const InspectOptions& o) {
  Result<std::unique_ptr<StoreReader>> r = StoreReader::open(path);
  if (!r.isOk()) return r.status();
  Result<Job> job = Job::load(**r);
  if (!job.isOk()) return job.status();
  const Compile* c = job->find(compileId);
  if (!c) return Status::notFound(fmt::format("{}: no compile {} (replay-inspect ls lists them)", path, compileId));
  std::ostringstream out;
  if (!s.any()) s = ShowSections{true, true, true, true};
  if (o.json) {
    json j = {{"compile_id", c->id.str()},
              {"function", c->function},
              {"file", c->file},
              {"line", c->firstLine},
              {"reason", c->reason},
              {"status", c->status},
              {"guard_count", c->guardCount},
              {"phase_seconds", c->phaseSeconds},
              {"graph_breaks", c->graphBreaks},
              {"not_saved", c->notSaved},
              {"unreadable_events", c->unreadable},
              {"calls", callsJson(*c)},
              {"failure", failureJson(*c)}};
    json causes = json::array();
    for (const RecompileCause& r : c->recompileCauses) causes.push_back(causeJson(r));
    j["recompile_causes"] = causes;
    if (s.guards) {
      j["guards"] = shownText(job->text(c->guardTreeKey));
      json dropped = json::array();
      for (const DroppedGuard& g : c->dropped) dropped.push_back(droppedJson(g));
      j["dropped_guards"] = dropped;
      j["guard_list"] = guardListJson(*job, *c);
    }
    if (s.graph) {
      json graphs = json::object();
      for (const auto& [name, key] : c->graphs) graphs[name] = shownText(job->text(key));
      j["graphs"] = graphs;
      json irs = json::object();
      for (const auto& [name, key] : c->graphIrs) irs[name] = parseOrNote(shownText(job->text(key)));
      j["graph_ir"] = irs;
      j["samples"] = samplesOf(*job, *c);
    }
    if (s.code) {
      json code = json::array();
      for (const capture::CodeObject& co : c->code)
        code.push_back({{"role", co.role},
                        {"name", co.name},
                        {"file", co.filename},
                        {"first_line", co.firstLine},
                        {"fields", parseOrNote(co.fieldsJson)},
                        {"disassembly", shownText(job->text(co.disassemblyKey))}});
      j["code"] = code;
    }
    if (s.shapes) {
      json shapes = json::array();
      for (const ShapeEvent& e : c->shapes) {
        json stack = json::array();
        for (const UserFrame& f : e.userStack) stack.push_back(frameJson(f));
        shapes.push_back({{"event", e.event},
                          {"symbol", e.symbol},
                          {"range", e.valueRange},
                          {"source", e.source},
                          {"expr", e.expr},
                          {"value", e.value},
                          {"user_stack", stack}});
      }
      j["shapes"] = shapes;
      j["symbols"] = symbolTableJson(*job, *c);
      json origins = json::array(), guards = json::array();
      for (const SymbolOrigin& origin : c->origins) origins.push_back(originJson(origin));
      for (const ShapeGuard& g : c->shapeGuards) guards.push_back(shapeGuardJson(g));
      j["symbol_origins"] = origins;
      j["shape_guards"] = guards;
    }
    return Report{dumpJson(j, 2) + "\n", {}, false};
  }
  auto heading = [&](const std::string& h) { fmt::print(out, "\n{}\n", paint(o, "1", h)); };
  fmt::print(out, "compile {}: {} at {}:{}\n", c->id.str(), c->function, c->file, c->firstLine);
  fmt::print(out, "reason:  {}\nstatus:  {}\nguards:  {}\n", c->reason, c->status, c->guardCount);
  fmt::print(out, "calls:   {}\n", c->calls < 0 ? "not counted" : std::to_string(c->calls));
  for (const RecompileCause& r : c->recompileCauses)
    fmt::print(out, "failed:  {} {}{}\n", r.entry, r.guard,
               r.seen.empty() ? "" : fmt::format(" (expected {}, saw {})", r.expected, r.seen));
  if (c->failed && !c->failure.expr.empty())
    fmt::print(out, "failed on: {} at {}\n", c->failure.expr, lineText(c->failure.userFrame));
  if (!c->notSaved.empty()) fmt::print(out, "saved:   no, replay traces it with Dynamo: {}\n", firstLine(c->notSaved));
  if (!c->unreadable.empty()) fmt::print(out, "{}\n", unreadableText(*c));
  if (!c->phaseSeconds.empty()) {
    std::string phases;
    for (const auto& [phase, secs] : c->phaseSeconds)
      phases += fmt::format("{}{} {:.3f}s", phases.empty() ? "" : ", ", phase, secs);
    fmt::print(out, "time:    {}\n", phases);
  }
  for (const std::string& b : c->graphBreaks) fmt::print(out, "graph break: {}\n", firstLine(b));
  if (s.guards) {
    heading("guards");
    out << shownText(job->text(c->guardTreeKey)) << "\n";
    printDropped(*c, o, out);
  }
  if (s.code) {
    for (const capture::CodeObject& co : c->code) {
      heading(fmt::format("code: {} {} ({}:{})", co.role, co.name, co.filename, co.firstLine));
      out << shownText(job->text(co.disassemblyKey));
    }
  }
  if (s.graph) {
    for (const auto& [name, key] : c->graphs) {
      heading("graph: " + name);
      out << shownText(job->text(key)) << "\n";
      if (auto ir = c->graphIrs.find(name); ir != c->graphIrs.end())
        out << operatorSummary(shownText(job->text(ir->second)));
    }
    for (const json& sample : samplesOf(*job, *c)) out << sampleSummary(sample);
  }
  if (s.shapes) {
    heading("symbols (final ranges)");
    printSymbols(*job, *c, out);
    if (!c->shapeGuards.empty()) heading("guards and runtime asserts on symbols");
    for (const ShapeGuard& g : c->shapeGuards)
      fmt::print(out, "{:<16} {:<30} {}\n", g.kind, g.expr, lineText(g.userFrame));
    heading("symbolic shape events");
    for (const ShapeEvent& e : c->shapes) {
      std::string what = e.symbol.empty() ? e.expr : e.symbol;
      fmt::print(out, "{:<30} {:<12} range {:<16} {}{}\n", e.event, what, e.valueRange,
                 e.source.empty() ? "" : "source " + e.source + " ", e.value.empty() ? "" : "value " + e.value);
      for (const UserFrame& f : e.userStack)
        fmt::print(out, "    {}:{} in {}: {}\n", f.file, f.line, f.function, f.code);
    }
  }
  return Report{out.str(), {}, false};
}

}  // namespace dynrep::replay
