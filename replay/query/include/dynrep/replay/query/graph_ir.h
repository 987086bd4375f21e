// The graph IR (docs/capture-schema.md, "Graph IR") as types: one stored FX/aten graph, parsed and
// version-checked once by parseGraph; every C++ reader (query, inspect, run, mlir) takes a Graph.
// Thread-safety: a Graph is a value; distinct objects may be used from distinct threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dynrep/store/status.h"

namespace dynrep::replay {

// The formats this reader knows: 1 (parsed from printed text), 2 (read from the graph module).
inline constexpr int kGraphIrOldestFormat = 1;
inline constexpr int kGraphIrNewestFormat = 2;

// A node argument ("Arguments" in the schema doc): a plain JSON value or a one-key object.
struct Argument {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Ref,    // text: the node whose value it is
    Tuple,  // items (also torch.Size)
    DType,
    Layout,
    MemoryFormat,
    Device,  // text: float32, strided, contiguous_format, cpu
    Sym,     // text: a symbolic expression not bound to a node
    Slice,   // items: start, stop, step
    Ellipsis,
    Complex,   // items: real, imaginary
    Callable,  // text: its qualified name ({"py": ...})
    Repr,      // text: anything else, which nothing can rebuild
    Expr,
    Enum,  // format 1 only: text as printed (`{"expr"}`, `{"enum": "torch.channels_last"}`)
  };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;  // Float: finite, or inf/-inf/nan from {"float": "inf"}
  std::string text;
  std::vector<Argument> items;

  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(integer) : real; }
  bool isSequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  // The argument as the IR's compact JSON spells it (for messages): 2, "a", {"ref":"x"}, [1,2].
  std::string spelling() const;
  // The IR's key of a one-key object form (ref, tuple, float, dtype, ...); "" for a plain value.
  std::string key() const;
};

// One dimension or stride: a number, or a symbolic expression as sympy prints it ("s0*4").
struct Dimension {
  int64_t size = 0;
  std::string expr;  // empty: static
  bool isStatic() const { return expr.empty(); }
  std::string str() const { return isStatic() ? std::to_string(size) : expr; }
};

struct TensorMeta {
  std::string dtype;  // float32, int64, ... as PyTorch names it without "torch."
  std::vector<Dimension> shape;
  std::optional<std::vector<Dimension>> stride;  // none for sparse or nested tensors, and in format 1 where not printed
  std::optional<Dimension> storageOffset;        // beside stride, since 2026-11-28
  std::string device;
  bool requiresGrad = false;
};

// What a node produces ("outputs" entries), or what a graph constant or sample describes.
struct ValueMeta {
  enum class Kind {
    Tensor,       // tensor
    Symbolic,     // sym (an expression) of symType int, float or bool ("" in format 1)
    Plain,        // value: a plain scalar
    Unsupported,  // text: the Python type
    Unparsed,     // format 1: text, the annotation it could not read
  };
  Kind kind = Kind::Unsupported;
  TensorMeta tensor;
  std::string sym, symType;
  Argument value;
  std::string text;
  bool isTensor() const { return kind == Kind::Tensor; }
};

// The innermost frame of a node's stack trace.
struct SourceLocation {
  std::string file;
  int64_t line = 0;
  std::string function, code;
};

// One module of a node's scope, outermost first: blocks.0.fc1 (torch.nn.modules.linear.Linear).
struct ScopeEntry {
  std::string path, className;
};

// A placeholder's role among the graph's inputs.
struct InputRole {
  std::string role;    // parameter, buffer, user_input, symbol
  std::string name;    // a parameter's or buffer's qualified name: fc1.weight
  std::string symbol;  // role symbol: s0
  std::string source;  // Dynamo's source: L['x'], L['x'].size()[0]
  bool isWeight() const { return role == "parameter" || role == "buffer"; }
};

// Which stored value feeds a placeholder (graph_samples.h resolves it against the samples).
struct Feed {
  enum class Kind {
    SampleInput,    // index: input of the compile's forward sample
    Tangent,        // index: the backward's tangent; gradOutput: gradient of the backward sample
    ForwardOutput,  // index: output of the compile's forward graph (a value saved for the backward)
  };
  Kind kind = Kind::SampleInput;
  size_t index = 0;
  std::optional<size_t> gradOutput;  // Tangent, since it was written
};

struct Node {
  enum class Op { Placeholder, CallFunction, CallMethod, CallModule, GetAttr, Output, Expr /* format 1 */ };
  size_t position = 0;  // in the graph
  std::string name;
  Op op = Op::CallFunction;
  std::string opName;  // as written: placeholder, call_function, ...
  std::string target;  // empty for placeholders and output
  std::vector<Argument> args;
  std::map<std::string, Argument> kwargs;
  std::vector<ValueMeta> outputs;
  std::string stackTrace;
  std::optional<SourceLocation> location;
  std::vector<ScopeEntry> scope;
  std::optional<int64_t> seqNr;
  std::optional<InputRole> input;  // placeholders
  std::optional<Feed> feed;        // placeholders a stored value feeds

  bool is(Op o) const { return op == o; }
  // The first output's description, or null when the node records none.
  const ValueMeta* meta() const { return outputs.empty() ? nullptr : &outputs[0]; }
  // The target for a call, else the op name: what a report calls the node.
  const std::string& what() const { return target.empty() ? opName : target; }
};

struct SchemaArgument {
  std::string name, type;  // type as in native function schemas: Tensor, Scalar, int[1]?
  bool kwargOnly = false;
  std::optional<std::string> defaultValue;  // its text: None, 1, [0, 0], "mean"
};

struct Schema {
  std::string text;
  bool typed = false;  // arguments and returns were read (a custom op torchgen cannot read has text only)
  std::vector<SchemaArgument> arguments;
  std::vector<SchemaArgument> returns;
};

// A get_attr target's tensor: its description, and where its bytes are (or why they are not).
struct Constant {
  std::optional<TensorMeta> tensor;  // none: not a tensor (unsupported)
  std::string unsupported;           // the Python type when not a tensor
  std::string blob;                  // empty: not stored, `skipped` says why
  std::optional<uint64_t> bytes;
  std::string skipped;
};

// What one value the graph returns should equal.
struct ResultSource {
  enum class Kind { SampleOutput, GradInput, Symbol, MutatedInput, Saved };
  Kind kind = Kind::Saved;
  size_t index = 0;  // SampleOutput, GradInput, MutatedInput
};

struct Graph {
  int format = kGraphIrOldestFormat;
  std::string event;                      // the trace event: aot_forward_graph, ...; "" where the document does not say
  std::string origin;                     // graph or text
  std::string opset;                      // "" or core_aten
  std::vector<Node> nodes;                // in graph order; names are unique
  std::map<std::string, Schema> schemas;  // by operator target
  std::map<std::string, Constant> constants;  // by get_attr target
  std::vector<ResultSource> results;

  const Node* find(const std::string& name) const;
  const Node* output() const;  // the output node, or null
  std::vector<const Node*> placeholders() const;
  // What the output node returns, one level unpacked (graphs return one tuple); empty without one.
  std::vector<Argument> returned() const;
  // The operator's schema when the IR stored one with its arguments, else null.
  const Schema* schema(const std::string& target) const;
  // Operator target -> how many call_function nodes call it.
  std::map<std::string, int> operatorCounts() const;
};

// Parses and checks one graph IR document. The status (Corruption, or NotSupported for a format
// this reader does not know) names the node and field: "graph ir: node 12 (add): args[1]: ...".
Result<Graph> parseGraph(const nlohmann::json& document);
Result<Graph> parseGraph(const std::string& text);

class Job;
struct Compile;
// The graph IR stored under `blobKey`, read and parsed; the status says which of the two failed.
Result<Graph> readGraph(const Job& job, const std::string& blobKey);

// What feeds and checks a graph ("Symbols and samples of a compile" in the schema doc).

// One value of a first-call sample (dynamo_replay.sample): a tensor with its bytes or why they
// were not stored, a scalar, or a gradient that never flowed.
struct SampleValue {
  enum class Kind { Tensor, Scalar, Null, Unsupported };
  Kind kind = Kind::Null;
  std::string dtype, device;
  std::vector<Dimension> shape;
  std::optional<std::vector<Dimension>> stride;  // written beside `skipped`
  std::string blob;                              // empty: not stored, `skipped` says why
  std::optional<uint64_t> bytes;
  std::string skipped;
  bool parameter = false;
  std::optional<double> mean, std;  // a float tensor that was not stored
  std::optional<int64_t> min, max;  // an integer one
  Argument value;                   // Scalar: a number, a bool, or a SymInt as text; None for Null
  std::string unsupported;          // the Python type
  bool stored() const { return !blob.empty(); }
  // Described but not stored (over the sample cap): random stand-ins fill it.
  bool described() const { return kind == Kind::Tensor && blob.empty(); }
};

struct Sample {
  std::string graph;             // the compiled graph global
  std::string pass = "forward";  // forward (the first call) or backward (the first backward)
  std::vector<SampleValue> inputs, outputs;
  std::optional<SampleValue> rngState;  // forward: the CPU generator's state before the call
};

// A sample event's metadata; the status names the field.
Result<Sample> parseSample(const std::string& metadataJson);

}  // namespace dynrep::replay
