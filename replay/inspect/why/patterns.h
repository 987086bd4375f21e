// The pattern tables of docs/why.md: which advice fits a failed compile or a graph break
// (problems.cc), which kind a failed guard is (guard_text.cc) and which advice fits a recompile
// (advice.cc), each a table of rows. model.cc gathers the facts; these only match them.
// Private to replay/inspect.
// Thread-safety: pure functions over constant tables.
#pragma once

#include <string>
#include <vector>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// Every advice kind (advice_kinds.def); None: no advice.
enum class AdviceKind {
  None,
#define DYNREP_ADVICE_KIND(Enum, id) Enum,
#include "why/advice_kinds.def"
#undef DYNREP_ADVICE_KIND
};

// A kind's stable id, as text and JSON name it: "torch_check"; "" for None.
const char* adviceKindId(AdviceKind kind);
// Every advice kind's id, in the order docs/why.md lists them.
const std::vector<std::string>& adviceKinds();

// An advice that is one mechanical edit, as `why --verify` applies it (docs/why.md, "--verify"):
// action "" (a code change for a person), "insert_before" (`code` as a line before file:line, at
// its indentation), "config" (`code` after the main script's imports) or "replace_mark" (the
// call marking `name` dimension `dim` in `file` becomes `code`).
struct EditAction {
  std::string action;
  std::string file;
  int line = 0;
  std::string code;
  std::string name;
  int dim = 0;
};

struct Advice {
  AdviceKind kind = AdviceKind::None;
  std::string edit;  // the change to make, as code where it can be
  UserFrame line;    // where it goes: the user line, or the compiled function's first line
  std::string why;
  EditAction apply;  // the edit as an action, where it is one
};

// A symbol in a failing expression, as far as the matchers need it.
struct SymbolFacts {
  std::string symbol;  // u0
  bool unbacked = false;
  std::string op;        // the operator that made it: aten.nonzero.default, item
  std::string userName;  // what the user's code calls it, guessed from its origin line: n.shape[0]
  std::string value;     // its value on the captured run, where one was recorded ("" when not)
  UserFrame origin;      // the line that made it
};

// A failed compile or a graph break: what PyTorch said and where.
struct Problem {
  bool graphBreak = false;  // the compile went on in another graph (a failure stops the frame)
  std::string type;         // the exception: UserError, Unsupported
  std::string gbType;       // the graph-break registry's type: Dynamic shape operator
  std::string context;      // its debug context: aten.nonzero.default, attempted to jump with SymNodeVariable()
  std::string expr;         // the expression PyTorch could not decide (sympy): Eq(u0, 0)
  bool integer = false;     // PyTorch needed the value itself, not a true/false answer
  std::string torchSite;    // where in PyTorch it was asked: _dynamo/utils.py:4231 in run_node
  std::string message;      // PyTorch's text, for the matchers that key on its wording
  UserFrame frame;          // the user line
  bool inLibrary = false;   // the line is in another file than the compiled function's, or an installed package
  std::vector<SymbolFacts> symbols;
  std::string kind;  // the failure kind (docs/why.md): data_dependent, constraint_violation, runtime_assert, ...
  std::vector<ConstraintFacts> constraints;  // constraint_violation: each marked dimension
  const CallSite* call = nullptr;            // the call of the compiled function, where recorded
};

// The expression's truth at the recorded symbol values: 1, 0, or -1 when not every value is known.
int truthOnRun(const Problem& p);

// The advice that fits, most likely first; empty when no pattern matches.
std::vector<Advice> adviseProblem(const Problem& p);

// What the user's code calls a symbol, from the op that made it and its origin line
// ("n = torch.nonzero(...)" -> "n.shape[0]", "k = x.sum().item()" -> "k"); "" when unsure.
std::string userNameFor(const std::string& op, const std::string& originCode);

// One recompile cause classified: which pattern, what it is about, and what changed.
struct CauseClass {
  std::string cause;        // float_constant, int_constant, size_changed, size_0_1, dtype_change, ...
  std::string subject;      // what changed, as the user names it: scale, x.size(0)
  std::string description;  // for the per-function summary: "scale changed, a float constant"
  std::string detail;       // with the values: "scale changed, a float constant (0.5, then 0.7)"
};
// `wentDynamic`: the new compile made `subject` a symbol (automatic dynamic shapes did).
CauseClass classifyCause(const RecompileCause& c, bool wentDynamic);
// The advice for a cause, or kind "" when none applies. `fn` is the compiled function; `first`
// its first compile, whose call site names the caller's tensors.
Advice adviseCause(const CauseClass& k, const RecompileCause& c, const Compile& fn, const Compile* first = nullptr);

// The tensor a cause's source is about, as the user names it: "L['x'].size()[0]" -> "x".
std::string prettyTensor(const std::string& source);

// The tensor a guard source is about, as the frame names it: "L['x'].size()[0]" -> "L['x']".
std::string tensorSource(const std::string& source);

}  // namespace dynrep::replay
