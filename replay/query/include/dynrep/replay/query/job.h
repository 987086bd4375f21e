// Job: the compiles of a captured torch.compile job, rebuilt from a store's trace events and
// code records without PyTorch: the query layer of offline replay that replay-inspect reads.
// Thread-safety: a Job is immutable after load(); it reads blobs through its StoreReader,
// which must outlive it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dynrep/capture/records.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

struct UserFrame {
  std::string file;
  int line = 0;
  std::string function;
  std::string code;  // the source line, where PyTorch recorded it
};

// A symbolic-shapes event: a symbol created (backed or unbacked), a guard added, a specialization.
struct ShapeEvent {
  std::string event;  // create_symbol, create_unbacked_symbol, guard_added_fast, ...
  std::string symbol;
  std::string valueRange;
  std::string source;  // input source of a backed symbol: L['x'].size()[0]
  std::string expr;    // guard expression, where there is one
  std::string value;   // hint or specialized value
  std::vector<UserFrame> userStack;
};

// A guard PyTorch's caching precompile left out of the saved frame, as capture recorded it
// (or, kind CLASS_CONTENTS, a user class whose methods replay re-checks).
struct DroppedGuard {
  std::string kind;    // ID_MATCH, CLOSURE_MATCH, ...
  std::string source;  // G['act']
  std::string value;   // what it checked, described so two processes can compare
  std::string line;    // the user line that made Dynamo guard it
  bool risky = true;   // on user code: replay re-checks it; else pinned by the torch build
};

// Where a symbol came from, as capture recorded it when the symbol was made
// (dynamo_replay.symbol_origin).
struct SymbolOrigin {
  std::string symbol;  // s0, u0, zf0
  bool unbacked = false;
  std::string phase;       // dynamo, aot or inductor: which stage of the compile made it
  std::string op;          // the operator that produced it: aten.nonzero.default, torch.Tensor.item
  std::string node;        // the FX node it was made for, where one was found
  std::string source;      // an input's size or value for a backed symbol: L['x'].size()[0]
  std::string value;       // its value at capture (a backed symbol's hint)
  UserFrame userFrame;     // file empty when no user line is known
  std::string attributed;  // where userFrame came from: user_stack or graph_node
};

// A guard or runtime assert on symbols (dynamo_replay.shape_guard), in the order PyTorch added them.
struct ShapeGuard {
  std::string expr;  // Eq(u0, 0), 2 <= s0
  std::string kind;  // guard, runtime_assert or guard_suppressed
  std::vector<std::string> symbols;
  UserFrame userFrame;
};

// One dimension a user marked dynamic (mark_dynamic, Dim) that the code would not allow.
struct ConstraintFacts {
  std::string source;  // L['x'].size()[0]
  std::string tensor;  // L['x']
  int dim = 0;
  bool ranged = false;              // a range was asked for (min/max), else only "dynamic"
  std::string askedLow, askedHigh;  // "" = unbounded
  bool specialized = false;         // the code made it this constant:
  int64_t value = 0;
  std::string symbol;                   // else its symbol, and the range the code allows:
  std::string allowedLow, allowedHigh;  // "" = unbounded or not recorded
  UserFrame userFrame;                  // the line that specialized it, where PyTorch kept one
};

// A failed compile (dynamo_replay.compile_failure) or a graph break (dynamo_replay.graph_break):
// the facts apart from PyTorch's message.
struct CompileFailure {
  std::string type;                  // UserError, Unsupported, ...
  std::vector<std::string> chain;    // exception types, outermost first (UserError, GuardOnDataDependentSymNode)
  std::string kind;                  // data_dependent, constraint_violation, ... (docs/why.md); "" in older stores
  std::string expr;                  // the expression it could not decide, where there is one: Eq(u0, 0)
  std::vector<std::string> symbols;  // the symbols in expr
  bool integer = false;              // PyTorch needed the number itself, not a true/false answer
  std::string gbType;                // a graph break's registry type: Dynamic shape operator
  UserFrame userFrame;               // the user line it failed at
  std::string message;               // the exception's first line
  std::vector<ConstraintFacts> constraints;
};

// A deferred runtime assert that did not hold when the compiled code ran.
struct FailedAssert {
  std::string expr;  // Eq(Mod(u0, 2), 0)
  std::vector<std::string> symbols;
  UserFrame userFrame;  // the user line that made PyTorch assert it
};

// A call of compiled code that raised during capture (dynamo_replay.runtime_failure).
struct RuntimeFailure {
  std::string graph;  // __compiled_fn_1...
  int64_t call = 0;   // which call of it: 1 is the first
  std::string type, message;
  std::map<std::string, std::string> values;  // symbol -> its value then: u0 -> 9
  std::vector<FailedAssert> asserts;          // the asserts those values break, in PyTorch's order
};

// The user line that called a compiled function (dynamo_replay.call_site).
struct CallSite {
  UserFrame userFrame;
  std::map<std::string, std::string> arguments;  // input source -> the caller's name: L['x'] -> ids
};

// One cache entry's failed guard that made this compile happen (dynamo_replay.recompile).
struct RecompileCause {
  std::string entry;     // the compile whose guards failed: 0/0
  std::string guard;     // the failing guard as PyTorch names it: L['scale'] == 0.5
  std::string source;    // what it checks: L['scale'], L['x'].size()[0]
  std::string expected;  // what the entry was compiled for, where known: 0.5
  std::string seen;      // the value the call brought: 0.7
  std::string text;      // PyTorch's reason line
  std::string from;      // "compared": found by comparing the graph's inputs with the call's; "" from the text
};

struct Compile {
  capture::CompileId id;
  std::string function, file;
  int firstLine = 0;
  std::string reason;  // "first compile", or why the previous entry's guards failed
  std::string status;  // "ok", or the failure type and reason
  uint64_t guardCount = 0;
  std::string guardTreeKey;                     // blob: the guard tree as PyTorch renders it
  std::string guardListKey;                     // blob: JSON list of {kind, source, code, file, line, ...}
  std::map<std::string, std::string> graphs;    // trace event name -> blob key of its code
  std::map<std::string, std::string> graphIrs;  // aten graph event name -> blob key of its IR (JSON)
  // The same graphs decomposed to the Core ATen opset: event -> IR blob, or why there is none.
  std::map<std::string, std::string> coreAtenIrs, coreAtenErrors;
  // First-call samples, one JSON object per compiled graph: {graph, inputs, outputs}, each value
  // {dtype, shape, device, blob, bytes, parameter} or {value}; "skipped" when over the cap.
  std::vector<std::string> samples;
  std::string symbolsKey;  // blob: the symbol table, JSON [{symbol, range, source, hint}]
  std::vector<ShapeEvent> shapes;
  std::vector<std::string> graphBreaks;
  std::map<std::string, double> phaseSeconds;  // from compilation_metrics "*_time_s"
  std::vector<capture::CodeObject> code;
  std::vector<DroppedGuard> dropped;
  std::string notSaved;  // why PyTorch's precompile could not save this frame; empty when it did
  // Event name -> how many of this compile's events had metadata of other types than PyTorch
  // and capture write (what could be read of them was used; the rest is shown as unreadable).
  std::map<std::string, int> unreadable;
  // Symbolic-shape provenance and failures, from capture's own events (see the structs above).
  std::vector<SymbolOrigin> origins;
  std::vector<ShapeGuard> shapeGuards;
  bool failed = false;  // failure below is filled
  CompileFailure failure;
  std::vector<RecompileCause> recompileCauses;
  std::vector<CompileFailure> graphBreakFacts;  // one per graph break, in order (capture's events)
  std::vector<RuntimeFailure> runtimeFailures;
  // Real values of unbacked symbols: symbol -> {value, where from (outputs, partial_graph, failure)}.
  std::map<std::string, std::pair<std::string, std::string>> symbolValues;
  CallSite callSite;
  int64_t calls = -1;      // how many times this compile's code ran during capture; -1 not counted
  int64_t generation = 0;  // 0: the capture; G: added by the store's G-th update (replay --update)
};

class Job {
 public:
  static Result<Job> load(const StoreReader& reader);
  const std::vector<Compile>& compiles() const { return compiles_; }
  const Compile* find(const std::string& compileId) const;  // "0/1"
  size_t frameCount() const;
  // A blob's bytes, or why they cannot be read (a bad key, a missing or damaged blob).
  Result<std::string> blob(const std::string& key) const;
  // A blob's text (payloads are UTF-8), "" for no key, or why it cannot be read.
  Result<std::string> text(const std::string& key) const;

 private:
  const StoreReader* reader_ = nullptr;
  std::vector<Compile> compiles_;  // ordered by compile id
};

// What a report shows for a blob's text: the text, or its read error in brackets where the
// text would be.
std::string shownText(const Result<std::string>& text);

// A store opened with its job: the reader the job reads blobs through, kept alive beside it.
struct OpenedJob {
  std::unique_ptr<StoreReader> reader;
  Job job;
};
// Opens `path` and loads its job; the status names the file and what is wrong with it.
Result<OpenedJob> openJob(const std::string& path);

}  // namespace dynrep::replay
