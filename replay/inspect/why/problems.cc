// The problem table of docs/why.md ("Advice patterns", failures and graph breaks): each row ranks
// how well it fits a Problem (0: not at all) and writes its edit from the user's line.
// The wording the rows key on is PyTorch 2.13's, cited where it is matched.
#include <algorithm>
#include <map>
#include <regex>
#include <utility>

#include <fmt/format.h>

#include "dynrep/replay/query/size_expr.h"
#include "render.h"
#include "why/patterns.h"
#include "why/python_lines.h"
#include "why/torch_text.h"

namespace dynrep::replay {

namespace {

using namespace pyline;

// The failing expression in the user's names: "Eq(u0, 0)" -> "n.shape[0] == 0".
std::string userExpr(const Problem& p) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const SymbolFacts& s : p.symbols) names.push_back({s.symbol, s.userName});
  return renameSymbols(pythonExpr(p.expr), names);
}

bool floatSymbol(const Problem& p) {
  return std::any_of(p.symbols.begin(), p.symbols.end(),
                     [](const SymbolFacts& s) { return s.symbol.rfind("z", 0) == 0; });
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

// --- the rows' matchers and edits, in docs/why.md's order ---

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
    return fmt::format(
        "loop to a fixed bound and mask the extra steps: `for i in range(MAX_N):` with each step kept only "
        "where `i < {}` (torch.where), or end the graph before the loop with "
        "`torch._dynamo.graph_break()` at {} (the loop then runs eagerly)",
        value, lineRef(p));
  return fmt::format(
      "keep {} a tensor or a symbolic size instead of a Python int at {}: pad to a fixed upper bound and "
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
      return {
          fmt::format("before {}: `{}`: on this run {}, so the `if` side did not happen; the branch is then decided "
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
  if (!cond.empty())
    return {fmt::format("at {}: `{}` in place of the assert", lineRef(p), check(cond)), check(cond), false};
  if (p.expr.empty())
    return {fmt::format("before {}: `torch._check(<the condition>)` stating which way it goes", lineRef(p)), ""};
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
  return fmt::format(
      "replace the branch at {} with `torch.cond({}, if_fn, else_fn, (operands,))`, each side a function "
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
  return fmt::format(
      "`{}` in place of `torch._dynamo.mark_dynamic({}, {})`: the dimension stays dynamic where the code "
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
  return fmt::format(
      "the data breaks the assumption: on this run {}, and `{}` is False. Change {} so it holds for every "
      "value (e.g. a view or slice that does not need it), or fix the input that made it",
      valuesOnRun(p), userExpr(p), lineRef(p));
}

// --- the edits as actions `why --verify` applies, from the same statements their text shows ---

bool atLine(const Problem& p) { return p.frame.line > 0 && !p.frame.file.empty(); }
EditAction actionScalarOutputs(const Problem&) {
  return {"config", "", 0, "torch._dynamo.config.capture_scalar_outputs = True"};
}
EditAction actionDynamicShapeOps(const Problem&) {
  return {"config", "", 0, "torch._dynamo.config.capture_dynamic_output_shape_ops = True"};
}
EditAction actionCheck(const Problem& p) {
  if (!atLine(p)) return {};
  CheckEdit e = checkEdit(p);
  if (!e.code.empty() && e.before) return {"insert_before", p.frame.file, p.frame.line, e.code};
  return {};
}
EditAction actionCheckWhereMade(const Problem& p) {
  return atLine(p) ? EditAction{"insert_before", p.frame.file, p.frame.line, whereMadeCode(p)} : EditAction{};
}
EditAction actionMaybeMarkDynamic(const Problem& p) {
  const ConstraintFacts* k = firstConstraint(p, true);
  if (!k || !callerKnows(p, k->tensor)) return {};
  return {"replace_mark",       p.call->userFrame.file,   p.call->userFrame.line,
          maybeMarkCode(p, *k), callerName(p, k->tensor), k->dim};
}
EditAction actionDimRange(const Problem& p) {
  const ConstraintFacts* k = firstConstraint(p, false);
  if (!k || !callerKnows(p, k->tensor)) return {};
  return {"replace_mark",       p.call->userFrame.file,   p.call->userFrame.line,
          rangeMarkCode(p, *k), callerName(p, k->tensor), k->dim};
}

// --- the table ---

struct ProblemPattern {
  AdviceKind kind;
  int (*rank)(const Problem&);           // how well it fits: 0 not at all, higher first
  std::string (*edit)(const Problem&);   // the change to make, for a person
  EditAction (*action)(const Problem&);  // the same edit for `why --verify`; nullptr: a person's change only
  const char* why;
};

// One row per failure or graph-break advice, in docs/why.md's order.
const ProblemPattern kProblemPatterns[] = {
    {AdviceKind::TorchCheck, rankCheck, editCheck, actionCheck,
     "the value is known only when the graph runs, so Dynamo cannot pick a side while tracing; torch._check states "
     "which side holds (checked at run time) and the compile goes on with it"},
    {AdviceKind::TorchCond, rankCond, editCond, nullptr,
     "both sides happen on real data, so the choice must be made in the graph: torch.cond traces both branches "
     "and picks one when it runs"},
    {AdviceKind::GuardOrFalse, rankGuardOrFalse, editGuardOrFalse, nullptr,
     "the test is in library code that must work for any input: guard_or_false answers False (guard_or_true True) "
     "when the value is not known, instead of failing, so the general path is taken"},
    {AdviceKind::DataDependentLoop, rankLoop, editLoop, nullptr,
     "Dynamo unrolls Python loops and needs Python ints for range() and int() while tracing; a value computed from "
     "tensor data exists only when the graph runs, so no single graph can hold this"},
    {AdviceKind::CaptureScalarOutputs, rankScalarOutputs, editScalarOutputs, actionScalarOutputs,
     ".item() and .tolist() return Python numbers read from tensor data; by default Dynamo ends the graph there. "
     "With the setting the number stays in the graph as an unbacked symbol (tests on it then need torch._check)"},
    {AdviceKind::CaptureDynamicOutputShapeOps, rankDynamicShapeOps, editDynamicShapeOps, actionDynamicShapeOps,
     "the operator's output size depends on tensor values (nonzero, unique, masked_select, boolean indexing, "
     "repeat_interleave without output_size); by default Dynamo ends the graph there"},
    {AdviceKind::MaybeMarkDynamic, rankMaybeMarkDynamic, editMaybeMarkDynamic, actionMaybeMarkDynamic,
     "mark_dynamic is a promise that the code works for every size; code that compares the size with a constant "
     "breaks it, so PyTorch refuses. maybe_mark_dynamic asks for a dynamic size without the promise"},
    {AdviceKind::DimRange, rankDimRange, editDimRange, actionDimRange,
     "the code only works for part of the range that was asked for (a guard on the size narrowed it); a range "
     "the code allows, or code that works for the whole range, keeps the promise"},
    {AdviceKind::MakeValidForAll, rankValidForAll, editValidForAll, nullptr,
     "the compiled code assumes it (an op's requirement, or your own torch._check) and checks it when it runs; "
     "the real data did not satisfy it, so eager code would fail on the same input"},
    {AdviceKind::CheckWhereMade, rankCheckWhereMade, editCheckWhereMade, actionCheckWhereMade,
     "PyTorch checks the assumption deep in the graph with its own expression; a torch._check right after the "
     "data is made says it in your names, so the failure points at the input, not at the op"},
};

}  // namespace

int truthOnRun(const Problem& p) {
  std::map<std::string, int64_t> values;
  for (const SymbolFacts& s : p.symbols) {
    try {
      if (!s.value.empty()) values[s.symbol] = s.value == "true" ? 1 : s.value == "false" ? 0 : std::stoll(s.value);
    } catch (...) {
    }
  }
  if (values.empty() || p.expr.empty()) return -1;
  Result<SizeExpr> tree = parseSizeExpr(p.expr);
  Result<int64_t> truth = tree.isOk() ? evaluate(*tree, values) : Result<int64_t>(tree.status());
  if (!truth.isOk()) return -1;
  return *truth != 0 ? 1 : 0;
}

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
    EditAction action = pattern.action ? pattern.action(problem) : EditAction{};
    ranked.push_back({rank, {pattern.kind, edit, problem.frame, pattern.why, action}});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Advice> out;
  for (auto& [rank, advice] : ranked) out.push_back(std::move(advice));
  return out;
}

}  // namespace dynrep::replay
