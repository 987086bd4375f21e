// The trace events replay/query reads, one handler each: PyTorch's own (graphs, guards,
// metrics, symbolic shapes, artifacts) and capture's (dynrep/capture/events.h).
#include "event_handlers.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "dynrep/capture/events.h"
#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// PyTorch interns file names in "str" events and refers to them by index in stacks.
std::vector<UserFrame> userStack(const json& stack, const std::map<int64_t, std::string>& files) {
  std::vector<UserFrame> out;
  if (!stack.is_array()) return out;
  for (const json& f : stack) {
    if (!f.is_object()) continue;
    UserFrame u;
    u.line = field<int>(f, "line", 0);
    u.function = field(f, "name", "");
    u.code = field(f, "loc", "");
    if (auto it = f.find("filename"); it != f.end()) {
      if (it->is_number_integer()) {
        auto name = files.find(it->get<int64_t>());
        u.file = name == files.end() ? "<file " + dumpJson(*it) + ">" : name->second;
      } else if (it->is_string()) {
        u.file = it->get<std::string>();
      }
    }
    out.push_back(std::move(u));
  }
  return out;
}

// Recompile reasons come as one string, or as a JSON list with one entry per cache entry
// whose guards failed, newest first.
std::string reasonsText(const std::string& payload) {
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return payload;
  std::string out;
  for (const json& r : j) out += (out.empty() ? "" : "\n") + (r.is_string() ? r.get<std::string>() : dumpJson(r));
  return out;
}

// PyTorch's precompile bypass payload: {"_reason": "...", ...}.
std::string bypassReason(const std::string& payload) {
  return field(json::parse(payload, nullptr, /*allow_exceptions=*/false), "_reason", "(no reason recorded)");
}

// --- PyTorch's events ---

// The frame's location until compilation_metrics gives the authoritative one.
void onDynamoStart(const Event& e, Compile& c) {
  if (!c.function.empty()) return;
  std::vector<UserFrame> stack = userStack(e.md.array("stack"), e.files);
  if (stack.empty()) return;
  c.function = stack.back().function;
  c.file = stack.back().file;
  c.firstLine = stack.back().line;
}

void onCompilationMetrics(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  c.function = md.text("co_name");
  c.file = md.text("co_filename");
  c.firstLine = md.get<int>("co_firstlineno", c.firstLine);
  c.guardCount = md.get<uint64_t>("guard_count", 0);
  std::string failType = md.text("fail_type");
  c.status = failType.empty() ? "ok" : failType + ": " + md.text("fail_reason");
  for (const auto& [key, value] : md.raw().items()) {
    if (value.is_number() && key.size() > 7 && key.compare(key.size() - 7, 7, "_time_s") == 0)
      c.phaseSeconds[key.substr(0, key.size() - 7)] = value.get<double>();
  }
}

void onGuardTree(const Event& e, Compile& c) { c.guardTreeKey = e.record.payloadKey; }

// Dynamo, AOT and Inductor graphs: the payload is the graph's code, kept under the event's name.
void onGraph(const Event& e, Compile& c) { c.graphs[e.record.name] = e.record.payloadKey; }

void onDynamoError(const Event& e, Compile& c) { c.status = "error: " + e.payload(); }

// A symbol created, a guard on symbols added, a specialization.
void onShapeEvent(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  ShapeEvent s;
  s.event = e.record.name;
  s.symbol = md.text("symbol");
  s.valueRange = md.text("vr");
  s.source = md.text("source");
  s.expr = md.text("expr");
  s.value = md.text(md.has("val") ? "val" : "value");
  s.userStack = userStack(md.array("user_stack"), e.files);
  c.shapes.push_back(std::move(s));
}

// PyTorch's "artifact" events carry their own name in the metadata; only these three are read.
void onArtifact(const Event& e, Compile& c) {
  std::string name = e.md.text("name");
  if (name == "precompile_cache_bypass") {
    if (c.notSaved.empty()) c.notSaved = bypassReason(e.payload());
  } else if (name == "recompile_reasons") {
    c.reason = reasonsText(e.payload());
  } else if (name == "dynamo_graph_break_reason") {
    c.graphBreaks.push_back(e.payload());
  }
}

// --- capture's events ---

void onGuardList(const Event& e, Compile& c) { c.guardListKey = e.record.payloadKey; }

void onGraphIr(const Event& e, Compile& c) {
  if (e.md.object()) c.graphIrs[e.md.text("graph")] = e.record.payloadKey;
}

void onCoreAtenGraphIr(const Event& e, Compile& c) {
  if (!e.md.object()) return;
  if (e.record.payloadKey.empty())
    c.coreAtenErrors[e.md.text("graph")] = e.md.text("error");
  else
    c.coreAtenIrs[e.md.text("graph")] = e.record.payloadKey;
}

void onSymbols(const Event& e, Compile& c) { c.symbolsKey = e.record.payloadKey; }

void onSample(const Event& e, Compile& c) {
  if (e.md.object()) c.samples.push_back(e.record.metadataJson);
}

void onDroppedGuard(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  c.dropped.push_back({md.get<std::string>("kind", "?"), md.get<std::string>("source", "?"),
                       md.get<std::string>("value", ""), md.get<std::string>("line", ""), md.get<bool>("risky", true)});
}

// capture's user frames: {file, line, function, code}, or null when none is known.
UserFrame captureFrame(const json& f) {
  return {field(f, "file", ""), field<int>(f, "line", 0), field(f, "function", ""), field(f, "code", "")};
}

std::vector<std::string> texts(const json& list) {
  std::vector<std::string> out;
  for (const json& v : list)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

void onSymbolOrigin(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  SymbolOrigin o;
  o.symbol = md.text("symbol");
  o.unbacked = md.get<bool>("unbacked", false);
  o.phase = md.text("phase");
  o.op = md.text("op");
  o.node = md.text("node");
  o.source = md.text("source");
  o.value = md.text("value");
  o.userFrame = captureFrame(md.raw().value("user_frame", json()));
  o.attributed = md.text("attributed");
  c.origins.push_back(std::move(o));
}

void onShapeGuard(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  c.shapeGuards.push_back({md.text("expr"), md.text("kind"), texts(md.array("symbols")),
                           captureFrame(md.raw().value("user_frame", json()))});
}

// A JSON number or string as text; "" for null and anything else.
std::string scalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return "";
}

ConstraintFacts constraintFacts(const json& j) {
  ConstraintFacts k;
  k.source = field(j, "source", "");
  k.tensor = field(j, "tensor", "");
  k.dim = field<int>(j, "dim", 0);
  const json asked = j.value("asked", json());
  if (asked.is_array() && asked.size() == 2) {
    k.ranged = true;
    k.askedLow = scalarText(asked[0]);
    k.askedHigh = scalarText(asked[1]);
  }
  const json specialized = j.value("specialized", json());
  if (specialized.is_number_integer()) {
    k.specialized = true;
    k.value = specialized.get<int64_t>();
  }
  k.symbol = field(j, "symbol", "");
  const json allowed = j.value("allowed", json());
  if (allowed.is_array() && allowed.size() == 2) {
    k.allowedLow = scalarText(allowed[0]);
    k.allowedHigh = scalarText(allowed[1]);
  }
  k.userFrame = captureFrame(j.value("user_frame", json()));
  return k;
}

CompileFailure failureFacts(Metadata& md) {
  CompileFailure f{md.text("type"),
                   texts(md.array("chain")),
                   md.text("kind"),
                   md.text("expr"),
                   texts(md.array("symbols")),
                   md.get<bool>("integer", false),
                   md.text("gb_type"),
                   captureFrame(md.raw().value("user_frame", json())),
                   md.text("message"),
                   {}};
  for (const json& k : md.array("constraints"))
    if (k.is_object()) f.constraints.push_back(constraintFacts(k));
  return f;
}

void onCompileFailure(const Event& e, Compile& c) {
  if (!e.md.object()) return;
  c.failed = true;
  c.failure = failureFacts(e.md);
}

void onGraphBreak(const Event& e, Compile& c) {
  if (e.md.object()) c.graphBreakFacts.push_back(failureFacts(e.md));
}

std::map<std::string, std::string> valueMap(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::string v = scalarText(it.value()); !v.empty()) out[it.key()] = v;
  return out;
}

void onRuntimeFailure(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  RuntimeFailure f{md.text("graph"),
                   md.get<int64_t>("call", 0),
                   md.text("type"),
                   md.text("message"),
                   valueMap(md.raw().value("values", json())),
                   {}};
  for (const json& a : md.array("asserts"))
    f.asserts.push_back(
        {field(a, "expr", ""), texts(a.value("symbols", json::array())), captureFrame(a.value("user_frame", json()))});
  for (const auto& [symbol, value] : f.values) c.symbolValues.try_emplace(symbol, value, "failure");
  c.runtimeFailures.push_back(std::move(f));
}

void onSymbolValues(const Event& e, Compile& c) {
  std::string from = e.md.text("from");
  for (const auto& [symbol, value] : valueMap(e.md.raw().value("values", json())))
    c.symbolValues.try_emplace(symbol, value, from);
}

void onCallSite(const Event& e, Compile& c) {
  Metadata& md = e.md;
  if (!md.object()) return;
  c.callSite.userFrame = captureFrame(md.raw().value("user_frame", json()));
  const json args = md.raw().value("arguments", json());
  if (args.is_object())
    for (auto it = args.begin(); it != args.end(); ++it)
      if (it.value().is_string()) c.callSite.arguments[it.key()] = it.value().get<std::string>();
}

void onRecompile(const Event& e, Compile& c) {
  for (const json& r : e.md.array("causes"))
    c.recompileCauses.push_back({field(r, "entry", ""), field(r, "guard", ""), field(r, "source", ""),
                                 field(r, "expected", ""), field(r, "seen", ""), field(r, "text", ""),
                                 field(r, "from", "")});
}

void onHits(const Event& e, Compile& c) { c.calls = e.md.get<int64_t>("calls", -1); }

void onGeneration(const Event& e, Compile& c) { c.generation = e.md.get<int64_t>("generation", 0); }

// Even unreadable, the event says the frame was not saved.
void onNotPackaged(const Event& e, Compile& c) { c.notSaved = e.md.get<std::string>("reason", "(no reason recorded)"); }

}  // namespace

EventHandler handlerFor(std::string_view eventName) {
  static const std::map<std::string_view, EventHandler> kHandlers = {
      {"dynamo_start", onDynamoStart},
      {"compilation_metrics", onCompilationMetrics},
      {"dynamo_cpp_guards_str", onGuardTree},
      {"dynamo_error", onDynamoError},
      {"artifact", onArtifact},
      {"dynamo_output_graph", onGraph},
      {"aot_forward_graph", onGraph},
      {"aot_backward_graph", onGraph},
      {"aot_inference_graph", onGraph},
      {"aot_joint_graph", onGraph},
      {"inductor_output_code", onGraph},
      {"inductor_post_grad_graph", onGraph},
      {"inductor_pre_grad_graph", onGraph},
      {"create_symbol", onShapeEvent},
      {"create_unbacked_symbol", onShapeEvent},
      {"guard_added_fast", onShapeEvent},
      {"guard_added", onShapeEvent},
      {"symbolic_shape_specialization", onShapeEvent},
      {"propagate_real_tensors", onShapeEvent},
      {capture::events::kGuards, onGuardList},
      {capture::events::kGraphIr, onGraphIr},
      {capture::events::kCoreAtenGraphIr, onCoreAtenGraphIr},
      {capture::events::kSample, onSample},
      {capture::events::kSymbols, onSymbols},
      {capture::events::kDroppedGuard, onDroppedGuard},
      {capture::events::kNotPackaged, onNotPackaged},
      {capture::events::kSymbolOrigin, onSymbolOrigin},
      {capture::events::kShapeGuard, onShapeGuard},
      {capture::events::kCompileFailure, onCompileFailure},
      {capture::events::kRecompile, onRecompile},
      {capture::events::kHits, onHits},
      {capture::events::kGeneration, onGeneration},
      {capture::events::kGraphBreak, onGraphBreak},
      {capture::events::kRuntimeFailure, onRuntimeFailure},
      {capture::events::kSymbolValues, onSymbolValues},
      {capture::events::kCallSite, onCallSite},
  };
  auto it = kHandlers.find(eventName);
  return it == kHandlers.end() ? nullptr : it->second;
}

}  // namespace dynrep::replay
