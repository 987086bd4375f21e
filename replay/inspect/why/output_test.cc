// The why-answer's renderings from one answer built by hand: the text `why` prints and the JSON
// `why --json` prints say the same facts, absent ones as "not recorded" and null.
#include <gtest/gtest.h>

#include "dynrep/replay/query/json_fields.h"
#include "why/output.h"

namespace dynrep::replay {
namespace {

using nlohmann::json;

// A branch on u0 (from nonzero) that failed, and the recompile of a function that changed `scale`.
WhyAnswer branchAndRecompile() {
  SymbolAnswer u0;
  u0.symbol = "u0";
  u0.unbacked = true;
  u0.userName = "n.shape[0]";
  SymbolOrigin origin;
  origin.symbol = "u0";
  origin.unbacked = true;
  origin.phase = "dynamo";
  origin.op = "aten.nonzero.default";
  origin.node = "nonzero";
  origin.userFrame = {"/tmp/job.py", 5, "f", "n = x.nonzero()"};
  u0.origin = origin;
  u0.range = std::pair{SymbolNumber{SymbolNumber::Kind::Integer, 0, 0, ""},
                       SymbolNumber{SymbolNumber::Kind::Text, 0, 0, "int_oo"}};
  u0.valueOnRun = RunValue{"3", "outputs"};
  u0.guards = {{ShapeGuard{"Eq(u0, 0)", "guard", {"u0"}, {"/tmp/job.py", 6, "f", "if n.numel() == 0:"}}, "u0 == 0"}};

  ProblemAnswer branch;
  branch.failureKind = "data_dependent";
  branch.headline = "f did not compile: PyTorch could not decide Eq(u0, 0) at job.py:6";
  branch.type = "UserError";
  branch.chain = {"UserError", "GuardOnDataDependentSymNode"};
  branch.expr = "Eq(u0, 0)";
  branch.exprPython = "u0 == 0";
  branch.message = "Could not guard on data-dependent expression Eq(u0, 0)";
  branch.userFrame = {"/tmp/job.py", 6, "f", "if n.numel() == 0:"};
  branch.symbols = {u0};
  branch.advice = {Advice{AdviceKind::TorchCheck, "torch._check(n.numel() != 0)", branch.userFrame, "u0 was 3",
                          EditAction{"insert_before", "/tmp/job.py", 6, "torch._check(n.numel() != 0)", "", 0}}};
  branch.constraints = {
      ConstraintAnswer{"L['x'].size()[0]", 0, Bounds{2, std::nullopt}, std::nullopt, "s0", std::nullopt, {}}};

  CompileAnswer failed{"0/0", "f", "/tmp/job.py", 4, "UserError: Could not guard", 1, {branch}, {}, {}, ""};
  failed.headline = branch.headline;

  CauseClass scale{"float_constant", "scale", "scale changed, a float constant",
                   "scale changed, a float constant (0.5, then 0.7)"};
  RecompileAnswer again;
  again.main = {"0/0", "L['scale'] == 0.5", "L['scale']", "0.5", "0.7", "", ""};
  again.from = CauseSource::ReasonText;
  again.cls = scale;
  again.causes = {{again.main, scale, true},
                  {{"0/1", "L['x'].size()[0] == 8", "", "", "", "", ""},
                   {"size_changed", "x.size(0)", "x.size(0) changed", "x.size(0) changed (8, then 16)"},
                   false}};
  CompileAnswer recompiled{"1/1", "step", "/tmp/job.py", 10, "ok", std::nullopt, {}, again, {}, ""};
  recompiled.headline = "step compiled again: " + scale.detail;

  FunctionSummary step{"step", "/tmp/job.py", 10, 2, "2 compiles of step: scale changed, a float constant (1)", {}};
  step.causes = {CauseSummary{scale, std::nullopt, {"1/1"}}};
  return {{failed, recompiled}, {step}};
}

TEST(WhyOutput, TextSaysTheSummaryThenEachCompile) {
  EXPECT_EQ(whyText(branchAndRecompile()),
            "job.py:10: 2 compiles of step: scale changed, a float constant (1)\n"
            "\n"
            "0/0 f did not compile: PyTorch could not decide Eq(u0, 0) at job.py:6\n"
            "  job.py:6: if n.numel() == 0:\n"
            "  fix:\n"
            "    1. torch_check: torch._check(n.numel() != 0)\n"
            "       why: u0 was 3\n"
            "  symbols:\n"
            "    u0 (n.shape[0])  unbacked, final range [0, int_oo]\n"
            "        made by aten.nonzero.default (node nonzero) during dynamo at job.py:5: n = x.nonzero()\n"
            "        on this run u0 was 3 (read from the graph's outputs on its first call)\n"
            "        guard            u0 == 0  at job.py:6: if n.numel() == 0:\n"
            "  PyTorch: UserError <- GuardOnDataDependentSymNode: Could not guard on data-dependent expression "
            "Eq(u0, 0)\n"
            "\n"
            "1/1 step compiled again: scale changed, a float constant (0.5, then 0.7)\n"
            "  failed guard of 0/0: L['scale'] == 0.5 (expected 0.5, saw 0.7)\n"
            "  every cache entry's failed guard, newest first:\n"
            "    0/0 *: scale changed, a float constant (0.5, then 0.7)\n"
            "    0/1: x.size(0) changed (8, then 16)\n");
}

TEST(WhyOutput, JsonHasEveryFactAndNullsForAbsentOnes) {
  json j = whyJson(branchAndRecompile());
  const json& problem = j["compiles"][0]["problems"][0];
  EXPECT_EQ(problem["kind"], "failure");
  EXPECT_EQ(problem["failure_kind"], "data_dependent");
  EXPECT_EQ(problem["user_frame"]["line"], 6);
  EXPECT_EQ(problem["advice"][0]["kind"], "torch_check");
  EXPECT_EQ(problem["advice"][0]["apply"]["action"], "insert_before");
  EXPECT_EQ(problem["constraints"][0]["asked"], json::parse("[2, null]"));
  EXPECT_TRUE(problem["constraints"][0]["allowed"].is_null());
  EXPECT_TRUE(problem["constraints"][0]["user_frame"].is_null());
  EXPECT_FALSE(problem.contains("values"));  // only a runtime failure has its call's values
  const json& u0 = problem["symbols"][0];
  EXPECT_EQ(u0["range"], json::parse(R"([0, "int_oo"])"));
  EXPECT_EQ(u0["value_on_run"], json::parse(R"({"value": 3, "from": "outputs"})"));
  EXPECT_TRUE(u0["hint"].is_null());
  EXPECT_EQ(u0["guards"][0]["python"], "u0 == 0");
  EXPECT_EQ(j["compiles"][0]["calls"], 1);
  EXPECT_FALSE(j["compiles"][0].contains("recompile"));

  const json& again = j["compiles"][1];
  EXPECT_TRUE(again["calls"].is_null());
  EXPECT_EQ(again["recompile"]["from"], "reason_text");
  EXPECT_EQ(again["recompile"]["cause"], "float_constant");
  EXPECT_EQ(again["recompile"]["seen"], "0.7");
  EXPECT_EQ(again["recompile"]["advice"], json::array());
  EXPECT_EQ(again["recompile"]["causes"][1]["primary"], false);
  const json& function = j["functions"][0];
  EXPECT_EQ(function["causes"][0]["count"], 1);
  EXPECT_EQ(function["causes"][0]["compile_ids"], json::array({"1/1"}));
  EXPECT_TRUE(function["causes"][0]["advice"].is_null());
}

TEST(WhyOutput, RuntimeFailureCarriesItsCallsValues) {
  ProblemAnswer p;
  p.kind = ProblemKind::RuntimeFailure;
  p.runtime = RuntimeCall{2, "__compiled_fn_1", {{"u0", "9"}, {"u1", "not json"}}};
  json j = whyJson({{CompileAnswer{"0/0", "f", "/tmp/job.py", 4, "ok", std::nullopt, {p}, {}, {}, "h"}}, {}});
  const json& problem = j["compiles"][0]["problems"][0];
  EXPECT_EQ(problem["kind"], "runtime_failure");
  EXPECT_EQ(problem["call"], 2);
  EXPECT_EQ(problem["values"], json::parse(R"({"u0": 9, "u1": "not json"})"));
}

TEST(WhyOutput, NothingToExplain) {
  EXPECT_EQ(whyText({}), "nothing to explain: no compile failed, broke its graph or compiled again\n");
  EXPECT_EQ(dumpJson(whyJson({})), R"({"compiles":[],"functions":[]})");
}

}  // namespace
}  // namespace dynrep::replay
