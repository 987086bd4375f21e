// The guard-text and recompile-advice tables row by row: one line per row, from a reason line
// PyTorch 2.13 writes to the cause, the summary's description, the advice kind and its edit; and
// the advice kinds agreeing with docs/why.md's table both ways.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "why/patterns.h"
#include "why/torch_text.h"

namespace dynrep::replay {
namespace {

struct GuardRow {
  const char* reason;       // PyTorch's reason line, after "0/0: "
  bool wentDynamic;         // the new compile made the subject a symbol
  const char* cause;        // guard_text.cc's row
  const char* description;  // as the per-function summary says it
  const char* advice;       // advice.cc's row: the kind's id, "" for none
  const char* edit;         // a part of the advice's edit
};

const GuardRow kGuardRows[] = {
    {"2 <= x.size()[0]  # return x * 2  # m.py:5 in f (... 0/1 specialization ...)", false, "size_0_1",
     "x.size(0) == 0 or 1 outside the dynamic range", "mark_unbacked", "torch._dynamo.mark_unbacked(x, 0)"},
    {"tensor 'x' size mismatch at index 0. expected 8, actual 16", false, "size_changed", "x.size(0) changed",
     "mark_dynamic", "torch._dynamo.mark_dynamic(x, 0)  # before the first call; or dynamic=True"},
    {"tensor 'x' size mismatch at index 1. expected 8, actual 16", true, "size_changed", "x.size(1) went dynamic",
     "mark_dynamic", "torch._dynamo.mark_dynamic(x, 1)"},
    {"tensor 'x' dtype mismatch. expected Float, actual Double", false, "dtype_change", "x's dtype changed",
     "dtype_change", "x.to(torch.float32)"},
    {"tensor 'x' requires_grad mismatch. expected requires_grad=0", false, "requires_grad_change",
     "x.requires_grad changed", "requires_grad_change", "x.detach() (or under torch.no_grad())"},
    {"tensor 'x' rank mismatch. expected 1, actual 2", false, "rank_change", "x's number of dimensions changed", "",
     ""},
    {"tensor 'x' stride mismatch at index 0. expected 1, actual 2", false, "stride_change", "x.stride(0) changed",
     "contiguous", "pass x.contiguous() to step"},
    {"___check_obj_id(L['fn'], 140)", false, "object_changed", "", "", ""},
    {"___check_type_id(L['cfg'], 94)", false, "type_changed", "", "", ""},
    {"scale == 0.5", false, "float_constant", "scale changed, a float constant", "float_constant",
     "pass scale as a tensor (torch.tensor(0.5))"},
    {"len(L['xs']) == 3", false, "length_changed", "len(xs) changed", "", ""},
    {"L['n'] == 3", false, "int_constant", "n changed, an int constant", "mark_dynamic",
     "torch.compile(step, dynamic=True), or pass n as a tensor"},
    {"L['mode'] == 'a'", false, "constant_changed", "mode changed, a constant", "", ""},
    {"___some_new_guard(L['x'])", false, "other", "guard ___some_new_guard(L['x']) failed", "", ""},
};

Compile compiledStep() {
  Compile fn;
  fn.function = "step";
  fn.file = "/tmp/why/m.py";
  fn.firstLine = 3;
  return fn;
}

TEST(WhyTables, EveryGuardTextRow) {
  Compile fn = compiledStep();
  std::set<std::string> causes;
  for (const GuardRow& row : kGuardRows) {
    SCOPED_TRACE(row.reason);
    std::vector<RecompileCause> parsed = parseReasons(std::string("0/0: ") + row.reason);
    ASSERT_EQ(parsed.size(), 1u);
    CauseClass k = classifyCause(parsed[0], row.wentDynamic);
    causes.insert(k.cause);
    EXPECT_EQ(k.cause, row.cause);
    if (*row.description) EXPECT_EQ(k.description, row.description);
    Advice a = adviseCause(k, parsed[0], fn);
    EXPECT_EQ(adviceKindId(a.kind), std::string(row.advice));
    EXPECT_NE(a.edit.find(row.edit), std::string::npos) << a.edit;
    if (a.kind != AdviceKind::None) {
      EXPECT_FALSE(a.why.empty());
      EXPECT_EQ(a.line.line, 3) << "recompile advice goes at the compiled function's first line";
    }
  }
  EXPECT_EQ(causes.size(), std::size(kGuardRows) - 1) << "each guard-text row once (size_changed twice)";
}

// Capture compared the graph's inputs with the call's: the source alone says what moved.
TEST(WhyTables, ComparedInputsUseTheSameRows) {
  struct Row {
    const char* source;
    const char* cause;
  };
  const Row kRows[] = {{"L['x'].size()[0]", "size_changed"},
                       {"L['x'].dtype", "dtype_change"},
                       {"L['x'].dim()", "rank_change"},
                       {"L['x'].requires_grad", "requires_grad_change"}};
  for (const Row& row : kRows) {
    RecompileCause c;
    c.source = row.source;
    c.expected = "8";
    c.seen = "16";
    c.from = "compared";
    EXPECT_EQ(classifyCause(c, false).cause, row.cause) << row.source;
  }
}

// Where the first call names the tensor, the mark goes before that call, as an action.
TEST(WhyTables, MarksGoBeforeTheCallThatNamesTheTensor) {
  Compile fn = compiledStep();
  Compile first = fn;
  first.callSite.userFrame = {"/tmp/why/main.py", 12, "<module>", "step(ids)"};
  first.callSite.arguments = {{"L['x']", "ids"}};
  struct Row {
    const char* reason;
    const char* advice;
    const char* code;
  };
  const Row kRows[] = {
      {"tensor 'L['x']' size mismatch at index 0. expected 8, actual 16", "mark_dynamic",
       "torch._dynamo.mark_dynamic(ids, 0)"},
      {"2 <= L['x'].size()[0]  # (... 0/1 specialization ...)", "mark_unbacked", "torch._dynamo.mark_unbacked(ids, 0)"},
  };
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.reason);
    RecompileCause c = parseReasons(std::string("0/0: ") + row.reason).at(0);
    c.source = "L['x'].size()[0]";  // capture's recompile event names it where the text does not
    Advice a = adviseCause(classifyCause(c, false), c, fn, &first);
    EXPECT_EQ(adviceKindId(a.kind), std::string(row.advice));
    EXPECT_EQ(a.line.line, 12);
    EXPECT_EQ(a.apply.action, "insert_before");
    EXPECT_EQ(a.apply.code, row.code);
  }
}

// A stride recompile's fix goes where the new layout came from: the recompile's own call, in its name.
TEST(WhyTables, TheStrideFixGoesAtTheCallThatBroughtTheLayout) {
  Compile fn = compiledStep();
  fn.callSite.userFrame = {"/tmp/why/main.py", 20, "<module>", "step(ids.t())"};
  fn.callSite.arguments = {{"L['x']", "ids"}};
  RecompileCause c = parseReasons("0/1: tensor 'L['x']' stride mismatch at index 0. expected 8, actual 1").at(0);
  Advice a = adviseCause(classifyCause(c, false), c, fn);
  EXPECT_EQ(adviceKindId(a.kind), std::string("contiguous"));
  EXPECT_NE(a.edit.find("pass ids.contiguous() at main.py:20"), std::string::npos) << a.edit;
  EXPECT_EQ(a.line.line, 20);
  EXPECT_EQ(a.line.file, "/tmp/why/main.py");
}

// advice_kinds.def, the tables and docs/why.md's "Advice patterns" table name the same kinds.
TEST(WhyTables, AdviceKindsAgreeWithTheDocs) {
  std::ifstream in(std::string(DYNREP_SOURCE_DIR) + "/docs/why.md");
  ASSERT_TRUE(in) << "docs/why.md";
  std::stringstream doc;
  doc << in.rdbuf();
  std::string text = doc.str();
  size_t from = text.find("\n## Advice patterns\n");
  ASSERT_NE(from, std::string::npos) << "docs/why.md: no section Advice patterns";
  size_t to = text.find("\n## ", from + 1);
  std::string section = text.substr(from, to == std::string::npos ? std::string::npos : to - from);
  std::vector<std::string> documented;
  static const std::regex kRow(R"(\n\| `([a-z_0-9]+)` \|)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), kRow); it != std::sregex_iterator(); ++it)
    documented.push_back((*it)[1]);
  EXPECT_EQ(documented, adviceKinds()) << "docs/why.md lists the kinds of advice_kinds.def, in its order";
  std::set<std::string> ids;
  for (const std::string& kind : adviceKinds()) ids.insert(kind);
  EXPECT_EQ(ids.size(), adviceKinds().size()) << "an id names one kind";
  EXPECT_EQ(adviceKindId(AdviceKind::None), std::string(""));
}

}  // namespace
}  // namespace dynrep::replay
