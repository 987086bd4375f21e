// The pattern table of docs/why.md. A problem pattern ranks how well it fits (0: not at all) and
// writes its edit from the user's line; a cause pattern recognizes one kind of failed guard.
// The wording the matchers key on is PyTorch 2.13's, cited where it is matched.
#include "why/patterns.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "dynrep/replay/query/size_expr.h"
#include "render.h"
#include "why/torch_text.h"

namespace dynrep::replay {

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// --- the user's line ---

// The condition a line branches or asserts on: "if n.numel() == 0:" -> "n.numel() == 0";
// also elif, while, assert and `a if cond else b`. "" when the line has none.
std::string conditionOf(const std::string& code) {
  static const std::regex kStatement(R"(^\s*(?:if|elif|while)\s+(.+?)\s*:\s*(?:#.*)?$)");
  static const std::regex kAssert(R"(^\s*assert\s+(.+?)\s*(?:,.*)?$)");
  static const std::regex kTernary(R"(\sif\s+(.+?)\s+else\s)");
  std::smatch m;
  if (std::regex_match(code, m, kStatement) || std::regex_match(code, m, kAssert) || std::regex_search(code, m, kTernary))
    return trim(m[1]);
  return "";
}

bool isBranch(const std::string& code) {
  static const std::regex kBranch(R"((^\s*(if|elif|while)\s)|(\sif\s.+\selse\s))");
  return std::regex_search(code, kBranch);
}

// The opposite of a condition: a lone comparison flips its operator, `not c` loses the not.
std::string negate(const std::string& cond) {
  if (cond.rfind("not ", 0) == 0) return trim(cond.substr(4));
  static const std::vector<std::pair<std::string, std::string>> kFlip = {
      {" == ", " != "}, {" != ", " == "}, {" <= ", " > "}, {" >= ", " < "}, {" < ", " >= "}, {" > ", " <= "}};
  for (const auto& [op, flipped] : kFlip) {
    size_t at = cond.find(op);
    if (at == std::string::npos) continue;
    bool lone = std::none_of(kFlip.begin(), kFlip.end(), [&](const auto& other) {
      return cond.find(other.first, at + op.size()) != std::string::npos || cond.substr(0, at).find(other.first) != std::string::npos;
    });
    if (lone && !has(cond, " and ") && !has(cond, " or ")) return cond.substr(0, at) + flipped + cond.substr(at + op.size());
  }
  return "not (" + cond + ")";
}

// The failing expression in the user's names: "Eq(u0, 0)" -> "n.shape[0] == 0".
std::string userExpr(const Problem& p) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const SymbolFacts& s : p.symbols) names.push_back({s.symbol, s.userName});
  return renameSymbols(pythonExpr(p.expr), names);
}

bool floatSymbol(const Problem& p) {
  return std::any_of(p.symbols.begin(), p.symbols.end(), [](const SymbolFacts& s) { return s.symbol.rfind("z", 0) == 0; });
}

bool scalarOp(const std::string& op) {
  static const std::regex kScalarOp(R"(\b(item|_local_scalar_dense|tolist)\b)");
  return std::regex_search(op, kScalarOp);
}

// A data-dependent branch or check: an undecidable true/false question on symbols, or Dynamo's
// "Data-dependent branching" graph break (symbolic_convert.py) on a symbolic value.
bool dataDependentQuestion(const Problem& p) {
  if (p.kind.rfind("runtime", 0) == 0 || p.kind == "constraint_violation") return false;  // not asked while tracing
  if (!p.expr.empty()) return !p.integer;
  return p.gbType == "Data-dependent branching" && has(p.context, "SymNodeVariable");
}

bool tensorBranch(const Problem& p) {
  return p.gbType == "Data-dependent branching" && has(p.context, "TensorVariable");
}

std::string lineRef(const Problem& p) {
  return p.frame.line > 0 ? fmt::format("line {}", p.frame.line) : std::string("the failing line");
}

// --- the problem patterns, in docs/why.md's order ---

// variables/tensor.py method_item: "Unsupported Tensor.item() call with capture_scalar_outputs=False";
// utils.py: "Data dependent operator" for aten._local_scalar_dense (.tolist(), int(tensor)).
int rankScalarOutputs(const Problem& p) {
  if (has(p.gbType, "capture_scalar_outputs=False")) return 100;
  static const std::regex kScalarRead(R"(_local_scalar_dense|aten\.item)");
  if (p.gbType == "Data dependent operator" && std::regex_search(p.context, kScalarRead)) return 100;
  return 0;
}
std::string editScalarOutputs(const Problem&) {
  return "torch._dynamo.config.capture_scalar_outputs = True  # before the first call of the compiled function";
}

// utils.py: "Dynamic shape operator" (GB0036), raised for DynamicOutputShapeException.
int rankDynamicShapeOps(const Problem& p) { return p.gbType == "Dynamic shape operator" ? 100 : 0; }
std::string editDynamicShapeOps(const Problem& p) {
  return fmt::format("torch._dynamo.config.capture_dynamic_output_shape_ops = True  # before the first call; {} then "
                     "stays in the graph with an unbacked size",
                     p.context.empty() ? std::string("the operator") : p.context);
}

bool loopStatement(const std::string& code) {
  static const std::regex kLoop(R"(^\s*(for|while)\s)");
  return std::regex_search(code, kLoop);
}

// "Could not extract specialized integer from data-dependent expression": a loop count, int(),
// range() or a Python-side size needs the number itself. A loop statement that asks a yes/no
// question (is the list empty?) is the same problem.
int rankLoop(const Problem& p) {
  if (p.kind.rfind("runtime", 0) == 0) return 0;
  if (loopStatement(p.frame.code) && (p.integer || dataDependentQuestion(p))) return 92;
  return p.integer ? 90 : 0;
}
std::string editLoop(const Problem& p) {
  const std::string& code = p.frame.code;
  std::string value = p.symbols.empty() || p.symbols[0].userName.empty() ? pythonExpr(p.expr) : p.symbols[0].userName;
  static const std::regex kOverList(R"(^\s*for\s+.+\s+in\s+(.+\.tolist\(\))\s*:)");
  if (std::smatch m; std::regex_search(code, m, kOverList))
    return fmt::format("replace the loop over `{}` at {} with tensor operations over every position, masked "
                       "(torch.where(mask, value, 0)), or end the graph before it with `torch._dynamo.graph_break()`",
                       m[1].str(), lineRef(p));
  if (has(code, "range(") || loopStatement(code))
    return fmt::format("loop to a fixed bound and mask the extra steps: `for i in range(MAX_N):` with each step kept only "
                       "where `i < {}` (torch.where), or end the graph before the loop with "
                       "`torch._dynamo.graph_break()` at {} (the loop then runs eagerly)",
                       value, lineRef(p));
  return fmt::format("keep {} a tensor or a symbolic size instead of a Python int at {}: pad to a fixed upper bound and "
                     "mask (torch.arange(MAX_N) < {}), or `torch._dynamo.graph_break()` before the line",
                     value, lineRef(p), value);
}

// The line is in a library's file: there a test that cannot be decided should take the
// general path instead of asking (symbolic_shapes.py guard_or_false / guard_or_true).
int rankGuardOrFalse(const Problem& p) { return p.inLibrary && dataDependentQuestion(p) ? 95 : 0; }
std::string editGuardOrFalse(const Problem& p) {
  std::string cond = conditionOf(p.frame.code);
  if (cond.empty()) cond = userExpr(p);
  return fmt::format("in {}:{}: `if guard_or_false({}):` (from torch.fx.experimental.symbolic_shapes import "
                     "guard_or_false); guard_or_true when the `if` side is the general one",
                     p.frame.file, p.frame.line, cond);
}

// A test for an edge case or a bound: against 0 or 1 (empty, negative) or against another size
// (`length > x.size(0)`). One side of such a test rarely happens on valid input; a threshold on
// a value read from the data (`count > 4`) picks between two real paths.
bool edgeTest(const Problem& p) {
  static const std::regex kAgainst01(R"((==|!=|<=|>=|<|>) (0|1)\)*$|^\(*(0|1) (==|!=|<=|>=|<|>))");
  static const std::regex kSize(R"(\.size\(|\.shape\b|\blen\(|\.numel\(\)|\.dim\(\))");
  if (std::regex_search(pythonExpr(p.expr), kAgainst01)) return true;
  std::string cond = conditionOf(p.frame.code);
  return cond.empty() || std::regex_search(cond, kSize);
}

// The values the run gave the problem's symbols: "u0 was 9", "u0 was 9 and u1 was 2".
std::string valuesOnRun(const Problem& p) {
  std::string out;
  for (const SymbolFacts& s : p.symbols)
    if (!s.value.empty()) out += fmt::format("{}{} was {}", out.empty() ? "" : " and ", s.symbol, s.value);
  return out;
}

// The sympy operator of an expression, as Python spells it: "Eq(u0, 0)" -> " == ".
std::string pythonOperator(const std::string& expr) {
  static const std::vector<std::pair<std::string, std::string>> kOps = {
      {"Eq(", " == "}, {"Ne(", " != "}, {"Lt(", " < "}, {"Le(", " <= "}, {"Gt(", " > "}, {"Ge(", " >= "}};
  for (const auto& [fn, op] : kOps)
    if (expr.rfind(fn, 0) == 0) return op;
  for (const char* op : {" <= ", " >= ", " < ", " > ", " == ", " != "})
    if (has(expr, op)) return op;
  return "";
}

// On a branch whose condition says what the failing expression says (same comparison), whether
// the condition held on the captured run: 1, 0, or -1 unknown.
int conditionOnRun(const Problem& p, const std::string& cond) {
  int truth = truthOnRun(p);
  std::string op = pythonOperator(p.expr);
  if (truth < 0 || op.empty() || cond.empty()) return -1;
  if (has(cond, op)) return truth;
  if (has(negate(cond), op)) return 1 - truth;
  return -1;
}

// symbolic_shapes.py GuardOnDataDependentSymNode: "Could not guard on data-dependent expression".
int rankCheck(const Problem& p) {
  if (!dataDependentQuestion(p)) return 0;
  if (floatSymbol(p)) return 60;
  return isBranch(p.frame.code) && !edgeTest(p) ? 65 : 80;
}
// The torch_check advice: its text, and the statement it proposes with where it goes (`before`
// the line, or in place of an assert); code "" when it names no statement to write.
struct CheckEdit {
  std::string text, code;
  bool before = true;
};
CheckEdit checkEdit(const Problem& p) {
  auto check = [](const std::string& cond) { return "torch._check(" + cond + ")"; };
  std::string cond = conditionOf(p.frame.code);
  if (!cond.empty() && isBranch(p.frame.code)) {
    int held = conditionOnRun(p, cond);
    if (held == 0)
      return {fmt::format("before {}: `{}`: on this run {}, so the `if` side did not happen; the branch is then decided "
                          "and the `if` side can go (a call where it would happen fails the check)",
                          lineRef(p), check(negate(cond)), valuesOnRun(p)),
              check(negate(cond))};
    if (held == 1)
      return {fmt::format("before {}: `{}`: on this run {}, so the `if` side happened; only if it always does (else "
                          "torch.cond, below)",
                          lineRef(p), check(cond), valuesOnRun(p)),
              check(cond)};
    return {fmt::format("before {}: `{}` when the `if` side never happens (or `{}` when it always does); the branch is "
                        "then decided and the other side can go",
                        lineRef(p), check(negate(cond)), check(cond)),
            check(negate(cond))};
  }
  if (!cond.empty()) return {fmt::format("at {}: `{}` in place of the assert", lineRef(p), check(cond)), check(cond), false};
  if (p.expr.empty()) return {fmt::format("before {}: `torch._check(<the condition>)` stating which way it goes", lineRef(p)), ""};
  // Asked inside an operator: say the degenerate case does not happen, so the operator's own test is decided.
  std::string expr = userExpr(p);
  bool equality = p.expr.rfind("Eq(", 0) == 0;
  std::string stated = equality ? negate(expr) : expr;
  // A sign test on a count read with .item(): say it is never negative (torch._check_is_size,
  // which said the same, is deprecated in 2.13 in favour of this).
  static const std::regex kSignTest(R"((>=|<) 0\b)");
  bool signTest = std::regex_search(pythonExpr(p.expr), kSignTest);
  for (const SymbolFacts& s : p.symbols) {
    if (signTest && s.unbacked && scalarOp(s.op) && !s.userName.empty())
      return {fmt::format("before {}: `{}` (a count is never negative)", lineRef(p), check(s.userName + " >= 0")),
              check(s.userName + " >= 0")};
  }
  return {fmt::format("before {}: `{}`", lineRef(p), check(stated)), check(stated)};
}
std::string editCheck(const Problem& p) { return checkEdit(p).text; }

int rankCond(const Problem& p) {
  if (tensorBranch(p)) return 90;
  if (!dataDependentQuestion(p) || !isBranch(p.frame.code)) return 0;
  // The `if` side of an edge test happened on real data: it is a real path, not one to rule out.
  if (conditionOnRun(p, conditionOf(p.frame.code)) == 1) return 85;
  return floatSymbol(p) ? 85 : 70;
}
std::string editCond(const Problem& p) {
  std::string cond = conditionOf(p.frame.code);
  if (cond.empty()) cond = userExpr(p);
  return fmt::format("replace the branch at {} with `torch.cond({}, if_fn, else_fn, (operands,))`, each side a function "
                     "of the tensors it reads returning tensors of one shape and dtype; or, where both sides are cheap, "
                     "compute both and pick with torch.where",
                     lineRef(p), cond);
}

// --- constraint violations (symbolic_shapes.py produce_guards: "Constraints violated") ---

// What the caller names a tensor source (L['x'] -> ids), else the source as the frame names it.
std::string callerName(const Problem& p, const std::string& tensor) {
  if (p.call)
    if (auto it = p.call->arguments.find(tensor); it != p.call->arguments.end()) return it->second;
  return prettySource(tensor);
}

bool callerKnows(const Problem& p, const std::string& tensor) {
  return p.call && p.call->arguments.count(tensor) && !p.call->userFrame.file.empty();
}

const ConstraintFacts* firstConstraint(const Problem& p, bool specialized) {
  for (const ConstraintFacts& k : p.constraints)
    if (k.specialized == specialized && (specialized || !k.allowedLow.empty() || !k.allowedHigh.empty())) return &k;
  return nullptr;
}

int rankMaybeMarkDynamic(const Problem& p) {
  return p.kind == "constraint_violation" && firstConstraint(p, true) ? 100 : 0;
}
std::string maybeMarkCode(const Problem& p, const ConstraintFacts& k) {
  return fmt::format("torch._dynamo.maybe_mark_dynamic({}, {})", callerName(p, k.tensor), k.dim);
}
std::string editMaybeMarkDynamic(const Problem& p) {
  const ConstraintFacts& k = *firstConstraint(p, true);
  std::string at = k.userFrame.line > 0 ? fmt::format(" at line {}", k.userFrame.line) : "";
  return fmt::format("`{}` in place of `torch._dynamo.mark_dynamic({}, {})`: the dimension stays dynamic where the code "
                     "allows and is specialized where it does not; or remove what made {} the constant {}{}",
                     maybeMarkCode(p, k), callerName(p, k.tensor), k.dim, prettySource(k.source), k.value, at);
}

std::string rangeText(const std::string& low, const std::string& high) {
  return fmt::format("[{}, {}]", low.empty() ? "-inf" : low, high.empty() ? "inf" : high);
}

// The asked range cut to what the code allows: the bounds `mark_dynamic(x, d, min=, max=)` can take.
std::pair<std::string, std::string> narrowed(const ConstraintFacts& k) {
  auto pick = [](const std::string& a, const std::string& b, bool low) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    try {
      return (std::stoll(a) > std::stoll(b)) == low ? a : b;
    } catch (...) {
      return a;
    }
  };
  return {pick(k.askedLow, k.allowedLow, true), pick(k.askedHigh, k.allowedHigh, false)};
}

std::string rangeMarkCode(const Problem& p, const ConstraintFacts& k) {
  auto [low, high] = narrowed(k);
  std::string bounds = (low.empty() ? "" : ", min=" + low) + (high.empty() ? "" : ", max=" + high);
  return fmt::format("torch._dynamo.mark_dynamic({}, {}{})", callerName(p, k.tensor), k.dim, bounds);
}
int rankDimRange(const Problem& p) { return p.kind == "constraint_violation" && firstConstraint(p, false) ? 95 : 0; }
std::string editDimRange(const Problem& p) {
  const ConstraintFacts& k = *firstConstraint(p, false);
  return fmt::format("`{}`: the range the code allows ({} asked {}, the code allows {}); or change the code that "
                     "narrowed it (the guards on {} below)",
                     rangeMarkCode(p, k), prettySource(k.source), rangeText(k.askedLow, k.askedHigh),
                     rangeText(k.allowedLow, k.allowedHigh), k.symbol);
}

// --- run-time failures: a deferred runtime assert that real data broke ---

int rankCheckWhereMade(const Problem& p) { return p.kind == "runtime_assert" ? 90 : 0; }
std::string whereMadeCode(const Problem& p) { return "torch._check(" + userExpr(p) + ")"; }
std::string editCheckWhereMade(const Problem& p) {
  std::string made;
  for (const SymbolFacts& s : p.symbols)
    if (s.unbacked && s.origin.line > 0) made = fmt::format(" ({} is made at line {})", s.symbol, s.origin.line);
  return fmt::format("before {}{}: `{}`, stating the assumption where the data is made: a bad input then fails "
                     "there, with your message (torch._check(cond, lambda: \"...\"))",
                     lineRef(p), made, whereMadeCode(p));
}

int rankValidForAll(const Problem& p) { return p.kind == "runtime_assert" && truthOnRun(p) == 0 ? 95 : 0; }
std::string editValidForAll(const Problem& p) {
  return fmt::format("the data breaks the assumption: on this run {}, and `{}` is False. Change {} so it holds for every "
                     "value (e.g. a view or slice that does not need it), or fix the input that made it",
                     valuesOnRun(p), userExpr(p), lineRef(p));
}

struct ProblemPattern {
  const char* kind;
  int (*rank)(const Problem&);
  std::string (*edit)(const Problem&);
  const char* why;
};

const ProblemPattern kProblemPatterns[] = {
    {"torch_check", rankCheck, editCheck,
     "the value is known only when the graph runs, so Dynamo cannot pick a side while tracing; torch._check states "
     "which side holds (checked at run time) and the compile goes on with it"},
    {"torch_cond", rankCond, editCond,
     "both sides happen on real data, so the choice must be made in the graph: torch.cond traces both branches "
     "and picks one when it runs"},
    {"guard_or_false", rankGuardOrFalse, editGuardOrFalse,
     "the test is in library code that must work for any input: guard_or_false answers False (guard_or_true True) "
     "when the value is not known, instead of failing, so the general path is taken"},
    {"data_dependent_loop", rankLoop, editLoop,
     "Dynamo unrolls Python loops and needs Python ints for range() and int() while tracing; a value computed from "
     "tensor data exists only when the graph runs, so no single graph can hold this"},
    {"capture_scalar_outputs", rankScalarOutputs, editScalarOutputs,
     ".item() and .tolist() return Python numbers read from tensor data; by default Dynamo ends the graph there. "
     "With the setting the number stays in the graph as an unbacked symbol (tests on it then need torch._check)"},
    {"capture_dynamic_output_shape_ops", rankDynamicShapeOps, editDynamicShapeOps,
     "the operator's output size depends on tensor values (nonzero, unique, masked_select, boolean indexing, "
     "repeat_interleave without output_size); by default Dynamo ends the graph there"},
    {"maybe_mark_dynamic", rankMaybeMarkDynamic, editMaybeMarkDynamic,
     "mark_dynamic is a promise that the code works for every size; code that compares the size with a constant "
     "breaks it, so PyTorch refuses. maybe_mark_dynamic asks for a dynamic size without the promise"},
    {"dim_range", rankDimRange, editDimRange,
     "the code only works for part of the range that was asked for (a guard on the size narrowed it); a range "
     "the code allows, or code that works for the whole range, keeps the promise"},
    {"make_valid_for_all", rankValidForAll, editValidForAll,
     "the compiled code assumes it (an op's requirement, or your own torch._check) and checks it when it runs; "
     "the real data did not satisfy it, so eager code would fail on the same input"},
    {"check_where_made", rankCheckWhereMade, editCheckWhereMade,
     "PyTorch checks the assumption deep in the graph with its own expression; a torch._check right after the "
     "data is made says it in your names, so the failure points at the input, not at the op"},
};

// --- recompile causes ---

bool floatLiteral(const std::string& v) {
  static const std::regex kFloat(R"(-?(\d+\.\d*|\.\d+|\d+(\.\d*)?e[-+]?\d+|inf|nan))");
  return std::regex_match(v, kFloat);
}
bool intLiteral(const std::string& v) {
  static const std::regex kInt(R"(-?\d+)");
  return std::regex_match(v, kInt);
}

std::string values(const RecompileCause& c) {
  if (c.expected.empty() && c.seen.empty()) return "";
  if (c.seen.empty()) return fmt::format(" (was {})", c.expected);
  return fmt::format(" ({}, then {})", c.expected.empty() ? "?" : c.expected, c.seen);
}

// The tensor a cause's source is about: "x.size()[0]" and "L['x'].size()[0]" -> "x".
std::string tensorOf(const std::string& source) {
  std::string s = prettySource(source);
  static const std::regex kAttr(R"(^(.*)\.(size|stride|dtype|rank|requires_grad|dim)(\(\d*\))?$)");
  std::smatch m;
  return std::regex_match(s, m, kAttr) ? m[1].str() : s;
}

// A cause class whose detail is its description with the values the guard names.
CauseClass described(const char* cause, const std::string& subject, const std::string& description,
                     const std::string& values = "") {
  return {cause, subject, description, description + values};
}

// The guard texts of PyTorch 2.13 these key on: csrc/dynamo/guards.cpp's TensorCheck
// ("tensor 'x' size mismatch at index 0. expected 8, actual 16", "dtype mismatch",
// "requires_grad mismatch", "rank mismatch", "stride mismatch"), the 0/1 note of
// _dynamo/guards.py ("... due to 0/1 specialization in the framework ..."), the CONSTANT_MATCH
// / EQUALS_MATCH guards ("L['scale'] == 0.5"), ID_MATCH ("___check_obj_id") and TYPE_MATCH.
CauseClass classifyOne(const RecompileCause& c, bool wentDynamic) {
  std::string text = c.text.empty() ? c.guard : c.text;
  std::string subject = prettySource(c.source);
  if (c.from == "compared") {  // capture compared the graph's inputs with the call's: the source says what differs
    static const std::regex kWhat(R"(\.(size\(\)\[\d+\]|dtype|dim\(\)|requires_grad)$)");
    std::smatch m;
    std::string what = std::regex_search(c.source, m, kWhat) ? m[1].str() : "";
    if (what.rfind("size", 0) == 0) text = "size mismatch at index";
    else if (what == "dtype") text = "dtype mismatch";
    else if (what == "dim()") text = "rank mismatch";
    else if (what == "requires_grad") text = "requires_grad mismatch";
  }
  static const std::regex kAtLeastTwo(R"(^2 <= (.+?)\s*$|^(.+?) >= 2\s*$)");
  std::smatch m;
  bool atLeastTwo = std::regex_search(c.guard, m, kAtLeastTwo);
  if (atLeastTwo || has(text, "0/1 specialization")) {
    if (subject.empty() && atLeastTwo) subject = prettySource(m[1].matched ? m[1].str() : m[2].str());
    std::string seen = c.seen.empty() ? "0 or 1" : c.seen;
    return {"size_0_1", subject, fmt::format("{} == {} outside the dynamic range", subject, seen),
            fmt::format("{} == {} outside the dynamic range (sizes 0 and 1 are specialized)", subject, seen)};
  }
  if (has(text, "size mismatch at index")) {
    if (wentDynamic)
      return described("size_changed", subject, subject + " went dynamic", values(c));
    return described("size_changed", subject, subject + " changed", values(c));
  }
  if (has(text, "dtype mismatch")) {
    std::string t = tensorOf(c.source);
    return described("dtype_change", t, t + "'s dtype changed", values(c));
  }
  if (has(text, "requires_grad mismatch")) {
    std::string t = tensorOf(c.source);
    RecompileCause named = c;  // the guard says requires_grad=0; say False
    for (std::string* v : {&named.expected, &named.seen}) *v = *v == "0" ? "False" : *v == "1" ? "True" : *v;
    return described("requires_grad_change", t, t + ".requires_grad changed", values(named));
  }
  if (has(text, "rank mismatch")) {
    std::string t = tensorOf(c.source);
    return described("rank_change", t, t + "'s number of dimensions changed", values(c));
  }
  if (has(text, "stride mismatch")) return described("stride_change", subject, subject + " changed", values(c));
  if (has(text, "___check_obj_id") || has(text, "ID_MATCH"))
    return described("object_changed", subject, "another object in " + subject);
  if (has(text, "___check_type_id") || has(text, "TYPE_MATCH"))
    return described("type_changed", subject, subject + "'s type changed");
  if (!c.source.empty() && floatLiteral(c.expected))
    return described("float_constant", subject, subject + " changed, a float constant", values(c));
  if (!c.source.empty() && intLiteral(c.expected)) {
    if (subject.rfind("len(", 0) == 0)
      return described("length_changed", subject, subject + " changed", values(c));
    return described("int_constant", subject, subject + " changed, an int constant", values(c));
  }
  if (!c.source.empty() && !c.expected.empty())
    return described("constant_changed", subject, subject + " changed, a constant", values(c));
  std::string guard = c.guard.empty() ? text : c.guard;
  return described("other", guard, "guard " + guard + " failed");
}

// Where a recompile's advice goes: the compiled function's first line (settings and marks
// belong before its first call).
UserFrame functionLine(const Compile& fn) { return {fn.file, fn.firstLine, fn.function, ""}; }

// PyTorch's guard names a dtype as c10 does ("Float", "Double", "BFloat16"); torch spells it float32.
std::string torchDtype(const std::string& c10) {
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"Float", "float32"}, {"Double", "float64"}, {"Half", "float16"}, {"BFloat16", "bfloat16"}, {"Long", "int64"},
      {"Int", "int32"},     {"Short", "int16"},    {"Char", "int8"},    {"Byte", "uint8"},        {"Bool", "bool"}};
  for (const auto& [name, torch] : kNames)
    if (name == c10) return torch;
  return c10;
}

std::string dimOf(const std::string& subject) {
  static const std::regex kDim(R"(\((\d+)\)$)");
  std::smatch m;
  return std::regex_search(subject, m, kDim) ? m[1].str() : "0";
}

}  // namespace

const std::vector<std::string>& adviceKinds() {
  static const std::vector<std::string> kKinds = {
      "torch_check", "torch_cond", "guard_or_false", "data_dependent_loop", "capture_scalar_outputs",
      "capture_dynamic_output_shape_ops", "maybe_mark_dynamic", "dim_range", "make_valid_for_all", "check_where_made",
      "mark_unbacked", "float_constant", "mark_dynamic", "dtype_change", "requires_grad_change"};
  return kKinds;
}

int truthOnRun(const Problem& p) {
  std::map<std::string, int64_t> values;
  for (const SymbolFacts& s : p.symbols) {
    try {
      if (!s.value.empty()) values[s.symbol] = s.value == "true" ? 1 : s.value == "false" ? 0 : std::stoll(s.value);
    } catch (...) {
    }
  }
  if (values.empty() || p.expr.empty()) return -1;
  try {
    return evaluate(parseSizeExpr(p.expr), values) != 0 ? 1 : 0;
  } catch (const std::exception&) {
    return -1;
  }
}

namespace {

// The advice as the one edit `why --verify` applies, from the same statements its text shows.
EditAction actionFor(const std::string& kind, const Problem& p) {
  if (kind == "capture_scalar_outputs") return {"config", "", 0, "torch._dynamo.config.capture_scalar_outputs = True"};
  if (kind == "capture_dynamic_output_shape_ops")
    return {"config", "", 0, "torch._dynamo.config.capture_dynamic_output_shape_ops = True"};
  bool atLine = p.frame.line > 0 && !p.frame.file.empty();
  if (kind == "torch_check" && atLine) {
    CheckEdit e = checkEdit(p);
    if (!e.code.empty() && e.before) return {"insert_before", p.frame.file, p.frame.line, e.code};
  }
  if (kind == "check_where_made" && atLine) return {"insert_before", p.frame.file, p.frame.line, whereMadeCode(p)};
  if (kind == "maybe_mark_dynamic" || kind == "dim_range") {
    const ConstraintFacts* k = firstConstraint(p, kind == "maybe_mark_dynamic");
    if (k && callerKnows(p, k->tensor))
      return {"replace_mark", p.call->userFrame.file, p.call->userFrame.line,
              kind == "maybe_mark_dynamic" ? maybeMarkCode(p, *k) : rangeMarkCode(p, *k), callerName(p, k->tensor), k->dim};
  }
  return {};
}

}  // namespace

std::vector<Advice> adviseProblem(const Problem& problem) {
  // std::regex recurses per character: the matchers see a bounded line and expression.
  Problem p = problem;
  p.frame.code = p.frame.code.substr(0, 1024);
  p.expr = p.expr.substr(0, 4096);
  std::vector<std::pair<int, Advice>> ranked;
  for (const ProblemPattern& pattern : kProblemPatterns) {
    int rank = pattern.rank(p);
    if (rank <= 0) continue;
    std::string edit = pattern.edit(p);
    ranked.push_back({rank, {pattern.kind, edit, problem.frame, pattern.why, actionFor(pattern.kind, problem)}});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Advice> out;
  for (auto& [rank, advice] : ranked) out.push_back(std::move(advice));
  return out;
}

std::string userNameFor(const std::string& op, const std::string& originCode) {
  static const std::regex kAssignment(R"(^\s*([A-Za-z_]\w*)\s*=[^=])");
  std::smatch m;
  std::string code = originCode.substr(0, 1024);
  if (!std::regex_search(code, m, kAssignment)) return "";
  std::string name = m[1];
  if (scalarOp(op)) return op.find("tolist") != std::string::npos ? name + "[0]" : name;
  // `n = torch.nonzero(x).size(0)`: the name holds the count itself, not a tensor of it.
  static const std::regex kCount(R"((\.size\(0\)|\.shape\[0\]|\.numel\(\))\s*(#.*)?$)");
  if (std::regex_search(code, kCount)) return name;
  return name + ".shape[0]";
}

CauseClass classifyCause(const RecompileCause& cause, bool wentDynamic) {
  RecompileCause c = cause;  // bounded for std::regex, as in adviseProblem
  for (std::string* s : {&c.guard, &c.text, &c.source, &c.expected}) *s = s->substr(0, 4096);
  return classifyOne(c, wentDynamic);
}

std::string tensorSource(const std::string& source) {
  static const std::regex kAttr(R"(^(.*?)(\.(size|stride)\(\)\[\d+\]|\.dtype|\.dim\(\)|\.requires_grad)$)");
  std::smatch m;
  return std::regex_match(source, m, kAttr) ? m[1].str() : source;
}

Advice adviseCause(const CauseClass& k, const RecompileCause& c, const Compile& fn, const Compile* first) {
  UserFrame at = functionLine(fn);
  std::string tensor = tensorOf(c.source.empty() ? k.subject : c.source);
  // The first call's own name for the tensor, where capture found it there: the mark goes before that call.
  const CallSite* call = first ? &first->callSite : nullptr;
  auto named = call ? call->arguments.find(tensorSource(c.source)) : std::map<std::string, std::string>::const_iterator{};
  bool callerNamed = call && named != call->arguments.end() && !call->userFrame.file.empty();
  if (callerNamed) tensor = named->second;
  auto beforeCall = [&](const std::string& code) {
    return callerNamed ? EditAction{"insert_before", call->userFrame.file, call->userFrame.line, code} : EditAction{};
  };
  if (k.cause == "float_constant")
    return {"float_constant",
            fmt::format("pass {} as a tensor (torch.tensor({})) so it is an input, not a constant; or "
                        "torch.compile({}, dynamic=True) to trace Python floats as symbols from the first compile",
                        k.subject, c.expected.empty() ? "value" : c.expected, fn.function),
            at,
            "Dynamo compiles a Python float as a constant the first time; a new value fails the guard. With "
            "specialize_float=False (the 2.13 default) the second compile makes it a symbol, unless it is used "
            "where only a constant works"};
  if (k.cause == "size_changed" || k.cause == "int_constant") {
    std::string mark = fmt::format("torch._dynamo.mark_dynamic({}, {})", tensor, dimOf(k.subject));
    std::string where = callerNamed ? fmt::format("before the first call ({}:{})", baseName(call->userFrame.file),
                                                  call->userFrame.line)
                                    : "before the first call";
    std::string edit = k.cause == "int_constant"
                           ? fmt::format("torch.compile({}, dynamic=True), or pass {} as a tensor", fn.function, k.subject)
                           : fmt::format("{}  # {}; or dynamic=True in the torch.compile call of {}", mark, where,
                                         fn.function);
    if (callerNamed) at = call->userFrame;
    return {"mark_dynamic", edit, at,
            "Dynamo compiles for the sizes and ints of the first call; a new one fails the guard and, with automatic "
            "dynamic shapes, compiles again with it symbolic. Marking it dynamic up front saves that compile",
            k.cause == "size_changed" ? beforeCall(mark) : EditAction{}};
  }
  if (k.cause == "size_0_1") {
    std::string mark = fmt::format("torch._dynamo.mark_unbacked({}, {})", tensor, dimOf(k.subject));
    if (callerNamed) at = call->userFrame;
    return {"mark_unbacked", mark + "  # before the first call: no 0/1 specialization for it", at,
            "a dynamic size is compiled for 2 and up; sizes 0 and 1 are specialized (the 0/1 rule) and fail the "
            "guard `2 <= size`. An unbacked size makes no such assumption (its code must then not branch on 0 or 1)",
            beforeCall(mark)};
  }
  if (k.cause == "dtype_change")
    return {"dtype_change",
            fmt::format("convert before the call so every call brings one dtype: {}.to(torch.{})", tensor,
                        c.expected.empty() ? std::string("float32") : torchDtype(c.expected)),
            at, "a graph is compiled for one dtype per tensor; each new dtype compiles another graph"};
  if (k.cause == "requires_grad_change")
    return {"requires_grad_change",
            fmt::format("call with one requires_grad setting: {0}.detach() (or under torch.no_grad()) where no "
                        "gradient is needed, {0}.requires_grad_() where one is",
                        tensor),
            at, "requires_grad is guarded: a tensor that needs gradients gets a graph with a backward, one that "
                "does not gets an inference graph, so switching compiles again"};
  return {"", "", at, ""};
}

}  // namespace dynrep::replay
