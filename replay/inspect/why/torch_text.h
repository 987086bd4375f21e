// Reading PyTorch 2.13's own texts for the why-answer: graph-break reasons, data-dependent
// errors, recompile reason lines and sympy expressions. Capture's structured events say most
// of this for new stores; these parsers fill what an older store (or a graph break, which has
// no failure event) only has as text. Private to replay/inspect.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// A graph break as PyTorch's unimplemented() words it (torch/_dynamo/exc.py): the registry's
// type and id, its explanation and hints, and the user line it happened at.
struct GraphBreakText {
  std::string gbType;   // Dynamic shape operator
  std::string gbId;     // GB0036, from the link to PyTorch's graph-break site
  std::string context;  // "Developer debug context": aten.nonzero.default
  std::string explanation;
  std::vector<std::string> hints;
  UserFrame frame;  // the innermost frame of "User code traceback:", else the header's file:line
};
// Reads a graph-break reason payload, or a failure's status that holds one (fullgraph=True).
GraphBreakText parseGraphBreak(const std::string& text);

// ShapeEnv._make_data_dependent_error's text (torch/fx/experimental/symbolic_shapes.py).
struct DataDependentText {
  std::string expr;       // Eq(u0, 0)
  bool integer = false;   // "Could not extract specialized integer": it needed the value itself
  std::string torchSite;  // where PyTorch asked: _dynamo/variables/tensor.py:2606 in evaluate_expr
  UserFrame frame;        // "User Stack (most recent call last):"'s last frame, else "Caused by:"'s line
};
std::optional<DataDependentText> parseDataDependent(const std::string& text);

// The user frame a text names last ("File "f.py", line 6, in fn" then the code line); file
// empty when it names none.
UserFrame lastFileFrame(const std::string& text);

// Compile::reason ("0/1: tensor 'x' size mismatch at index 0. expected 8, actual 16", one line
// per cache entry whose guards failed, newest first) as causes with entry, guard, source and
// the expected and seen values where the line states them.
std::vector<RecompileCause> parseReasons(const std::string& reasonText);

// The symbols an expression names, in order of first appearance: s0, u0, zuf0.
std::vector<std::string> symbolsIn(const std::string& expr);
// "L['x'].size()[0]" -> "x.size(0)": a guard's source as the user's code would name it.
std::string prettySource(const std::string& source);
// A sympy relation as Python: "Eq(u0, 0)" -> "u0 == 0", "Ne", "Mod", "Max", "Min" likewise.
std::string pythonExpr(const std::string& sympyExpr);
// `expr` with each whole-word symbol replaced by its user name, where one is given.
std::string renameSymbols(const std::string& expr, const std::vector<std::pair<std::string, std::string>>& names);

}  // namespace dynrep::replay
