// The why-answer as JSON: for each compile that failed, broke its graph or compiled again, the
// facts (expression, user line, each symbol's origin, final range and guards) and the advice of
// the pattern tables (why/patterns.h); then one summary per function compiled more than once.
// Capture's structured events come first; PyTorch's texts (why/torch_text.h) fill in for stores
// that lack them.
#include "why/model.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"
#include "render.h"
#include "why/patterns.h"
#include "why/torch_text.h"

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

// The first line of `s` as it is (render.h's firstLine also folds spaces, for table cells).
std::string firstLineOf(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string where(const UserFrame& f) {
  return f.file.empty() ? "an unknown line" : fmt::format("{}:{}", baseName(f.file), f.line);
}

// A compile that stopped with an error (not one Dynamo restarted, nor one still running).
bool failedCompile(const Compile& c) {
  if (c.failed) return true;
  return !(c.status.empty() || c.status == "ok" || c.status == "restarted" || c.status == "unfinished");
}

bool isRecompile(const Compile& c) { return c.id.compile > 0 && c.id.attempt == 0; }

// The facts about one compile that every part of its answer reads.
class CompileFacts {
 public:
  CompileFacts(const Job& job, const Compile& c) : c_(c), table_(symbolRows(job, c)) {}

  const Compile& compile() const { return c_; }

  // The symbol's row of the final symbol table, or null.
  const SymbolEntry* tableRow(const std::string& symbol) const {
    for (const SymbolEntry& row : table_)
      if (row.symbol == symbol) return &row;
    return nullptr;
  }

  const SymbolOrigin* origin(const std::string& symbol) const {
    for (const SymbolOrigin& o : c_.origins)
      if (o.symbol == symbol) return &o;
    return nullptr;
  }

  // PyTorch's own create_symbol / create_unbacked_symbol event, for stores without origins.
  const ShapeEvent* created(const std::string& symbol) const {
    for (const ShapeEvent& e : c_.shapes)
      if (e.symbol == symbol && (e.event == "create_symbol" || e.event == "create_unbacked_symbol")) return &e;
    return nullptr;
  }

  bool knows(const std::string& symbol) const { return origin(symbol) || created(symbol) || tableRow(symbol); }

  // The unbacked symbols the compile made, in the order they were made.
  std::vector<std::string> unbackedSymbols() const {
    std::vector<std::string> out;
    auto add = [&](const std::string& s) {
      if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    };
    for (const SymbolOrigin& o : c_.origins)
      if (o.unbacked) add(o.symbol);
    for (const ShapeEvent& e : c_.shapes)
      if (e.event == "create_unbacked_symbol") add(e.symbol);
    for (const SymbolEntry& row : table_)
      if (row.unbacked) add(row.symbol);
    return out;
  }

  // A backed symbol of this compile reads `subject` ("x.size(0)"): automatic dynamic made it one.
  bool madeDynamic(const std::string& subject) const {
    for (const SymbolEntry& row : table_)
      if (!row.unbacked && prettySource(row.source) == subject) return true;
    for (const SymbolOrigin& o : c_.origins)
      if (!o.unbacked && prettySource(o.source) == subject) return true;
    for (const ShapeEvent& e : c_.shapes)
      if (e.event == "create_symbol" && prettySource(e.source) == subject) return true;
    return false;
  }

  // Everything known of a symbol: origin, final range, the guards and asserts on it in order.
  json symbolJson(const std::string& symbol, SymbolFacts* facts) const {
    const SymbolEntry* row = tableRow(symbol);
    json origin = nullptr;
    facts->symbol = symbol;
    facts->unbacked = row ? row->unbacked : symbol.rfind("u", 0) == 0 || symbol.rfind("zuf", 0) == 0;
    if (auto v = c_.symbolValues.find(symbol); v != c_.symbolValues.end()) facts->value = v->second.first;
    if (const SymbolOrigin* o = this->origin(symbol)) {
      origin = originJson(*o);
      facts->origin = o->userFrame;
      facts->unbacked = o->unbacked;
      facts->op = o->op;
      facts->userName = o->unbacked ? userNameFor(o->op, o->userFrame.code) : prettySource(o->source);
    } else if (const ShapeEvent* e = created(symbol)) {
      UserFrame f = e->userStack.empty() ? UserFrame{} : e->userStack.back();
      SymbolOrigin fromPyTorch{
          symbol, e->event == "create_unbacked_symbol", "", "", "", e->source, e->value, f, "pytorch_user_stack"};
      origin = originJson(fromPyTorch);
      if (!e->source.empty()) facts->userName = prettySource(e->source);
    }
    json guards = json::array();
    for (const ShapeGuard& g : guardsOn(symbol)) {
      json guard = shapeGuardJson(g);
      guard["python"] = pythonExpr(g.expr);
      guards.push_back(std::move(guard));
    }
    json rowJson = row ? symbolEntryJson(*row) : json::object();  // the range and hint as capture wrote them
    auto orNull = [&](const char* key) { return rowJson.contains(key) ? rowJson[key] : json(nullptr); };
    return {{"symbol", symbol},       {"unbacked", facts->unbacked},       {"user_name", facts->userName},
            {"origin", origin},       {"range", orNull("range")},          {"replaced_by", row ? row->replacedBy : ""},
            {"hint", orNull("hint")}, {"value_on_run", valueJson(symbol)}, {"guards", guards}};
  }

  // The symbol's real value on the captured run and where it was read, or null.
  json valueJson(const std::string& symbol) const {
    auto v = c_.symbolValues.find(symbol);
    if (v == c_.symbolValues.end()) return nullptr;
    json value = json::parse(v->second.first, nullptr, /*allow_exceptions=*/false);
    return {{"value", value.is_discarded() ? json(v->second.first) : value}, {"from", v->second.second}};
  }

  // The guards and asserts on a symbol, in order: capture's events, else (a store without
  // them) PyTorch's guard_added_fast events.
  std::vector<ShapeGuard> guardsOn(const std::string& symbol) const {
    auto names = [&](const std::vector<std::string>& in) {
      return std::find(in.begin(), in.end(), symbol) != in.end();
    };
    std::vector<ShapeGuard> out;
    for (const ShapeGuard& g : c_.shapeGuards)
      if (names(g.symbols)) out.push_back(g);
    if (!c_.shapeGuards.empty()) return out;
    for (const ShapeEvent& e : c_.shapes) {
      std::vector<std::string> in = symbolsIn(e.expr);
      if (!e.expr.empty() && names(in))
        out.push_back({e.expr, "guard", in, e.userStack.empty() ? UserFrame{} : e.userStack.back()});
    }
    return out;
  }

  // The symbols of a problem as JSON (all, or only `only`), filling the matchers' facts.
  json symbolsJson(const std::vector<std::string>& symbols, const std::string& only, Problem* p) const {
    json out = json::array();
    for (const std::string& s : symbols) {
      SymbolFacts facts;
      json j = symbolJson(s, &facts);
      p->symbols.push_back(facts);
      if (only.empty() || s == only) out.push_back(std::move(j));
    }
    return out;
  }

 private:
  const Compile& c_;
  std::vector<SymbolEntry> table_;  // the final symbol table
};

bool inLibrary(const UserFrame& f, const Compile& c) {
  if (f.file.empty()) return false;
  if (f.file.find("/site-packages/") != std::string::npos || f.file.find("/dist-packages/") != std::string::npos)
    return true;
  return !c.file.empty() && f.file != c.file;
}

std::string valuesText(const Problem& p) {
  std::string out;
  for (const SymbolFacts& s : p.symbols)
    if (!s.value.empty()) out += fmt::format("{}{} was {}", out.empty() ? "" : ", ", s.symbol, s.value);
  return out;
}

std::string problemHeadline(const Problem& p, const Compile& c) {
  std::string at = where(p.frame);
  if (p.kind == "runtime_assert" || p.kind == "runtime_error") {
    std::string values = valuesText(p);
    std::string on = values.empty() ? "" : " (on this run " + values + ")";
    if (p.kind == "runtime_assert")
      return fmt::format("{} failed at run time: {} did not hold{} at {}", c.function, p.expr, on, at);
    return fmt::format("{} failed at run time: {}: {}{}", c.function, p.type, firstLineOf(p.message), on);
  }
  if (p.kind == "constraint_violation" && !p.constraints.empty()) {
    const ConstraintFacts& k = p.constraints.front();
    std::string what = prettySource(k.source);
    if (k.specialized)
      return fmt::format("{} did not compile: {} was marked dynamic, but the code made it the constant {} at {}",
                         c.function, what, k.value, at);
    return fmt::format("{} did not compile: {} was marked dynamic in [{}, {}], but the code allows [{}, {}]",
                       c.function, what, k.askedLow.empty() ? "-inf" : k.askedLow,
                       k.askedHigh.empty() ? "inf" : k.askedHigh, k.allowedLow.empty() ? "-inf" : k.allowedLow,
                       k.allowedHigh.empty() ? "inf" : k.allowedHigh);
  }
  if (p.graphBreak) {
    if (!p.expr.empty())
      return fmt::format("{} broke its graph at {}: PyTorch could not {} {}", c.function, at,
                         p.integer ? "get an integer from" : "decide", p.expr);
    return fmt::format("{} broke its graph at {}: {}", c.function, at, p.gbType.empty() ? "a graph break" : p.gbType);
  }
  if (!p.expr.empty())
    return fmt::format("{} did not compile: PyTorch could not {} {} at {}", c.function,
                       p.integer ? "get an integer from" : "decide", p.expr, at);
  std::string what = p.gbType.empty() ? firstLineOf(p.message) : p.gbType;
  return fmt::format("{} did not compile: {}{} at {}", c.function, p.type.empty() ? "" : p.type + ": ", what, at);
}

json problemJson(const Problem& p, const Compile& c, json symbols, const std::vector<std::string>& chain,
                 const std::vector<std::string>& hints) {
  json advice = json::array();
  for (const Advice& a : adviseProblem(p)) advice.push_back(adviceJson(a));
  json constraints = json::array();
  for (const ConstraintFacts& k : p.constraints) {
    auto bound = [](const std::string& b) { return b.empty() ? json(nullptr) : json(std::stoll(b)); };
    constraints.push_back({{"source", k.source},
                           {"dim", k.dim},
                           {"asked", k.ranged ? json::array({bound(k.askedLow), bound(k.askedHigh)}) : json(nullptr)},
                           {"specialized", k.specialized ? json(k.value) : json(nullptr)},
                           {"symbol", k.symbol},
                           {"allowed", k.allowedLow.empty() && k.allowedHigh.empty()
                                           ? json(nullptr)
                                           : json::array({bound(k.allowedLow), bound(k.allowedHigh)})},
                           {"user_frame", frameJson(k.userFrame)}});
  }
  bool runtime = p.kind == "runtime_assert" || p.kind == "runtime_error";
  return {{"kind", p.graphBreak ? "graph_break"
                   : runtime    ? "runtime_failure"
                                : "failure"},
          {"failure_kind", p.kind},
          {"headline", problemHeadline(p, c)},
          {"type", p.type},
          {"constraints", constraints},
          {"chain", chain},
          {"gb_type", p.gbType},
          {"context", p.context},
          {"expr", p.expr},
          {"expr_python", pythonExpr(p.expr)},
          {"integer", p.integer},
          {"torch_site", p.torchSite},
          {"message", firstLineOf(p.message)},
          {"user_frame", frameJson(p.frame)},
          {"in_library", p.inLibrary},
          {"symbols", std::move(symbols)},
          {"advice", std::move(advice)},
          {"pytorch_hints", hints}};
}

// For a constraint violation without a line of its own: the line of PyTorch's
// symbolic_shape_specialization event on a marked source, or of the first guard on its symbol.
UserFrame specializationFrame(const Compile& c, const std::vector<ConstraintFacts>& constraints) {
  for (const ConstraintFacts& k : constraints) {
    for (const ShapeEvent& e : c.shapes)
      if (e.event == "symbolic_shape_specialization" && e.source.find(k.source) != std::string::npos &&
          !e.userStack.empty())
        return e.userStack.back();
    for (const ShapeGuard& g : c.shapeGuards)
      if (!k.symbol.empty() && std::find(g.symbols.begin(), g.symbols.end(), k.symbol) != g.symbols.end() &&
          !g.userFrame.file.empty())
        return g.userFrame;
  }
  return {};
}

// A failed compile: capture's failure event, else PyTorch's status text.
json failureProblemJson(const CompileFacts& f, const std::string& only) {
  const Compile& c = f.compile();
  Problem p;
  std::vector<std::string> chain = c.failure.chain;
  std::string statusText = c.status;
  std::string statusType = statusText.substr(0, statusText.find(':'));
  std::string statusMessage =
      statusText.find(": ") == std::string::npos ? statusText : statusText.substr(statusText.find(": ") + 2);
  p.type = c.failed && !c.failure.type.empty() ? c.failure.type : statusType;
  p.message = c.failed && !c.failure.message.empty() ? c.failure.message : statusMessage;
  if (chain.empty() && !p.type.empty()) chain.push_back(p.type);
  // The status keeps PyTorch's whole text (the failure event only its first line).
  std::optional<DataDependentText> dd = parseDataDependent(statusText);
  if (!dd) dd = parseDataDependent(p.message);
  GraphBreakText gb = parseGraphBreak(statusText);
  p.gbType = c.failure.gbType.empty() ? gb.gbType : c.failure.gbType;
  p.context = gb.context;
  p.expr = c.failure.expr;
  p.kind = c.failure.kind;
  p.integer = c.failure.integer;
  p.constraints = c.failure.constraints;
  p.call = &c.callSite;
  if (dd) {  // the text fills what an older store's event lacks
    if (p.expr.empty()) p.expr = dd->expr;
    if (c.failure.kind.empty()) p.integer = dd->integer;
    p.torchSite = dd->torchSite;
  }
  p.frame = c.failure.userFrame;
  for (const ConstraintFacts& k : p.constraints)
    if (p.frame.file.empty() && !k.userFrame.file.empty()) p.frame = k.userFrame;
  if (p.frame.file.empty()) p.frame = specializationFrame(c, p.constraints);
  if (p.frame.file.empty() && dd) p.frame = dd->frame;
  if (p.frame.file.empty()) p.frame = gb.frame;
  if (p.frame.file.empty()) p.frame = lastFileFrame(statusText);
  if (p.frame.file.empty() && !c.file.empty()) p.frame = {c.file, c.firstLine, c.function, ""};  // never "unknown"
  p.inLibrary = inLibrary(p.frame, c);
  std::vector<std::string> symbols = c.failure.symbols.empty() ? symbolsIn(p.expr) : c.failure.symbols;
  for (const ConstraintFacts& k : p.constraints)  // its guards say what narrowed the range
    if (!k.symbol.empty() && std::find(symbols.begin(), symbols.end(), k.symbol) == symbols.end())
      symbols.push_back(k.symbol);
  json symbolJson = f.symbolsJson(symbols, only, &p);
  return problemJson(p, c, std::move(symbolJson), chain, gb.hints);
}

json graphBreakJson(const CompileFacts& f, const std::string& text, const CompileFailure* facts,
                    const std::string& only) {
  const Compile& c = f.compile();
  Problem p;
  p.graphBreak = true;
  p.type = "Unsupported";
  GraphBreakText gb = parseGraphBreak(text);
  p.message = gb.explanation.empty() ? text : gb.explanation;
  p.gbType = gb.gbType;
  p.context = gb.context;
  p.frame = gb.frame;
  p.call = &c.callSite;
  std::vector<std::string> symbols;
  if (facts) {  // capture read these from the exception itself
    p.kind = facts->kind;
    if (!facts->gbType.empty()) p.gbType = facts->gbType;
    if (!facts->userFrame.file.empty()) p.frame = facts->userFrame;
  }
  if (facts && !facts->expr.empty()) {
    p.expr = facts->expr;
    p.integer = facts->integer;
    symbols = facts->symbols;
    if (std::optional<DataDependentText> dd = parseDataDependent(text)) p.torchSite = dd->torchSite;
    if (p.gbType.find("data-dependent expression") != std::string::npos) p.gbType.clear();
  } else if (std::optional<DataDependentText> dd = parseDataDependent(text)) {
    // The reason is ShapeEnv's error itself, not a registry type.
    if (p.gbType.find("data-dependent expression") != std::string::npos) {
      p.message = p.gbType;
      p.gbType.clear();
    }
    p.expr = dd->expr;
    p.integer = dd->integer;
    p.torchSite = dd->torchSite;
    symbols = symbolsIn(p.expr);
    if (p.frame.file.empty()) p.frame = dd->frame;
  } else if (p.gbType == "Data-dependent branching" && p.context.find("SymNodeVariable") != std::string::npos) {
    symbols = f.unbackedSymbols();  // PyTorch names no expression here: the branch is on one of these
  }
  if (p.frame.file.empty() && !c.file.empty()) p.frame = {c.file, c.firstLine, c.function, ""};
  p.inLibrary = inLibrary(p.frame, c);
  json symbolJson = f.symbolsJson(symbols, only, &p);
  return problemJson(p, c, std::move(symbolJson), {"Unsupported"}, gb.hints);
}

// A call of the compiled code that raised during capture: the assert real data broke (the first,
// in PyTorch's order), its symbols with their values and origins; or, for another error, the
// exception and the values the compiled code held.
json runtimeFailureJson(const CompileFacts& f, const RuntimeFailure& r, const std::string& only) {
  const Compile& c = f.compile();
  Problem p;
  p.type = r.type;
  p.message = r.message;
  p.call = &c.callSite;
  std::vector<std::string> symbols;
  if (!r.asserts.empty()) {
    const FailedAssert& a = r.asserts.front();
    p.kind = "runtime_assert";
    p.expr = a.expr;
    p.frame = a.userFrame;
    symbols = a.symbols;
  } else {
    p.kind = "runtime_error";
    p.frame = {c.file, c.firstLine, c.function, ""};
    for (const auto& [symbol, value] : r.values) symbols.push_back(symbol);
  }
  p.inLibrary = inLibrary(p.frame, c);
  json symbolJson = f.symbolsJson(symbols, only, &p);
  for (SymbolFacts& s : p.symbols)  // this call's own values first
    if (auto v = r.values.find(s.symbol); v != r.values.end()) s.value = v->second;
  json out = problemJson(p, c, std::move(symbolJson), {r.type}, {});
  out["call"] = r.call;
  out["graph"] = r.graph;
  json values = json::object();
  for (const auto& [symbol, value] : r.values)
    values[symbol] = json::parse(value, nullptr, false).is_discarded() ? json(value) : json::parse(value);
  out["values"] = values;
  return out;
}

// Order of a cause's entry, newest first: "0/3" before "0/1".
int entryNumber(const std::string& entry) {
  size_t slash = entry.find('/');
  try {
    return slash == std::string::npos ? -1 : std::stoi(entry.substr(slash + 1));
  } catch (...) {
    return -1;
  }
}

std::string causeKey(const CauseClass& k) { return k.cause + "|" + k.subject; }

// One recompile: every entry's failed guard classified, and the one that explains it. That is
// the first, newest entry first, whose kind of change this function has not recompiled for
// before (older entries fail on what earlier recompiles already changed).
json recompileJson(const CompileFacts& f, const Compile* first, std::set<std::string>* seenKeys, CauseClass* primaryOut,
                   Advice* adviceOut) {
  const Compile& c = f.compile();
  std::vector<RecompileCause> causes = c.recompileCauses;
  std::string from = "event";
  if (causes.empty()) {
    causes = parseReasons(c.reason);
    from = "reason_text";
  }
  std::stable_sort(causes.begin(), causes.end(), [](const RecompileCause& a, const RecompileCause& b) {
    return entryNumber(a.entry) > entryNumber(b.entry);
  });
  std::vector<CauseClass> classes;
  for (RecompileCause& cause : causes)
    classes.push_back(classifyCause(cause, f.madeDynamic(prettySource(cause.source))));
  size_t primary = 0;
  for (size_t i = 0; i < classes.size(); ++i) {
    if (!seenKeys->count(causeKey(classes[i]))) {
      primary = i;
      break;
    }
  }
  json list = json::array();
  for (size_t i = 0; i < causes.size(); ++i) {
    json cause = causeJson(causes[i]);
    cause.update({{"cause", classes[i].cause},
                  {"subject", classes[i].subject},
                  {"detail", classes[i].detail},
                  {"primary", i == primary}});
    list.push_back(std::move(cause));
  }
  if (causes.empty()) {
    json unknown = causeJson(RecompileCause{});
    unknown.update({{"from", from},
                    {"cause", "unknown"},
                    {"subject", ""},
                    {"description", "not recorded"},
                    {"detail", "no failed guard recorded: " + firstLineOf(c.reason)},
                    {"advice", json::array()},
                    {"causes", list}});
    return unknown;
  }
  RecompileCause main = causes[primary];
  // A 0/1 guard does not say the size seen; the static entry's size mismatch on it does.
  if (main.seen.empty()) {
    for (size_t i = 0; i < causes.size(); ++i)
      if (classes[i].subject == classes[primary].subject && !causes[i].seen.empty()) main.seen = causes[i].seen;
  }
  CauseClass k = classifyCause(main, f.madeDynamic(prettySource(main.source)));
  if (k.subject.empty()) k.subject = classes[primary].subject;
  seenKeys->insert(causeKey(k));
  Advice advice = adviseCause(k, main, c, first);
  json adviceList = json::array();
  if (advice.kind != AdviceKind::None) adviceList.push_back(adviceJson(advice));
  *primaryOut = k;
  *adviceOut = advice;
  json out = causeJson(main);
  out.update({{"from", from},
              {"cause", k.cause},
              {"subject", k.subject},
              {"description", k.description},
              {"detail", k.detail},
              {"advice", adviceList},
              {"causes", list}});
  return out;
}

std::string functionKey(const Compile& c) { return fmt::format("{}:{}:{}", c.file, c.firstLine, c.function); }

// One kind of recompile cause of a function: the first compile's class and advice, and every
// compile it made.
struct CauseTally {
  CauseClass cls;
  Advice advice;
  std::vector<std::string> compileIds;
};

// Per-function tally of what made it compile again.
struct FunctionTally {
  const Compile* first = nullptr;
  int compiles = 0;
  std::vector<std::string> order;  // cause keys, first seen first
  std::map<std::string, CauseTally> causes;
};

json functionJson(const FunctionTally& t) {
  json causes = json::array();
  std::string summary = fmt::format("{} compiles of {}", t.compiles, t.first->function);
  std::string parts;
  for (const std::string& key : t.order) {
    const auto& [k, a, ids] = t.causes.at(key);
    parts += fmt::format("{}{} ({})", parts.empty() ? "" : "; ", k.description, ids.size());
    causes.push_back({{"cause", k.cause},
                      {"subject", k.subject},
                      {"description", k.description},
                      {"count", ids.size()},
                      {"compile_ids", ids},
                      {"advice", a.kind == AdviceKind::None ? json(nullptr) : adviceJson(a)}});
  }
  if (!parts.empty()) summary += ": " + parts;
  return {{"function", t.first->function}, {"file", t.first->file}, {"line", t.first->firstLine},
          {"compiles", t.compiles},        {"summary", summary},    {"causes", causes}};
}

std::string compileHeadline(const Compile& c, const json& entry) {
  if (!entry["problems"].empty()) return entry["problems"][0]["headline"];
  if (entry.contains("recompile"))
    return fmt::format("{} compiled again: {}", c.function, entry["recompile"].value("detail", ""));
  return fmt::format("{} compiled with no failure, graph break or recompile", c.function);
}

}  // namespace

nlohmann::json explainJob(const Job& job, const std::string& compileId, const std::string& symbol) {
  json compiles = json::array();
  std::map<std::string, FunctionTally> tallies;
  std::vector<std::string> functionOrder;
  std::map<std::string, std::set<std::string>> seenKeys;  // per function: causes recompiled for so far
  for (const Compile& c : job.compiles()) {
    std::string fnKey = functionKey(c);
    FunctionTally& tally = tallies[fnKey];
    if (!tally.first) {
      tally.first = &c;
      functionOrder.push_back(fnKey);
    }
    if (c.id.attempt == 0) ++tally.compiles;
    CompileFacts facts(job, c);
    json entry = {{"compile_id", c.id.str()}, {"function", c.function},          {"file", c.file},
                  {"line", c.firstLine},      {"status", firstLineOf(c.status)}, {"calls", callsJson(c)}};
    json problems = json::array();
    for (const RuntimeFailure& r : c.runtimeFailures) problems.push_back(runtimeFailureJson(facts, r, symbol));
    if (failedCompile(c)) problems.push_back(failureProblemJson(facts, symbol));
    for (size_t i = 0; i < c.graphBreaks.size(); ++i)
      problems.push_back(graphBreakJson(facts, c.graphBreaks[i],
                                        i < c.graphBreakFacts.size() ? &c.graphBreakFacts[i] : nullptr, symbol));
    entry["problems"] = problems;
    bool recompiled = isRecompile(c) && c.reason != "first compile";
    if (recompiled) {
      CauseClass k;
      Advice advice;
      entry["recompile"] = recompileJson(facts, tally.first, &seenKeys[fnKey], &k, &advice);
      std::string key = causeKey(k);
      auto [it, isNew] = tally.causes.try_emplace(key, CauseTally{k, advice, {}});
      if (isNew) tally.order.push_back(key);
      it->second.compileIds.push_back(c.id.str());
    }
    bool chosen = compileId.empty() ? (!problems.empty() || recompiled) : c.id.str() == compileId;
    if (!symbol.empty()) {
      if (!facts.knows(symbol)) continue;
      SymbolFacts unused;
      entry["symbols"] = json::array({facts.symbolJson(symbol, &unused)});
      chosen = compileId.empty() || c.id.str() == compileId;
    }
    if (!chosen) continue;
    entry["headline"] = compileHeadline(c, entry);
    compiles.push_back(std::move(entry));
  }
  json functions = json::array();
  const Compile* only = compileId.empty() ? nullptr : job.find(compileId);
  for (const std::string& key : functionOrder) {
    const FunctionTally& t = tallies[key];
    if (t.compiles < 2) continue;
    if (!compileId.empty() && (!only || functionKey(*only) != key)) continue;
    functions.push_back(functionJson(t));
  }
  return {{"compiles", compiles}, {"functions", symbol.empty() ? functions : json::array()}};
}

}  // namespace dynrep::replay
