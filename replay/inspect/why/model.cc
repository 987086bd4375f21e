// The why-answer (model.h): for each compile that failed, broke its graph or compiled again, the
// facts (expression, user line, each symbol's origin, final range and guards) and the advice of
// the pattern tables (why/patterns.h); then one summary per function compiled more than once.
// Capture's structured events come first; PyTorch's texts (why/torch_text.h) fill in for stores
// that lack them.
#include "why/model.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "provenance.h"
#include "render.h"
#include "why/patterns.h"
#include "why/torch_text.h"

namespace dynrep::replay {

namespace {

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
  SymbolAnswer symbolAnswer(const std::string& symbol, SymbolFacts* facts) const {
    const SymbolEntry* row = tableRow(symbol);
    SymbolAnswer out;
    out.symbol = facts->symbol = symbol;
    facts->unbacked = row ? row->unbacked : symbol.rfind("u", 0) == 0 || symbol.rfind("zuf", 0) == 0;
    if (auto v = c_.symbolValues.find(symbol); v != c_.symbolValues.end()) {
      facts->value = v->second.first;
      out.valueOnRun = RunValue{v->second.first, v->second.second};
    }
    if (const SymbolOrigin* o = this->origin(symbol)) {
      out.origin = *o;
      facts->origin = o->userFrame;
      facts->unbacked = o->unbacked;
      facts->op = o->op;
      facts->userName = o->unbacked ? userNameFor(o->op, o->userFrame.code) : prettySource(o->source);
    } else if (const ShapeEvent* e = created(symbol)) {
      UserFrame f = e->userStack.empty() ? UserFrame{} : e->userStack.back();
      out.origin = SymbolOrigin{
          symbol, e->event == "create_unbacked_symbol", "", "", "", e->source, e->value, f, "pytorch_user_stack"};
      if (!e->source.empty()) facts->userName = prettySource(e->source);
    }
    for (const ShapeGuard& g : guardsOn(symbol)) out.guards.push_back({g, pythonExpr(g.expr)});
    if (row) {  // the range and hint as capture wrote them
      out.range = row->range;
      out.hint = row->hint;
      out.replacedBy = row->replacedBy;
    }
    out.unbacked = facts->unbacked;
    out.userName = facts->userName;
    return out;
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

  // The symbols of a problem (all, or only `only`), filling the matchers' facts.
  std::vector<SymbolAnswer> symbolAnswers(const std::vector<std::string>& symbols, const std::string& only,
                                          Problem* p) const {
    std::vector<SymbolAnswer> out;
    for (const std::string& s : symbols) {
      SymbolFacts facts;
      SymbolAnswer answer = symbolAnswer(s, &facts);
      p->symbols.push_back(facts);
      if (only.empty() || s == only) out.push_back(std::move(answer));
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

// "12" as 12, "" (unbounded) as none.
std::optional<int64_t> bound(const std::string& b) {
  return b.empty() ? std::nullopt : std::optional<int64_t>(std::stoll(b));
}

ConstraintAnswer constraintAnswer(const ConstraintFacts& k) {
  ConstraintAnswer out{k.source, k.dim, std::nullopt, std::nullopt, k.symbol, std::nullopt, k.userFrame};
  if (k.ranged) out.asked = Bounds{bound(k.askedLow), bound(k.askedHigh)};
  if (k.specialized) out.specialized = k.value;
  if (!k.allowedLow.empty() || !k.allowedHigh.empty()) out.allowed = Bounds{bound(k.allowedLow), bound(k.allowedHigh)};
  return out;
}

ProblemAnswer problemAnswer(const Problem& p, const Compile& c, std::vector<SymbolAnswer> symbols,
                            std::vector<std::string> chain, std::vector<std::string> hints) {
  ProblemAnswer out;
  out.advice = adviseProblem(p);
  for (const ConstraintFacts& k : p.constraints) out.constraints.push_back(constraintAnswer(k));
  bool runtime = p.kind == "runtime_assert" || p.kind == "runtime_error";
  out.kind = p.graphBreak ? ProblemKind::GraphBreak : runtime ? ProblemKind::RuntimeFailure : ProblemKind::Failure;
  out.failureKind = p.kind;
  out.headline = problemHeadline(p, c);
  out.type = p.type;
  out.chain = std::move(chain);
  out.gbType = p.gbType;
  out.context = p.context;
  out.expr = p.expr;
  out.exprPython = pythonExpr(p.expr);
  out.integer = p.integer;
  out.torchSite = p.torchSite;
  out.message = firstLineOf(p.message);
  out.userFrame = p.frame;
  out.inLibrary = p.inLibrary;
  out.symbols = std::move(symbols);
  out.pytorchHints = std::move(hints);
  return out;
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
ProblemAnswer failureProblem(const CompileFacts& f, const std::string& only) {
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
  std::vector<SymbolAnswer> answers = f.symbolAnswers(symbols, only, &p);
  return problemAnswer(p, c, std::move(answers), std::move(chain), std::move(gb.hints));
}

ProblemAnswer graphBreak(const CompileFacts& f, const std::string& text, const CompileFailure* facts,
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
  std::vector<SymbolAnswer> answers = f.symbolAnswers(symbols, only, &p);
  return problemAnswer(p, c, std::move(answers), {"Unsupported"}, std::move(gb.hints));
}

// A call of the compiled code that raised during capture: the assert real data broke (the first,
// in PyTorch's order), its symbols with their values and origins; or, for another error, the
// exception and the values the compiled code held.
ProblemAnswer runtimeFailure(const CompileFacts& f, const RuntimeFailure& r, const std::string& only) {
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
  std::vector<SymbolAnswer> answers = f.symbolAnswers(symbols, only, &p);
  for (SymbolFacts& s : p.symbols)  // this call's own values first
    if (auto v = r.values.find(s.symbol); v != r.values.end()) s.value = v->second;
  ProblemAnswer out = problemAnswer(p, c, std::move(answers), {r.type}, {});
  out.runtime = RuntimeCall{r.call, r.graph, r.values};
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
RecompileAnswer recompileAnswer(const CompileFacts& f, const Compile* first, std::set<std::string>* seenKeys) {
  const Compile& c = f.compile();
  RecompileAnswer out;
  std::vector<RecompileCause> causes = c.recompileCauses;
  if (causes.empty()) {
    causes = parseReasons(c.reason);
    out.from = CauseSource::ReasonText;
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
  for (size_t i = 0; i < causes.size(); ++i) out.causes.push_back({causes[i], classes[i], i == primary});
  if (causes.empty()) {
    out.cls = {"unknown", "", "not recorded", "no failed guard recorded: " + firstLineOf(c.reason)};
    return out;
  }
  out.main = causes[primary];
  // A 0/1 guard does not say the size seen; the static entry's size mismatch on it does.
  if (out.main.seen.empty()) {
    for (size_t i = 0; i < causes.size(); ++i)
      if (classes[i].subject == classes[primary].subject && !causes[i].seen.empty()) out.main.seen = causes[i].seen;
  }
  out.cls = classifyCause(out.main, f.madeDynamic(prettySource(out.main.source)));
  if (out.cls.subject.empty()) out.cls.subject = classes[primary].subject;
  seenKeys->insert(causeKey(out.cls));
  Advice advice = adviseCause(out.cls, out.main, c, first);
  if (advice.kind != AdviceKind::None) out.advice = advice;
  return out;
}

std::string functionKey(const Compile& c) { return fmt::format("{}:{}:{}", c.file, c.firstLine, c.function); }

// One kind of recompile cause of a function: the first compile's class and advice, and every
// compile it made.
struct CauseTally {
  CauseClass cls;
  std::optional<Advice> advice;
  std::vector<std::string> compileIds;
};

// Per-function tally of what made it compile again.
struct FunctionTally {
  const Compile* first = nullptr;
  int compiles = 0;
  std::vector<std::string> order;  // cause keys, first seen first
  std::map<std::string, CauseTally> causes;
};

FunctionSummary functionSummary(const FunctionTally& t) {
  FunctionSummary out{t.first->function, t.first->file, t.first->firstLine, t.compiles, "", {}};
  out.summary = fmt::format("{} compiles of {}", t.compiles, t.first->function);
  std::string parts;
  for (const std::string& key : t.order) {
    const CauseTally& cause = t.causes.at(key);
    parts += fmt::format("{}{} ({})", parts.empty() ? "" : "; ", cause.cls.description, cause.compileIds.size());
    out.causes.push_back({cause.cls, cause.advice, cause.compileIds});
  }
  if (!parts.empty()) out.summary += ": " + parts;
  return out;
}

std::string compileHeadline(const Compile& c, const CompileAnswer& entry) {
  if (!entry.problems.empty()) return entry.problems.front().headline;
  if (entry.recompile) return fmt::format("{} compiled again: {}", c.function, entry.recompile->cls.detail);
  return fmt::format("{} compiled with no failure, graph break or recompile", c.function);
}

}  // namespace

WhyAnswer explainJob(const Job& job, const std::string& compileId, const std::string& symbol) {
  WhyAnswer answer;
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
    CompileAnswer entry{c.id.str(),   c.function, c.file, c.firstLine, firstLineOf(c.status),
                        std::nullopt, {},         {},     {},          ""};
    if (c.calls >= 0) entry.calls = c.calls;
    for (const RuntimeFailure& r : c.runtimeFailures) entry.problems.push_back(runtimeFailure(facts, r, symbol));
    if (failedCompile(c)) entry.problems.push_back(failureProblem(facts, symbol));
    for (size_t i = 0; i < c.graphBreaks.size(); ++i)
      entry.problems.push_back(
          graphBreak(facts, c.graphBreaks[i], i < c.graphBreakFacts.size() ? &c.graphBreakFacts[i] : nullptr, symbol));
    bool recompiled = isRecompile(c) && c.reason != "first compile";
    if (recompiled) {
      entry.recompile = recompileAnswer(facts, tally.first, &seenKeys[fnKey]);
      // A recompile without a recorded cause is tallied under no name.
      CauseClass k = entry.recompile->causes.empty() ? CauseClass{} : entry.recompile->cls;
      std::string key = causeKey(k);
      auto [it, isNew] = tally.causes.try_emplace(key, CauseTally{k, entry.recompile->advice, {}});
      if (isNew) tally.order.push_back(key);
      it->second.compileIds.push_back(c.id.str());
    }
    bool chosen = compileId.empty() ? (!entry.problems.empty() || recompiled) : c.id.str() == compileId;
    if (!symbol.empty()) {
      if (!facts.knows(symbol)) continue;
      SymbolFacts unused;
      entry.symbol = facts.symbolAnswer(symbol, &unused);
      chosen = compileId.empty() || c.id.str() == compileId;
    }
    if (!chosen) continue;
    entry.headline = compileHeadline(c, entry);
    answer.compiles.push_back(std::move(entry));
  }
  if (!symbol.empty()) return answer;
  const Compile* only = compileId.empty() ? nullptr : job.find(compileId);
  for (const std::string& key : functionOrder) {
    const FunctionTally& t = tallies[key];
    if (t.compiles < 2) continue;
    if (!compileId.empty() && (!only || functionKey(*only) != key)) continue;
    answer.functions.push_back(functionSummary(t));
  }
  return answer;
}

}  // namespace dynrep::replay
