// The why-answer: what made a compile fail or happen again, where each symbol in it came from,
// and the edit that fixes it, chosen from the pattern table in docs/why.md. explainJob computes
// it as the structs below; output.h renders them as `why` text, `why --json` and the HTML
// report's sections. Private to replay/inspect.
// Thread-safety: pure functions of an immutable Job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/symbol_table.h"
#include "why/patterns.h"

namespace dynrep::replay {

// A guard or assert on a symbol, with its expression as Python.
struct SymbolGuard {
  ShapeGuard guard;
  std::string python;  // u0 == 0
};

// A symbol's value on the captured run, as capture recorded it.
struct RunValue {
  std::string value;  // the JSON text capture wrote: 9; a string when it is not JSON
  std::string from;   // where it was read: failure, outputs, partial_graph
};

// Everything known of one symbol of a compile.
struct SymbolAnswer {
  std::string symbol;  // u0
  bool unbacked = false;
  std::string userName;                // what the user's code calls it: n.shape[0]; "" when unsure
  std::optional<SymbolOrigin> origin;  // capture's origin, else PyTorch's create event's
  std::optional<std::pair<SymbolNumber, SymbolNumber>> range;  // the final range in the symbol table
  std::string replacedBy;
  std::optional<SymbolNumber> hint;
  std::optional<RunValue> valueOnRun;
  std::vector<SymbolGuard> guards;  // in the order PyTorch added them
};

// A bound a user asked for or the code allows; none is unbounded.
using Bounds = std::pair<std::optional<int64_t>, std::optional<int64_t>>;

// One marked dimension of a constraint violation.
struct ConstraintAnswer {
  std::string source;  // L['x'].size()[0]
  int dim = 0;
  std::optional<Bounds> asked;         // none: only "dynamic" was asked
  std::optional<int64_t> specialized;  // the constant the code made it
  std::string symbol;                  // else its symbol
  std::optional<Bounds> allowed;       // and the range the code allows, where recorded
  UserFrame userFrame;
};

// A call of compiled code that raised during capture.
struct RuntimeCall {
  int64_t call = 0;  // which call: 1 is the first
  std::string graph;
  std::map<std::string, std::string> values;  // symbol -> its value then, as capture wrote it
};

enum class ProblemKind {
  Failure,         // the compile stopped with an error
  GraphBreak,      // the compile went on in another graph
  RuntimeFailure,  // the compiled code raised when it ran
};

// A failed compile, a graph break or a failure at run time, with its facts and advice.
struct ProblemAnswer {
  ProblemKind kind = ProblemKind::Failure;
  std::string failureKind;  // docs/why.md's: data_dependent, runtime_assert, ...; "" in older stores
  std::string headline;
  std::string type;  // the exception: UserError, Unsupported
  std::vector<ConstraintAnswer> constraints;
  std::vector<std::string> chain;  // exception types, outermost first
  std::string gbType;
  std::string context;
  std::string expr;  // sympy: Eq(u0, 0)
  std::string exprPython;
  bool integer = false;
  std::string torchSite;
  std::string message;  // PyTorch's first line
  UserFrame userFrame;  // file empty when none is known
  bool inLibrary = false;
  std::vector<SymbolAnswer> symbols;  // all, or only the asked symbol
  std::vector<Advice> advice;         // most likely first
  std::vector<std::string> pytorchHints;
  std::optional<RuntimeCall> runtime;  // kind RuntimeFailure: the call that raised
};

// One cache entry's failed guard, classified.
struct CauseAnswer {
  RecompileCause cause;
  CauseClass cls;
  bool primary = false;  // the one that explains the recompile
};

// Where a recompile's causes were read.
enum class CauseSource {
  Event,       // capture's recompile events
  ReasonText,  // PyTorch's reason text
};

// Why a compile happened again: the explaining cause, its advice, and every entry's cause.
struct RecompileAnswer {
  RecompileCause main;  // empty when no failed guard was recorded
  CauseSource from = CauseSource::Event;
  CauseClass cls;  // cause "unknown" when no failed guard was recorded
  std::optional<Advice> advice;
  std::vector<CauseAnswer> causes;  // newest entry first
};

// One compile that failed, broke its graph, compiled again, or was asked about.
struct CompileAnswer {
  std::string compileId;  // 0/1
  std::string function, file;
  int line = 0;
  std::string status;            // its first line
  std::optional<int64_t> calls;  // none when capture did not count them
  std::vector<ProblemAnswer> problems;
  std::optional<RecompileAnswer> recompile;
  std::optional<SymbolAnswer> symbol;  // the symbol asked for, where this compile knows it
  std::string headline;
};

// One kind of recompile cause of a function, and the compiles it made.
struct CauseSummary {
  CauseClass cls;
  std::optional<Advice> advice;
  std::vector<std::string> compileIds;
};

// A function compiled more than once.
struct FunctionSummary {
  std::string function, file;
  int line = 0;
  int compiles = 0;
  std::string summary;               // "3 compiles of step: scale changed, a float constant (2)"
  std::vector<CauseSummary> causes;  // first seen first
};

struct WhyAnswer {
  std::vector<CompileAnswer> compiles;
  std::vector<FunctionSummary> functions;
};

// The answer for a whole job (docs/replay-inspect.md, "replay-inspect why --json"): one entry per
// compile that failed, broke its graph or compiled again (only `compileId` when given), and one
// summary per function compiled more than once. With `symbol`, the compiles that know it, each
// with its provenance, and no summaries. Never throws for odd store contents: a fact that cannot
// be read is left empty.
WhyAnswer explainJob(const Job& job, const std::string& compileId = "", const std::string& symbol = "");

}  // namespace dynrep::replay
