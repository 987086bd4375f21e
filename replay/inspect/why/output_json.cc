// The why-answer (model.h) as `why --json` prints it. Capture's records keep the JSON shape
// `show --json` gives them (provenance.h); the answer's own facts are added beside them.
#include <utility>

#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"
#include "why/output.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

json applyJson(const EditAction& e) {
  if (e.action.empty()) return nullptr;
  json out = {{"action", e.action}, {"code", e.code}};
  if (!e.file.empty()) out.update({{"file", e.file}, {"line", e.line}});
  if (e.action == "replace_mark") out.update({{"name", e.name}, {"dim", e.dim}});
  return out;
}

json adviceJson(const Advice& a) {
  return {{"kind", adviceKindId(a.kind)},
          {"edit", a.edit},
          {"line", frameJson(a.line)},
          {"why", a.why},
          {"apply", applyJson(a.apply)}};
}

json adviceListJson(const std::vector<Advice>& advice) {
  json out = json::array();
  for (const Advice& a : advice) out.push_back(adviceJson(a));
  return out;
}

json symbolJson(const SymbolAnswer& s) {
  json guards = json::array();
  for (const SymbolGuard& g : s.guards) {
    json guard = shapeGuardJson(g.guard);
    guard["python"] = g.python;
    guards.push_back(std::move(guard));
  }
  json range = s.range ? json::array({numberJson(s.range->first), numberJson(s.range->second)}) : json(nullptr);
  json value =
      s.valueOnRun ? json{{"value", recordedValue(s.valueOnRun->value)}, {"from", s.valueOnRun->from}} : json(nullptr);
  return {{"symbol", s.symbol},
          {"unbacked", s.unbacked},
          {"user_name", s.userName},
          {"origin", s.origin ? originJson(*s.origin) : json(nullptr)},
          {"range", range},
          {"replaced_by", s.replacedBy},
          {"hint", s.hint ? numberJson(*s.hint) : json(nullptr)},
          {"value_on_run", value},
          {"guards", guards}};
}

json symbolsJson(const std::vector<SymbolAnswer>& symbols) {
  json out = json::array();
  for (const SymbolAnswer& s : symbols) out.push_back(symbolJson(s));
  return out;
}

json boundsJson(const std::optional<Bounds>& b) {
  if (!b) return nullptr;
  auto bound = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  return json::array({bound(b->first), bound(b->second)});
}

json constraintJson(const ConstraintAnswer& k) {
  return {{"source", k.source},
          {"dim", k.dim},
          {"asked", boundsJson(k.asked)},
          {"specialized", k.specialized ? json(*k.specialized) : json(nullptr)},
          {"symbol", k.symbol},
          {"allowed", boundsJson(k.allowed)},
          {"user_frame", frameJson(k.userFrame)}};
}

const char* problemKindId(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::Failure: return "failure";
    case ProblemKind::GraphBreak: return "graph_break";
    case ProblemKind::RuntimeFailure: return "runtime_failure";
  }
  return "";  // not reached: every kind is handled above
}

json problemJson(const ProblemAnswer& p) {
  json constraints = json::array();
  for (const ConstraintAnswer& k : p.constraints) constraints.push_back(constraintJson(k));
  json out = {{"kind", problemKindId(p.kind)},
              {"failure_kind", p.failureKind},
              {"headline", p.headline},
              {"type", p.type},
              {"constraints", constraints},
              {"chain", p.chain},
              {"gb_type", p.gbType},
              {"context", p.context},
              {"expr", p.expr},
              {"expr_python", p.exprPython},
              {"integer", p.integer},
              {"torch_site", p.torchSite},
              {"message", p.message},
              {"user_frame", frameJson(p.userFrame)},
              {"in_library", p.inLibrary},
              {"symbols", symbolsJson(p.symbols)},
              {"advice", adviceListJson(p.advice)},
              {"pytorch_hints", p.pytorchHints}};
  if (!p.runtime) return out;
  json values = json::object();
  for (const auto& [symbol, value] : p.runtime->values) values[symbol] = recordedValue(value);
  out.update({{"call", p.runtime->call}, {"graph", p.runtime->graph}, {"values", values}});
  return out;
}

const char* causeSourceId(CauseSource from) {
  switch (from) {
    case CauseSource::Event: return "event";
    case CauseSource::ReasonText: return "reason_text";
  }
  return "";  // not reached: every source is handled above
}

json recompileJson(const RecompileAnswer& r) {
  json causes = json::array();
  for (const CauseAnswer& c : r.causes) {
    json cause = causeJson(c.cause);
    cause.update(
        {{"cause", c.cls.cause}, {"subject", c.cls.subject}, {"detail", c.cls.detail}, {"primary", c.primary}});
    causes.push_back(std::move(cause));
  }
  json out = causeJson(r.main);
  out.update({{"from", causeSourceId(r.from)},
              {"cause", r.cls.cause},
              {"subject", r.cls.subject},
              {"description", r.cls.description},
              {"detail", r.cls.detail},
              {"advice", r.advice ? json::array({adviceJson(*r.advice)}) : json::array()},
              {"causes", causes}});
  return out;
}

json compileJson(const CompileAnswer& c) {
  json problems = json::array();
  for (const ProblemAnswer& p : c.problems) problems.push_back(problemJson(p));
  json out = {{"compile_id", c.compileId},
              {"function", c.function},
              {"file", c.file},
              {"line", c.line},
              {"status", c.status},
              {"calls", c.calls ? json(*c.calls) : json(nullptr)},
              {"problems", problems},
              {"headline", c.headline}};
  if (c.recompile) out["recompile"] = recompileJson(*c.recompile);
  if (c.symbol) out["symbols"] = json::array({symbolJson(*c.symbol)});
  return out;
}

json functionJson(const FunctionSummary& f) {
  json causes = json::array();
  for (const CauseSummary& c : f.causes)
    causes.push_back({{"cause", c.cls.cause},
                      {"subject", c.cls.subject},
                      {"description", c.cls.description},
                      {"count", c.compileIds.size()},
                      {"compile_ids", c.compileIds},
                      {"advice", c.advice ? adviceJson(*c.advice) : json(nullptr)}});
  return {{"function", f.function}, {"file", f.file},       {"line", f.line},
          {"compiles", f.compiles}, {"summary", f.summary}, {"causes", causes}};
}

}  // namespace

nlohmann::json whyJson(const WhyAnswer& answer) {
  json compiles = json::array();
  for (const CompileAnswer& c : answer.compiles) compiles.push_back(compileJson(c));
  json functions = json::array();
  for (const FunctionSummary& f : answer.functions) functions.push_back(functionJson(f));
  return {{"compiles", compiles}, {"functions", functions}};
}

}  // namespace dynrep::replay
