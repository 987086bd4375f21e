// The why-answer's readers of PyTorch's texts and its pattern table, on texts PyTorch 2.13 wrote
// (copied from real captures), and docs/why.md listing every advice kind.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "why/patterns.h"
#include "why/torch_text.h"

namespace dynrep::replay {
namespace {

const char* kDataDependentStatus =
    "Consider annotating your code using torch._check*(). Could not guard on data-dependent expression Eq(u0, 0) "
    "(unhinted: Eq(u0, 0)).  (Size-like symbols: u0)\n\n"
    "consider using data-dependent friendly APIs such as guard_or_false, guard_or_true and statically_known_true.\n"
    "Caused by: if n.numel() == 0:  # mp/why/nz.py:6 in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)\n"
    "For more information, run with TORCH_LOGS=\"dynamic\"\n\n"
    "User Stack (most recent call last):\n"
    "  (snipped, see stack below for prefix)\n"
    "  File \"/tmp/why/nz.py\", line 6, in f\n"
    "    if n.numel() == 0:\n"
    "       ^^^^^^^^^^^^^^^\n";

const char* kItemBreak =
    "Graph break in user code at /tmp/why/item.py:5\n"
    "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):\n\n"
    "Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
    "  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n"
    "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` "
    "to include these operations in the captured graph.\n\n"
    "  Developer debug context: call_method TensorVariable() item () {}\n\n"
    " For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html\n\n"
    "User code traceback:\n"
    "  File \"/tmp/why/item.py\", line 15, in <module>\n"
    "    torch.compile(f, backend=\"aot_eager\")(torch.rand(8))\n"
    "  File \"/tmp/why/item.py\", line 5, in f\n"
    "    k = x.sum().item()\n"
    "        ^^^^^^^^^^^^^^\n\n"
    "Traceback (most recent call last):\n"
    "  File \"/venv/torch/_dynamo/symbolic_convert.py\", line 1076, in wrapper\n"
    "    return inner_fn(self, inst)\n";

TEST(WhyText, DataDependentErrorGivesExpressionSiteAndUserLine) {
  auto d = parseDataDependent(kDataDependentStatus);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->expr, "Eq(u0, 0)");
  EXPECT_FALSE(d->integer);
  EXPECT_EQ(d->torchSite, "_dynamo/variables/tensor.py:2606 in evaluate_expr");
  EXPECT_EQ(d->frame.file, "/tmp/why/nz.py");
  EXPECT_EQ(d->frame.line, 6);
  EXPECT_EQ(d->frame.code, "if n.numel() == 0:");
  EXPECT_FALSE(parseDataDependent("Unsupported: something else"));
}

TEST(WhyText, GraphBreakGivesTypeIdAndInnermostUserFrame) {
  GraphBreakText g = parseGraphBreak(kItemBreak);
  EXPECT_EQ(g.gbType, "Unsupported Tensor.item() call with capture_scalar_outputs=False");
  EXPECT_EQ(g.gbId, "GB0124");
  EXPECT_EQ(g.frame.line, 5);
  EXPECT_EQ(g.frame.code, "k = x.sum().item()");
  ASSERT_EQ(g.hints.size(), 1u);
}

TEST(WhyText, RecompileReasonsBecomeCauses) {
  std::vector<RecompileCause> causes = parseReasons(
      "0/2: 2 <= x.size()[0]  # return x * scale + 1  # mp/why/ladder.py:5 in step (... 0/1 specialization ...)\n"
      "0/1: tensor 'x' size mismatch at index 0. expected 8, actual 1\n"
      "0/0: scale == 0.5                                             # return x * scale + 1  # ladder.py:5 in step\n"
      "User stack trace:\n  File \"/tmp/why/ladder.py\", line 5, in step\n    return x * scale + 1");
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0].entry, "0/2");
  EXPECT_EQ(causes[0].guard, "2 <= x.size()[0]");
  EXPECT_EQ(causes[1].source, "x.size()[0]");
  EXPECT_EQ(causes[1].expected, "8");
  EXPECT_EQ(causes[1].seen, "1");
  EXPECT_EQ(causes[2].source, "scale");
  EXPECT_EQ(causes[2].expected, "0.5");
  EXPECT_EQ(classifyCause(causes[0], false).cause, "size_0_1");
  EXPECT_EQ(classifyCause(causes[1], true).description, "x.size(0) went dynamic");
  EXPECT_EQ(classifyCause(causes[2], false).description, "scale changed, a float constant");
}

TEST(WhyText, CausesOfTensorProperties) {
  auto one = [](const std::string& line) { return classifyCause(parseReasons("0/0: " + line).at(0), false); };
  EXPECT_EQ(one("tensor 'x' dtype mismatch. expected Float, actual Double").cause, "dtype_change");
  EXPECT_EQ(one("tensor 'x' requires_grad mismatch. expected requires_grad=0").cause, "requires_grad_change");
  EXPECT_EQ(one("tensor 'x' rank mismatch. expected 1, actual 2").cause, "rank_change");
  EXPECT_EQ(one("L['n'] == 3").cause, "int_constant");
  EXPECT_EQ(one("len(L['xs']) == 3").cause, "length_changed");
  EXPECT_EQ(one("___check_obj_id(L['fn'], 140)").cause, "object_changed");
}

TEST(WhyText, SympyAsPython) {
  EXPECT_EQ(pythonExpr("Eq(u0, 0)"), "u0 == 0");
  EXPECT_EQ(pythonExpr("Eq(((u0 + 1)//2), 0)"), "((u0 + 1)//2) == 0");
  EXPECT_EQ(pythonExpr("Ne(Mod(u0, 2), 0)"), "(u0 % 2) != 0");
  EXPECT_EQ(pythonExpr("Max(1, u0) >= 2"), "max(1, u0) >= 2");
  EXPECT_EQ(symbolsIn("Eq(s0*u1, zuf0) + u1"), (std::vector<std::string>{"s0", "u1", "zuf0"}));
  EXPECT_EQ(prettySource("L['x'].size()[0]"), "x.size(0)");
  EXPECT_EQ(renameSymbols("u0 == 0", {{"u0", "n.shape[0]"}}), "n.shape[0] == 0");
}

Problem branchOnNonzero() {
  Problem p;
  p.type = "UserError";
  p.expr = "Eq(u0, 0)";
  p.frame = {"/tmp/job.py", 6, "f", "if n.numel() == 0:"};
  p.symbols = {{"u0", true, "aten.nonzero.default", "n.shape[0]"}};
  return p;
}

TEST(WhyPatterns, BranchOnDataDependentSizeAdvisesCheckThenCond) {
  std::vector<Advice> advice = adviseProblem(branchOnNonzero());
  ASSERT_GE(advice.size(), 2u);
  EXPECT_EQ(adviceKindId(advice[0].kind), "torch_check");
  EXPECT_NE(advice[0].edit.find("torch._check(n.numel() != 0)"), std::string::npos) << advice[0].edit;
  EXPECT_EQ(adviceKindId(advice[1].kind), "torch_cond");
}

TEST(WhyPatterns, LibraryLineAdvisesGuardOrFalseFirst) {
  Problem p = branchOnNonzero();
  p.inLibrary = true;
  EXPECT_EQ(adviceKindId(adviseProblem(p).at(0).kind), "guard_or_false");
}

TEST(WhyPatterns, IntegerNeededAdvisesLoopPattern) {
  Problem p;
  p.expr = "u0";
  p.integer = true;
  p.frame = {"/tmp/job.py", 11, "f", "for i in range(n):"};
  EXPECT_EQ(adviceKindId(adviseProblem(p).at(0).kind), "data_dependent_loop");
}

TEST(WhyPatterns, GraphBreaksOnScalarAndDynamicShapeOps) {
  Problem p;
  p.graphBreak = true;
  p.gbType = parseGraphBreak(kItemBreak).gbType;
  EXPECT_EQ(adviceKindId(adviseProblem(p).at(0).kind), "capture_scalar_outputs");
  p.gbType = "Dynamic shape operator";
  p.context = "aten.nonzero.default";
  EXPECT_EQ(adviceKindId(adviseProblem(p).at(0).kind), "capture_dynamic_output_shape_ops");
  p.gbType = "Data dependent operator";
  p.context = "aten._local_scalar_dense.default";
  EXPECT_EQ(adviceKindId(adviseProblem(p).at(0).kind), "capture_scalar_outputs");
}

TEST(WhyPatterns, UserNamesFromOriginLines) {
  EXPECT_EQ(userNameFor("aten.nonzero.default", "n = torch.nonzero(x > 0.5)"), "n.shape[0]");
  EXPECT_EQ(userNameFor("item", "k = x.sum().item()"), "k");
  EXPECT_EQ(userNameFor("getitem", "y = x[x > 0]"), "y.shape[0]");
  EXPECT_EQ(userNameFor("item", "return x * x.sum().item()"), "");
  EXPECT_EQ(userNameFor("aten.nonzero.default", "count = torch.nonzero(x > 0.5).size(0)  # why"), "count");
}

// A data-dependent branch, with or without the value the run gave u0 (one line per case): the
// value says which side happened, which decides torch._check's direction and the ranking.
TEST(WhyPatterns, ValueOnTheRunRanksTheBranchAdvice) {
  struct Case {
    std::string value;
    std::string first;  // first advice
    std::string check;  // the torch._check the torch_check advice states
  } cases[] = {
      {"", "torch_check", "torch._check(picked.numel() != 0)"},
      {"3", "torch_check", "torch._check(picked.numel() != 0)`: on this run u0 was 3"},
      {"0", "torch_cond", "torch._check(picked.numel() == 0)`: on this run u0 was 0"},
  };
  for (const Case& c : cases) {
    Problem p;
    p.expr = "Eq(u0, 0)";
    p.frame = {"/tmp/job.py", 6, "top", "if picked.numel() == 0:"};
    p.symbols = {{"u0", true, "aten.nonzero.default", "picked.shape[0]", c.value, {}}};
    EXPECT_EQ(truthOnRun(p), c.value.empty() ? -1 : c.value == "0" ? 1 : 0);
    std::vector<Advice> advice = adviseProblem(p);
    ASSERT_GE(advice.size(), 2u) << c.value;
    EXPECT_EQ(adviceKindId(advice[0].kind), c.first) << c.value;
    const Advice& check = advice[0].kind == AdviceKind::TorchCheck ? advice[0] : advice[1];
    EXPECT_NE(check.edit.find(c.check), std::string::npos) << check.edit;
    EXPECT_EQ(check.apply.action, "insert_before");
    EXPECT_EQ(check.apply.line, 6);
  }
}

TEST(WhyPatterns, ConstraintViolationsAdviseTheMarkInTheCallersName) {
  CallSite call{{"/tmp/job.py", 12, "<module>", "f(batch)"}, {{"L['x']", "batch"}}};
  Problem specialized;
  specialized.kind = "constraint_violation";
  specialized.call = &call;
  ConstraintFacts k;
  k.source = "L['x'].size()[0]";
  k.tensor = "L['x']";
  k.specialized = true;
  k.value = 8;
  specialized.constraints = {k};
  std::vector<Advice> a = adviseProblem(specialized);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(adviceKindId(a[0].kind), "maybe_mark_dynamic");
  EXPECT_EQ(a[0].apply.action, "replace_mark");
  EXPECT_EQ(a[0].apply.code, "torch._dynamo.maybe_mark_dynamic(batch, 0)");
  EXPECT_EQ(a[0].apply.name, "batch");

  Problem ranged = specialized;
  k.specialized = false;
  k.ranged = true;
  k.askedLow = "2";
  k.askedHigh = "16";
  k.allowedLow = "6";
  k.allowedHigh = "";
  k.symbol = "s0";
  ranged.constraints = {k};
  a = adviseProblem(ranged);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(adviceKindId(a[0].kind), "dim_range");
  EXPECT_EQ(a[0].apply.code, "torch._dynamo.mark_dynamic(batch, 0, min=6, max=16)");
}

TEST(WhyPatterns, RuntimeAssertAdviceNamesTheValue) {
  Problem p;
  p.kind = "runtime_assert";
  p.expr = "Eq(Mod(u0, 2), 0)";
  p.frame = {"/tmp/job.py", 7, "pairs", "return idx.view(-1, 2)"};
  p.symbols = {{"u0", true, "aten.nonzero.default", "idx.shape[0]", "9", {"/tmp/job.py", 6, "pairs", ""}}};
  EXPECT_EQ(truthOnRun(p), 0);
  std::vector<Advice> a = adviseProblem(p);
  ASSERT_EQ(a.size(), 2u);  // not torch_check or torch_cond: nothing was asked while tracing
  EXPECT_EQ(adviceKindId(a[0].kind), "make_valid_for_all");
  EXPECT_NE(a[0].edit.find("on this run u0 was 9"), std::string::npos);
  EXPECT_EQ(adviceKindId(a[1].kind), "check_where_made");
  EXPECT_EQ(a[1].apply.action, "insert_before");
  EXPECT_EQ(a[1].apply.line, 7);
  p.symbols[0].value = "8";  // the data kept the assumption: only the check where it is made
  a = adviseProblem(p);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(adviceKindId(a[0].kind), "check_where_made");
}

TEST(WhyPatterns, EveryAdviceKindIsDocumented) {
  std::ifstream in(std::string(DYNREP_SOURCE_DIR) + "/docs/why.md");
  ASSERT_TRUE(in) << "docs/why.md";
  std::stringstream doc;
  doc << in.rdbuf();
  for (const std::string& kind : adviceKinds())
    EXPECT_NE(doc.str().find("| `" + kind + "`"), std::string::npos) << kind << " has no row in docs/why.md";
}

}  // namespace
}  // namespace dynrep::replay
