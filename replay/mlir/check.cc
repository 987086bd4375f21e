// lower-check: lowers each aten graph of a store, verifies it, JIT-compiles it and runs it on
// the stored samples, feeding a backward graph the saved values its forward graph (also run
// through MLIR) returns, and compares with what the job produced.
#include "dynrep/replay/mlir/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "dynrep/replay/query/graph_events.h"
#include "dynrep/replay/query/graph_samples.h"
#include "dynrep/replay/query/sizes.h"
#include "dynrep/replay/query/symbol_table.h"
#include "dynrep/replay/query/tensor_file.h"
#include "engine.h"
#include "iree.h"
#include "process.h"

namespace dynrep::replay::lowering {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

HostValue fromEntry(const Job& job, const SampleValue& entry) {
  using A = Argument::Kind;
  if (entry.kind == SampleValue::Kind::Null) return HostValue();
  if (entry.kind == SampleValue::Kind::Scalar) {
    const Argument& v = entry.value;
    HostValue out;
    if (v.kind == A::Bool)
      out.kind = HostValue::Kind::Bool, out.integer = v.boolean;
    else if (v.kind == A::Int)
      out.kind = HostValue::Kind::Int, out.integer = v.integer;
    else if (v.kind == A::Float)
      out.kind = HostValue::Kind::Float, out.real = v.real;
    else if (v.kind == A::String)
      out.kind = HostValue::Kind::Int, out.integer = std::stoll(v.text);
    return out;
  }
  if (!entry.stored())
    throw StoreError("a value was not stored: " + (!entry.skipped.empty()       ? entry.skipped
                                                   : !entry.unsupported.empty() ? entry.unsupported
                                                                                : "no blob"));
  auto dtype = parseDType(entry.dtype);
  if (!dtype)
    throw StoreError("a stored value of dtype " + (entry.dtype.empty() ? std::string("?") : entry.dtype) +
                     ", which is not lowered");
  std::vector<int64_t> shape;
  for (const Dimension& d : entry.shape) {
    if (!d.isStatic()) throw StoreError("stored tensor " + entry.blob + " has a symbolic shape");
    shape.push_back(d.size);
  }
  HostValue v = HostValue::tensor(*dtype, shape);
  const std::string& key = entry.blob;
  Result<std::string> read = job.blob(key);
  if (!read.isOk()) throw StoreError("stored tensor " + key + ": " + read.status().message());
  const std::string& bytes = *read;
  if (bytes.size() != v.data.size())
    throw StoreError("stored tensor " + key + ": " + std::to_string(bytes.size()) + " bytes where its shape needs " +
                     std::to_string(v.data.size()));
  std::memcpy(v.data.data(), bytes.data(), bytes.size());
  return v;
}

HostValue fromRaw(const RawValue& r) {
  HostValue v;
  if (r.kind == "tensor") {
    auto dtype = parseDType(r.dtype);
    if (!dtype) throw StoreError("replay-run gave a " + r.dtype + " tensor, which is not lowered");
    v = HostValue::tensor(*dtype, r.shape);
    if (r.bytes.size() != v.data.size()) throw StoreError("replay-run's tensor has the wrong size");
    std::memcpy(v.data.data(), r.bytes.data(), r.bytes.size());
  } else if (r.kind == "int") {
    v.kind = HostValue::Kind::Int, v.integer = r.integer;
  } else if (r.kind == "float") {
    v.kind = HostValue::Kind::Float, v.real = r.real;
  } else if (r.kind == "bool") {
    v.kind = HostValue::Kind::Bool, v.integer = r.integer;
  }
  return v;
}

class CompileCheck {
 public:
  CompileCheck(const Job& job, const Compile& compile, const CheckOptions& options)
      : job_(job), compile_(compile), opt_(options), ranges_(symbolRanges(job, compile)), samples_(compile) {}

  // `given`: the graph as lowerStoredGraph already lowered it, checked without lowering it again.
  GraphCheck check(const std::string& event, ChosenGraph* given = nullptr) {
    GraphCheck g;
    g.compile = compile_.id.str();
    g.event = event;
    g.runtime = opt_.runtime;
    if (!ranges_.isOk()) {  // the entry checks need them: nothing runs without
      g.error = ranges_.status();
      return g;
    }
    try {
      Prepared& p = prepare(event, &g, given);
      if (!p.lowered.complete()) {
        // An input or output the lowering cannot represent (a complex tensor, an opaque object)
        // is a value the lowering does not support, not an operator it lacks.
        bool valuesOnly = std::all_of(p.lowered.issues.begin(), p.lowered.issues.end(),
                                      [](const NodeIssue& i) { return i.op == "placeholder" || i.op == "output"; });
        g.stage = valuesOnly ? CheckStage::UnsupportedValue : CheckStage::NotLowered;
        std::string why = std::to_string(p.lowered.issues.size()) +
                          (valuesOnly ? " input(s) or output(s) of a kind not lowered: " : " node(s) not lowered");
        if (valuesOnly)
          for (const NodeIssue& i : p.lowered.issues)
            why += std::string(why.back() == ' ' ? "" : "; ") + (i.op == "output" ? "output " : "input ") + i.node +
                   ": " + i.message;
        g.error = Status::notSupported(why);
        return g;
      }
      if (!p.runnable()) {
        g.stage = p.stage;
        g.error = p.error;
        return g;
      }
      g.stage = CheckStage::Executed;
      std::vector<HostValue> inputs, expected;
      std::vector<int> expectedPositions;
      if (!opt_.sizes.empty() && std::none_of(opt_.sizes.begin(), opt_.sizes.end(),
                                              [&](const auto& size) { return inputsMention(p.ir, size.first); })) {
        g.stage = CheckStage::Static;
        g.error = Status::invalidArgument("none of its inputs has these dynamic sizes: not run at them");
        return g;
      }
      if (opt_.sizes.empty()) {
        try {
          if (p.random()) throw StoreError("it draws random numbers, which replay-run draws as PyTorch does");
          inputs = sampleInputs(p);
          for (const auto& [position, entry] : samples_.expected(p.ir))
            expectedPositions.push_back(position), expected.push_back(fromEntry(job_, *entry));
          if (expected.empty()) throw StoreError("the job stored no outputs for this graph");
        } catch (const StoreError& missing) {
          // A value the capture did not store (over the sample cap, or no sample at all): the
          // libtorch runner fills what is missing with seeded random values of its description
          // and is the reference on those inputs.
          if (opt_.runner.empty()) throw;
          inputs.clear(), expected.clear(), expectedPositions.clear();
          g.reference = std::string("replay-run (") + missing.what() + ")";
          referenceRun(event, p, &inputs, &expected, &expectedPositions);
        }
      } else {
        g.reference = "replay-run on random inputs at the sizes asked for";
        referenceRun(event, p, &inputs, &expected, &expectedPositions);
      }
      checkSizes(p, inputs);
      size_t known = expected.size();
      derivedOutputs(p, inputs, &expected, &expectedPositions);
      if (known == 0 && !expected.empty())
        g.reference = "what the graph returns without computing it (its inputs, sizes of its inputs)";
      if (expected.empty() && p.lowered.outputs.empty() && p.lowered.nodes == 0) {
        g.stage = CheckStage::Matched;  // nothing to compute and nothing returned: nothing can differ
        g.reference = "nothing: a graph of no nodes that returns no value";
        return g;
      }
      auto start = Clock::now();
      std::vector<HostValue> outputs = run(p, inputs);
      g.runSeconds = since(start);
      if (opt_.timeCalls) g.callSeconds = secondsPerCall(p, inputs, g.runSeconds);
      bool all = true;
      std::set<size_t> uninitialized = uninitializedOutputs(p.ir);
      std::map<size_t, size_t> ties = tieOrderedIndices(p.ir);
      std::map<size_t, const HostValue*> want;
      for (size_t i = 0; i < expected.size(); ++i) want[static_cast<size_t>(expectedPositions[i])] = &expected[i];
      for (size_t i = 0; i < expected.size(); ++i) {
        size_t position = static_cast<size_t>(expectedPositions[i]);
        if (position >= outputs.size() || outputs[position].kind == HostValue::Kind::None) continue;
        Comparison c = compare(outputs[position], expected[i], opt_.rtol, opt_.atol);
        if (uninitialized.count(position) && c.status != "shape differs" && c.status != "dtype differs")
          c.status = "uninitialized";  // only its shape means anything
        auto tie = ties.find(position);
        if (c.status == "differs" && tie != ties.end() && want.count(tie->second) && tie->second < outputs.size() &&
            onlyBetweenEqualValues(outputs[position], expected[i], outputs[tie->second], *want[tie->second]))
          c.status = "equal up to ties";
        g.outputs.push_back({static_cast<int>(position), c.status, c.maxAbsDiff});
        all = all && (c.ok() || c.status == "uninitialized" || c.status == "equal up to ties");
      }
      if (expected.empty()) {
        g.error = Status::notFound(
            p.lowered.outputs.empty()
                ? "nothing to compare with: the graph returns no value (what it does is an in-place write into an "
                  "input, which the lowered function does not return, or a runtime assertion)"
                : "nothing to compare with: the job stored no outputs for this graph");
      } else {
        g.stage = all ? CheckStage::Matched : CheckStage::Differs;
      }
    } catch (const StoreError& e) {
      g.error = Status::corruption(e.what());
    } catch (const std::exception& e) {
      g.error = Status::invalidArgument(e.what());
    }
    return g;
  }

 private:
  struct Prepared {
    Graph ir;
    LoweredGraph lowered;
    std::string opset, opsetReason;
    bool random() const {
      return std::any_of(lowered.inputs.begin(), lowered.inputs.end(), [](const Port& p) { return !p.random.empty(); });
    }
    std::unique_ptr<Jit> jit;          // runtime "jit"
    std::unique_ptr<IreeModule> iree;  // runtime "iree"
    bool runnable() const { return jit || iree; }
    CheckStage stage = CheckStage::Lowered;  // where it stopped when there is neither
    Status error;
  };

  Prepared& prepare(const std::string& event, GraphCheck* g, ChosenGraph* given = nullptr) {
    auto it = prepared_.find(event);
    if (it != prepared_.end()) {
      if (g)
        g->nodes = it->second.lowered.nodes, g->issues = it->second.lowered.issues,
        g->operators = it->second.ir.operatorCounts();
      if (g) g->opset = it->second.opset, g->opsetReason = it->second.opsetReason;
      return it->second;
    }
    Prepared& p = prepared_[event];
    LowerOptions lo;
    lo.library = opt_.library;
    lo.ranges = *ranges_;
    lo.compileId = compile_.id.str();
    auto start = Clock::now();
    Result<ChosenGraph> lowered =
        given ? Result<ChosenGraph>(std::move(*given)) : lowerStoredGraph(job_, compile_, event, lo);
    if (!lowered.isOk()) throw StoreError(lowered.status().message());
    ChosenGraph& chosen = *lowered;
    p.ir = std::move(chosen.ir);
    p.lowered = std::move(chosen.lowered);
    p.opset = chosen.opset;
    p.opsetReason = chosen.reason;
    if (g)
      g->lowerSeconds = since(start), g->nodes = p.lowered.nodes, g->issues = p.lowered.issues,
      g->operators = p.ir.operatorCounts();
    if (g) g->opset = p.opset, g->opsetReason = p.opsetReason;
    if (!p.lowered.complete()) return p;
    start = Clock::now();
    std::unique_ptr<Module> module;
    try {
      module = Module::parse(p.lowered.text);
    } catch (const std::exception& e) {
      p.stage = CheckStage::NotVerified;
      p.error = Status::invalidArgument(e.what());
    }
    if (g) g->verifySeconds = since(start);
    if (!module) return p;
    start = Clock::now();
    try {
      if (opt_.runtime == "iree")
        p.iree = IreeModule::compile(opt_.iree, p.lowered.text);
      else
        p.jit = Jit::compile(std::move(module));
    } catch (const std::exception& e) {
      p.stage = CheckStage::NotCompiled;
      p.error = Status::notSupported(e.what());
    }
    if (g) g->jitSeconds = since(start);
    return p;
  }

  // Index outputs of operators that leave the order of equal elements unspecified (topk, and
  // sort unless asked to be stable: PyTorch's kernels pick either index of a tie), each with the
  // position of the values output beside it when the graph returns both.
  static std::map<size_t, size_t> tieOrderedIndices(const Graph& ir) {
    std::set<std::string> unordered;
    for (const Node& node : ir.nodes) {
      auto stable = node.kwargs.find("stable");
      bool isStable = node.target == "aten::sort.stable" && stable != node.kwargs.end() &&
                      stable->second.kind == Argument::Kind::Bool && stable->second.boolean;
      if (node.target == "aten::topk.default" || node.target == "aten::sort.default" ||
          (node.target == "aten::sort.stable" && !isStable))
        unordered.insert(node.name);
    }
    std::map<std::string, std::pair<std::string, int64_t>> items;  // getitem node -> (source, item)
    for (const Node& node : ir.nodes)
      if (node.target == "_operator.getitem" && node.args.size() == 2 && node.args[0].kind == Argument::Kind::Ref &&
          unordered.count(node.args[0].text) && node.args[1].kind == Argument::Kind::Int)
        items[node.name] = {node.args[0].text, node.args[1].integer};
    std::map<std::string, size_t> values, indices;  // source -> returned position
    std::vector<Argument> returned = ir.returned();
    for (size_t i = 0; i < returned.size(); ++i) {
      auto it = returned[i].kind == Argument::Kind::Ref ? items.find(returned[i].text) : items.end();
      if (it != items.end()) (it->second.second == 0 ? values : indices)[it->second.first] = i;
    }
    std::map<size_t, size_t> out;
    for (const auto& [source, position] : indices)
      if (values.count(source)) out[position] = values[source];
    return out;
  }

  // Whether two index tensors differ only where both pick an element of the same value: where
  // they differ, the values outputs beside them hold equal values (so either index is a tie).
  static bool onlyBetweenEqualValues(const HostValue& gotIndex, const HostValue& wantIndex, const HostValue& gotValue,
                                     const HostValue& wantValue) {
    if (gotIndex.shape != wantIndex.shape || gotValue.shape != gotIndex.shape || wantValue.shape != gotIndex.shape)
      return false;
    for (size_t i = 0; i < gotIndex.numel(); ++i) {
      if (gotIndex.element(i) == wantIndex.element(i)) continue;
      double a = gotValue.element(i), b = wantValue.element(i);
      if (!(a == b || (a != a && b != b))) return false;
    }
    return true;
  }

  // Outputs that are an empty tensor as created (aten::empty*, new_empty*): their elements are
  // whatever memory held, in PyTorch and in MLIR alike.
  static std::set<size_t> uninitializedOutputs(const Graph& ir) {
    std::set<std::string> empties;
    for (const Node& node : ir.nodes)
      if (node.target.rfind("aten::empty", 0) == 0 || node.target.rfind("aten::new_empty", 0) == 0)
        empties.insert(node.name);
    std::set<size_t> out;
    std::vector<Argument> items = ir.returned();
    for (size_t i = 0; i < items.size(); ++i)
      if (items[i].kind == Argument::Kind::Ref && empties.count(items[i].text)) out.insert(i);
    return out;
  }

  std::vector<HostValue> run(Prepared& p, const std::vector<HostValue>& inputs) {
    std::vector<std::string> resultTypes;
    for (const Port& port : p.lowered.outputs)
      if (port.result >= 0) resultTypes.push_back(port.type);
    std::vector<HostValue> results = p.iree ? p.iree->call(p.lowered.function, inputs, resultTypes)
                                            : p.jit->call(p.lowered.function, inputs, resultTypes);
    std::vector<HostValue> outputs;  // in graph output order, None where the graph returns None
    for (const Port& port : p.lowered.outputs) {
      outputs.push_back(port.result >= 0 ? results[static_cast<size_t>(port.result)] : HostValue());
      // MLIR spells uint8 and int8 alike (i8): the graph's dtype says which the bytes are.
      if (outputs.back().kind == HostValue::Kind::Tensor && port.meta.isTensor() && port.meta.tensor.dtype == "uint8")
        outputs.back().dtype = DType::U8;
    }
    return outputs;
  }

  // The median time of one call: IREE's benchmark tool, or calls of the JIT's function here,
  // as many as fit in about half a second (at least 3, at most 200); the first call's time
  // where that alone took longer than a second (a full-size model through the JIT's loops).
  double secondsPerCall(Prepared& p, const std::vector<HostValue>& inputs, double firstCall) {
    if (p.iree) return p.iree->secondsPerCall(p.lowered.function, inputs);
    if (firstCall > 1.0) return firstCall;
    std::vector<double> times;
    auto started = Clock::now();
    while (times.size() < 3 || (times.size() < 200 && since(started) < 0.5)) {
      auto start = Clock::now();
      run(p, inputs);
      times.push_back(since(start));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  // Outputs the job did not store that the graph returns without computing them: an input as
  // it is, or a size of its inputs (a symbol's expression, evaluated on the inputs' sizes here,
  // apart from the lowering's arithmetic), or a constant.
  void derivedOutputs(const Prepared& p, const std::vector<HostValue>& inputs, std::vector<HostValue>* expected,
                      std::vector<int>* positions) const {
    std::set<int> have(positions->begin(), positions->end());
    std::map<std::string, size_t> inputAt;
    for (size_t i = 0; i < p.lowered.inputs.size() && i < inputs.size(); ++i) inputAt[p.lowered.inputs[i].name] = i;
    Symbols symbols = inputSymbols(p, inputs);
    std::vector<Argument> returned = p.ir.returned();
    for (size_t i = 0; i < returned.size() && i < p.lowered.outputs.size(); ++i) {
      if (have.count(static_cast<int>(i)) || p.lowered.outputs[i].result < 0) continue;
      const Argument& a = returned[i];
      HostValue want;
      if (a.kind == Argument::Kind::Int) {
        want.kind = HostValue::Kind::Int, want.integer = a.integer;
      } else if (a.kind == Argument::Kind::Ref && inputAt.count(a.text)) {
        want = inputs[inputAt[a.text]];
      } else if (const Node* node = a.kind == Argument::Kind::Ref ? p.ir.find(a.text) : nullptr;
                 node && node->meta() && node->meta()->kind == ValueMeta::Kind::Symbolic &&
                 node->meta()->symType != "float" && node->meta()->symType != "bool") {
        Result<int64_t> value = evaluate(node->meta()->sym, symbols);
        if (!value.isOk()) continue;  // an unbacked size: only the run knows it
        want.kind = HostValue::Kind::Int, want.integer = *value;
      } else {
        continue;
      }
      expected->push_back(std::move(want));
      positions->push_back(static_cast<int>(i));
    }
  }

  // Each symbol an input binds: a symbolic-int input's value, a dynamic dim's size.
  static Symbols inputSymbols(const Prepared& p, const std::vector<HostValue>& inputs) {
    Symbols symbols;
    for (size_t i = 0; i < p.lowered.inputs.size() && i < inputs.size(); ++i) {
      const ValueMeta& meta = p.lowered.inputs[i].meta;
      if (meta.kind == ValueMeta::Kind::Symbolic && inputs[i].kind == HostValue::Kind::Int)
        symbols.emplace(meta.sym, inputs[i].integer);
      if (meta.isTensor())
        for (size_t d = 0; d < meta.tensor.shape.size() && d < inputs[i].shape.size(); ++d)
          if (!meta.tensor.shape[d].isStatic()) symbols.emplace(meta.tensor.shape[d].expr, inputs[i].shape[d]);
    }
    return symbols;
  }

  // The relations between input sizes the function asserts at entry, checked here first so
  // that a mismatch is reported instead of aborting inside the JIT.
  void checkSizes(const Prepared& p, const std::vector<HostValue>& inputs) const {
    Symbols symbols = inputSymbols(p, inputs);
    for (size_t i = 0; i < p.lowered.inputs.size() && i < inputs.size(); ++i) {
      const ValueMeta& meta = p.lowered.inputs[i].meta;
      if (!meta.isTensor()) continue;
      const std::vector<Dimension>& shape = meta.tensor.shape;
      if (shape.size() != inputs[i].shape.size())
        throw StoreError("input " + p.lowered.inputs[i].name + " has rank " + std::to_string(inputs[i].shape.size()) +
                         ", the graph takes " + std::to_string(shape.size()));
      for (size_t d = 0; d < shape.size(); ++d) {
        const Dimension& want = shape[d];
        Result<int64_t> value = want.isStatic() ? Result<int64_t>(want.size) : evaluate(want.expr, symbols);
        if (!value.isOk()) throw StoreError(value.status().message());
        int64_t expect = *value;
        if (expect != inputs[i].shape[d])
          throw StoreError("input " + p.lowered.inputs[i].name + " dim " + std::to_string(d) + " is " +
                           std::to_string(inputs[i].shape[d]) + " where the graph needs " +
                           (want.isStatic() ? "" : want.expr + " = ") + std::to_string(expect));
      }
    }
    for (const auto& [symbol, range] : *ranges_) {
      auto it = symbols.find(symbol);
      if (it != symbols.end() && (it->second < range.first || it->second > range.second))
        throw StoreError(symbol + " = " + std::to_string(it->second) + " is outside the compile's range [" +
                         std::to_string(range.first) + ", " + std::to_string(range.second) + "]");
    }
  }

  std::vector<HostValue> sampleInputs(const Prepared& p) {
    std::vector<HostValue> values;
    for (const FedValue& feed : samples_.feeds(p.ir)) {
      if (feed.kind == FedValue::Kind::Missing) throw StoreError(feed.missing);
      if (feed.kind == FedValue::Kind::ForwardOutput) {
        values.push_back(forwardOutputs().at(feed.index));
      } else if (feed.kind == FedValue::Kind::Zeros) {  // a gradient that never flowed
        const HostValue& like = forwardOutputs().at(feed.index);
        values.push_back(HostValue::tensor(like.dtype, like.shape));
      } else {
        values.push_back(fromEntry(job_, *feed.entry));
      }
    }
    return values;
  }

  const std::vector<HostValue>& forwardOutputs() {
    if (forward_) return *forward_;
    Prepared& p = prepare("aot_forward_graph", nullptr);
    if (p.random()) throw StoreError("its saved inputs come from the forward graph, which draws random numbers");
    if (!p.runnable())
      throw StoreError("its saved inputs come from the forward graph, which " +
                       std::string(p.lowered.complete() ? "did not compile: " + p.error.message().substr(0, 200)
                                                        : "was not lowered completely"));
    std::vector<HostValue> inputs = sampleInputs(p);
    checkSizes(p, inputs);
    forward_ = run(p, inputs);
    return *forward_;
  }

  // Random inputs at other sizes: replay-run draws them, runs the graph with libtorch and
  // writes both; MLIR's outputs on the same inputs must match libtorch's.
  void referenceRun(const std::string& event, const Prepared& p, std::vector<HostValue>* inputs,
                    std::vector<HostValue>* expected, std::vector<int>* positions) {
    if (opt_.runner.empty())
      throw StoreError("checking at other sizes needs replay-run (built where torch is installed) as the reference");
    std::string sizes;
    for (const auto& [name, value] : opt_.sizes)
      sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(value);
    std::string graph = event == "aot_backward_graph"    ? "backward"
                        : event == "aot_inference_graph" ? "inference"
                                                         : "forward";
    // At the capture's sizes, the stored samples where there are any (what is not stored is
    // filled); at other sizes, or without samples, random inputs.
    std::vector<FedValue> feeds = samples_.feeds(p.ir);
    bool samples = opt_.sizes.empty() && std::none_of(feeds.begin(), feeds.end(), [](const FedValue& f) {
                     return f.kind == FedValue::Kind::Missing;
                   });
    TempDir folder;
    std::string dump = folder.file("inputs.raw"), report = folder.file("report.json");
    std::vector<std::string> argv = {opt_.runner,
                                     opt_.store,
                                     compile_.id.str(),
                                     "--graph",
                                     graph,
                                     "--inputs",
                                     samples ? "samples" : "random",
                                     "--seed",
                                     std::to_string(opt_.seed),
                                     "--dump-raw",
                                     dump,
                                     "--json"};
    if (!sizes.empty()) argv.insert(argv.end(), {"--sizes", sizes});
    int status = spawn(argv, report);
    Result<TensorFile> read = readTensorFile(dump);
    if (!read.isOk()) {
      json r = json::parse(std::ifstream(report), nullptr, false);
      std::string why = !r.is_object()          ? "exit " + std::to_string(status)
                        : r.contains("failure") ? r["failure"].value("message", "a node failed")
                                                : r.value("error", "exit " + std::to_string(status));
      throw StoreError("replay-run (the reference) did not run this graph" + (sizes.empty() ? "" : " at " + sizes) +
                       ": " + why);
    }
    const TensorFile& file = *read;
    for (const RawValue& r : file.inputs) inputs->push_back(fromRaw(r));
    for (const Port& port : p.lowered.inputs) {  // what each random node drew, as the lowered function's extra inputs
      if (port.random.empty()) continue;
      auto drawn =
          std::find_if(file.random.begin(), file.random.end(), [&](const auto& r) { return r.first == port.random; });
      size_t output = port.randomOutput;
      if (drawn == file.random.end() || output >= drawn->second.size())
        throw StoreError("replay-run did not hand over what " + port.random + " drew");
      inputs->push_back(fromRaw(drawn->second[output]));
    }
    for (size_t i = 0; i < file.outputs.size(); ++i) {
      if (file.outputs[i].kind != "tensor") continue;
      expected->push_back(fromRaw(file.outputs[i]));
      positions->push_back(static_cast<int>(i));
    }
  }

  const Job& job_;
  const Compile& compile_;
  const CheckOptions& opt_;
  Result<SymbolRanges> ranges_;
  CompileSamples samples_;
  std::map<std::string, Prepared> prepared_;
  std::optional<std::vector<HostValue>> forward_;
};

}  // namespace

const char* stageName(CheckStage stage) {
  switch (stage) {
    case CheckStage::Lowered: return "lowered";
    case CheckStage::NotLowered: return "not lowered";
    case CheckStage::UnsupportedValue: return "unsupported value";
    case CheckStage::NotVerified: return "not verified";
    case CheckStage::NotCompiled: return "not compiled";
    case CheckStage::Static: return "static";
    case CheckStage::Executed: return "executed";
    case CheckStage::Differs: return "differs";
    case CheckStage::Matched: return "matched";
  }
  return "?";  // not reached: every stage is named above
}

Result<SymbolRanges> symbolRanges(const Job& job, const Compile& compile) {
  SymbolRanges out;
  Result<std::vector<SymbolEntry>> table = readSymbols(job, compile);
  if (!table.isOk()) return table.status();
  for (const SymbolEntry& s : *table)
    if (s.range)  // an end that is not an integer (int_oo) is unbounded
      out[s.symbol] = {s.range->first.asInteger().value_or(INT64_MIN), s.range->second.asInteger().value_or(INT64_MAX)};
  return out;
}

Result<std::map<std::string, std::string>> constantBytes(const Job& job, const Graph& ir) {
  std::map<std::string, std::string> out;
  for (const auto& [name, c] : ir.constants) {
    if (c.blob.empty()) continue;
    Result<std::string> bytes = job.blob(c.blob);
    if (!bytes.isOk()) return Status::corruption("constant " + name + ": " + bytes.status().message());
    if (bytes->size() != c.bytes.value_or(bytes->size()))
      return Status::corruption("constant " + name + ": " + std::to_string(bytes->size()) +
                                " bytes where the graph says " + std::to_string(*c.bytes));
    out[name] = std::move(*bytes);
  }
  return out;
}

Result<ChosenGraph> lowerStoredGraph(const Job& job, const Compile& compile, const std::string& event,
                                     const LowerOptions& options) {
  ChosenGraph out;
  Result<std::pair<std::string, Graph>> stored = graphIr(job, compile, event);
  if (!stored.isOk()) return stored.status();
  out.ir = std::move(stored->second);
  LowerOptions lo = options;
  Result<std::map<std::string, std::string>> constants = constantBytes(job, out.ir);
  if (!constants.isOk()) return constants.status();
  lo.constants = std::move(*constants);
  Result<LoweredGraph> lowered = lowerGraph(out.ir, lo);
  if (!lowered.isOk()) return lowered.status();
  out.lowered = std::move(*lowered);
  if (out.lowered.complete()) return out;
  std::set<std::string> missing;
  for (const NodeIssue& i : out.lowered.issues) missing.insert(i.op);
  std::string ops;
  for (const std::string& op : missing) ops += (ops.empty() ? "" : ", ") + op;
  auto core = compile.coreAtenIrs.find(event);
  if (core == compile.coreAtenIrs.end()) {
    auto error = compile.coreAtenErrors.find(event);
    out.reason = error != compile.coreAtenErrors.end()
                     ? "its Core ATen decomposition failed at capture: " + error->second
                     : "the store has no Core ATen decomposition of it (captured without one)";
    return out;
  }
  Result<Graph> coreIr = readGraph(job, core->second);
  if (!coreIr.isOk()) {
    out.reason = "its Core ATen decomposition is not readable: " + coreIr.status().message();
    return out;
  }
  Result<std::map<std::string, std::string>> coreConstants = constantBytes(job, *coreIr);
  if (!coreConstants.isOk()) {
    out.reason = "its Core ATen decomposition's constants are not readable: " + coreConstants.status().message();
    return out;
  }
  lo.constants = std::move(*coreConstants);
  Result<LoweredGraph> coreResult = lowerGraph(*coreIr, lo);
  if (!coreResult.isOk()) {
    out.reason = "its Core ATen decomposition does not lower: " + coreResult.status().message();
    return out;
  }
  LoweredGraph& coreLowered = *coreResult;
  if (coreLowered.issues.size() >= out.lowered.issues.size()) {
    out.reason = "its Core ATen decomposition leaves as many nodes unlowered";
    return out;
  }
  out.reason = "no lowering for " + ops + ": lowered its Core ATen decomposition";
  out.ir = std::move(*coreIr);
  out.lowered = std::move(coreLowered);
  out.opset = "core_aten";
  return out;
}

Result<std::pair<std::string, Graph>> graphIr(const Job& job, const Compile& compile, const std::string& graph) {
  std::vector<std::string> candidates = eventsNamed(graph);
  for (const std::string& event : candidates) {
    auto found = compile.graphIrs.find(event);
    if (found == compile.graphIrs.end()) continue;
    Result<Graph> ir = readGraph(job, found->second);
    if (!ir.isOk())
      return Status::corruption("the IR of " + event + " in compile " + compile.id.str() +
                                " is not readable: " + ir.status().message());
    return std::pair<std::string, Graph>(event, std::move(*ir));
  }
  std::string have;
  for (const auto& [name, key] : compile.graphIrs) have += (have.empty() ? "" : ", ") + name;
  return Status::notFound("compile " + compile.id.str() + " has no " + graph +
                          " graph (it has: " + (have.empty() ? "none" : have) + ")");
}

GraphCheck checkGraph(const Job& job, const Compile& compile, const std::string& event, const CheckOptions& options) {
  return CompileCheck(job, compile, options).check(event);
}

GraphCheck checkLowered(const Job& job, const Compile& compile, const std::string& event, ChosenGraph lowered,
                        const CheckOptions& options) {
  return CompileCheck(job, compile, options).check(event, &lowered);
}

std::vector<GraphCheck> checkStore(const Job& job, const CheckOptions& options) {
  std::vector<GraphCheck> out;
  for (const Compile& compile : job.compiles()) {
    CompileCheck check(job, compile, options);
    for (const char* event : {"aot_forward_graph", "aot_inference_graph", "aot_backward_graph"})
      if (compile.graphIrs.count(event)) out.push_back(check.check(event));
  }
  return out;
}

}  // namespace dynrep::replay::lowering
