// runGraph: picks the graph, builds its inputs (stored samples, or seeded random tensors at
// the sizes asked for), runs it, and checks the outputs against the stored ones.
#include "dynrep/replay/run/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include "dynrep/replay/query/sizes.h"
#include "dynrep/replay/query/tensor_file.h"
#include "graph_program.h"
#include "stored_values.h"

namespace dynrep::replay::run {

namespace {

class Run {
 public:
  Run(const Job& job, const Compile& compile, const RunOptions& options) : stored_(job, compile), opt_(options) {}

  // Sizes from the samples: a symbol placeholder's value, or a tensor dim printed as a symbol.
  void bindSymbols(const Graph& ir) {
    const Sample* forward = stored_.sample("forward");
    if (!forward) return;
    for (const Node* node : ir.placeholders()) {
      if (!node->feed || node->feed->kind != Feed::Kind::SampleInput) continue;
      size_t index = node->feed->index;
      if (index >= forward->inputs.size()) continue;
      const SampleValue& sample = forward->inputs[index];
      const ValueMeta* meta = node->meta();
      if (!meta) continue;
      if (meta->kind == ValueMeta::Kind::Symbolic && sample.kind == SampleValue::Kind::Scalar &&
          sample.value.kind == Argument::Kind::Int)
        symbols_.emplace(meta->sym, sample.value.integer);
      if (meta->isTensor() && sample.kind == SampleValue::Kind::Tensor)
        for (size_t d = 0; d < meta->tensor.shape.size() && d < sample.shape.size(); ++d)
          if (!meta->tensor.shape[d].isStatic() && sample.shape[d].isStatic())
            symbols_.emplace(meta->tensor.shape[d].expr, sample.shape[d].size);
    }
  }

  std::vector<int64_t> shapeOf(const std::vector<Dimension>& dims) const {
    std::vector<int64_t> shape;
    for (const Dimension& d : dims) shape.push_back(d.isStatic() ? d.size : sizeOf(d.expr));
    return shape;
  }

  int64_t sizeOf(const std::string& expression) const {
    Result<int64_t> value = evaluate(expression, symbols_);
    if (!value.isOk()) throw RunError(value.status().message());
    return *value;
  }

  // The placeholder's description: a tensor or a symbolic scalar (RunError for anything else).
  static const ValueMeta& describedInput(const Node& node) {
    const ValueMeta* meta = node.meta();
    if (!meta || (!meta->isTensor() && meta->kind != ValueMeta::Kind::Symbolic))
      throw RunError("input " + node.name + " records neither a tensor nor a symbolic size");
    return *meta;
  }

  c10::IValue randomInput(const Node& node) {
    const ValueMeta& meta = describedInput(node);
    if (meta.kind == ValueMeta::Kind::Symbolic) return sizeOf(meta.sym);
    std::vector<int64_t> shape = shapeOf(meta.tensor.shape);
    at::ScalarType dtype = scalarType(meta.tensor.dtype.empty() ? "float32" : meta.tensor.dtype);
    at::TensorOptions options = at::TensorOptions().dtype(dtype);
    if (at::isFloatingType(dtype) || at::isComplexType(dtype)) return at::randn(shape, options);
    if (dtype == at::kBool) return at::randint(0, 2, shape, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    auto [low, high] = intRange(node);  // keep ids inside what the job used (embedding rows)
    return at::randint(low, high + 1, shape, options);
  }

  // A value the capture described but did not store (over the sample cap): seeded random
  // values of its description, drawn as graphs/samples.py draws them in Python (a CPU generator
  // seeded with seed + the input's position; float32 normals of the recorded mean and standard
  // deviation cast to the dtype; integers in the recorded range), so the libtorch runner, a repro script and
  // lower-check's MLIR run see the same inputs. `entry` is the sample's description, null where there is none.
  at::Tensor filled(const Node& node, const SampleValue* entry, size_t position) {
    const ValueMeta& meta = describedInput(node);
    if (!meta.isTensor()) throw RunError("input " + node.name + " is a symbolic size that no sample gives");
    std::vector<int64_t> shape = shapeOf(entry ? entry->shape : meta.tensor.shape);
    std::string dtypeName = entry && !entry->dtype.empty() ? entry->dtype : meta.tensor.dtype;
    at::ScalarType dtype = scalarType(dtypeName.empty() ? "float32" : dtypeName);
    at::Generator generator = at::detail::createCPUGenerator(opt_.seed + position);
    auto number = [&](auto SampleValue::* field, auto fallback) {
      return entry ? (entry->*field).value_or(fallback) : fallback;
    };
    at::Tensor t;
    if (at::isFloatingType(dtype)) {
      t = at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat));
      t = (t * number(&SampleValue::std, 1.0) + number(&SampleValue::mean, 0.0)).to(dtype);
    } else {
      int64_t low = dtype == at::kBool ? 0 : number(&SampleValue::min, int64_t{0});
      int64_t high = dtype == at::kBool ? 1 : number(&SampleValue::max, int64_t{9});
      t = at::randint(low, high + 1, shape, generator, at::TensorOptions().dtype(at::kLong)).to(dtype);
    }
    filled_.push_back(node.name);
    return stored_.restride(t, meta.tensor.stride ? &*meta.tensor.stride : nullptr);
  }

  std::pair<int64_t, int64_t> intRange(const Node& node) const {
    if (node.feed && node.feed->kind == Feed::Kind::SampleInput && stored_.sample("forward")) {
      const std::vector<SampleValue>& inputs = stored_.sample("forward")->inputs;
      const SampleValue* entry = node.feed->index < inputs.size() ? &inputs[node.feed->index] : nullptr;
      if (entry && entry->stored()) {
        at::Tensor t = stored_.blob(*entry);
        if (t.numel()) return {t.min().item<int64_t>(), t.max().item<int64_t>()};
      }
    }
    return {0, 9};
  }

  std::vector<c10::IValue> inputs(const Graph& ir) {
    std::vector<FedValue> feeds = stored_.samples().feeds(ir);
    std::vector<c10::IValue> values;
    std::optional<std::vector<c10::IValue>> forwardOutputs;
    auto forward = [&]() -> const std::vector<c10::IValue>& {
      if (!forwardOutputs) forwardOutputs = runForward();
      return *forwardOutputs;
    };
    size_t i = 0;
    for (const Node* node : ir.placeholders()) {
      const ValueMeta* meta = node->meta();
      const std::vector<Dimension>* stride =
          meta && meta->isTensor() && meta->tensor.stride ? &*meta->tensor.stride : nullptr;
      const FedValue& feed = feeds.at(i++);
      bool weight = node->input && node->input->isWeight();
      if (feed.kind == FedValue::Kind::ForwardOutput) {
        values.push_back(forward().at(feed.index));
      } else if (opt_.inputs == InputSource::Random && !weight) {
        values.push_back(randomInput(*node));
      } else if (feed.kind == FedValue::Kind::Stored && feed.entry->described()) {
        values.push_back(filled(*node, feed.entry, i - 1));
      } else if (feed.kind == FedValue::Kind::Missing &&
                 opt_.inputs == InputSource::Random) {  // a weight, no sample at all
        values.push_back(filled(*node, nullptr, i - 1));
      } else if (feed.kind == FedValue::Kind::Missing) {
        throw RunError(feed.missing + "; use --inputs random");
      } else if (feed.kind == FedValue::Kind::Zeros) {  // a gradient that never flowed
        values.push_back(stored_.restride(
            at::zeros_like(forward().at(feed.index).toTensor(), at::MemoryFormat::Contiguous), stride));
      } else {
        values.push_back(feed.entry->stored() ? c10::IValue(stored_.blob(*feed.entry, stride))
                                              : stored_.valueOf(*feed.entry));
      }
    }
    return values;
  }

  std::vector<c10::IValue> runForward() {
    Graph forwardIr = stored_.ir("aot_forward_graph");
    GraphProgram program(forwardIr, stored_.constants(forwardIr));
    NodeFailure failure;
    if (program.failure()) throw RunError("the forward graph cannot run: " + program.failure()->message);
    std::vector<c10::IValue> in = inputs(forwardIr);
    seedGenerator("aot_forward_graph");  // its dropout masks are the backward's saved values
    std::optional<std::vector<c10::IValue>> out = program.run(in, &failure);
    if (!out) throw RunError("the forward graph failed at " + failure.node + ": " + failure.message);
    return *out;
  }

  void check(const std::vector<c10::IValue>& got, const std::vector<std::pair<int, at::Tensor>>& want,
             RunReport* report) const {
    for (const auto& [position, stored] : want) {
      OutputCheck check{position, "", 0};
      const c10::IValue& value = got.at(position);
      if (!value.isTensor() || value.toTensor().sizes() != stored.sizes() ||
          value.toTensor().scalar_type() != stored.scalar_type()) {
        check.status = "shape differs";
      } else {
        at::Tensor g = value.toTensor();
        if (g.numel() == 0 || at::equal(g, stored)) {
          check.status = "bitwise";
        } else if (at::isFloatingType(g.scalar_type()) &&
                   at::allclose(g, stored, opt_.rtol, opt_.atol, /*equal_nan=*/true)) {
          check.status = "close";
          check.maxAbsDiff = (g.to(at::kDouble) - stored.to(at::kDouble)).abs().max().item<double>();
        } else {
          check.status = "differs";
          if (at::isFloatingType(g.scalar_type()))
            check.maxAbsDiff = (g.to(at::kDouble) - stored.to(at::kDouble)).abs().max().item<double>();
        }
      }
      report->outputs.push_back(check);
    }
  }

  void go(RunReport* report) {
    std::string ev = stored_.event(opt_.graph);
    report->graph = ev;
    Graph graphIr = stored_.ir(ev);
    symbols_ = {};
    bindSymbols(ev == "aot_backward_graph" && stored_.has("aot_forward_graph") ? stored_.ir("aot_forward_graph")
                                                                               : graphIr);
    for (const auto& [name, value] : opt_.sizes) {
      if (!symbols_.count(name) && !inputsMention(graphIr, name)) {
        std::string known;
        for (const auto& [symbol, hint] : symbols_)
          known += (known.empty() ? "" : ", ") + symbol + "=" + std::to_string(hint);
        throw RunError(
            name + " is not a dynamic size of " + ev +
            (known.empty() ? " (its sizes are all static)" : " (its dynamic sizes, as captured: " + known + ")"));
      }
      symbols_[name] = value;
    }
    for (const auto& [symbol, hint] : stored_.hints()) symbols_.emplace(symbol, hint);  // what no sample says
    at::manual_seed(opt_.seed);
    GraphProgram program(graphIr, stored_.constants(graphIr));
    report->nodes = static_cast<int>(program.nodeCount());
    if (program.failure()) {
      report->failure = program.failure();
      return;
    }
    std::vector<c10::IValue> in = inputs(graphIr);
    report->sizes = symbols_;
    report->filled = filled_;
    std::vector<double> seconds;
    std::optional<std::vector<c10::IValue>> first;
    at::NoGradGuard noGrad;
    for (int i = 0; i < std::max(1, opt_.repeat); ++i) {
      NodeFailure failure;
      seedGenerator(ev);
      auto start = std::chrono::steady_clock::now();
      std::optional<std::vector<c10::IValue>> out = program.run(in, &failure, first ? nullptr : &random_);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      report->calls++;
      if (!out) {
        report->failure = failure;
        return;
      }
      if (!first) first = std::move(out);
    }
    std::sort(seconds.begin(), seconds.end());
    report->medianSeconds = seconds[seconds.size() / 2];
    if (opt_.inputs == InputSource::Samples && filled_.empty()) {
      check(*first, stored_.expected(graphIr), report);
    } else {  // no stored outputs for these inputs: a second run must give the same bits
      NodeFailure failure;
      seedGenerator(ev);
      std::optional<std::vector<c10::IValue>> again = program.run(in, &failure);
      std::vector<std::pair<int, at::Tensor>> want;
      for (size_t i = 0; again && i < again->size(); ++i)
        if ((*again)[i].isTensor()) want.emplace_back(static_cast<int>(i), (*again)[i].toTensor());
      check(*first, want, report);
    }
    if (!opt_.dumpPath.empty()) dump(in, *first);
    if (!opt_.rawDumpPath.empty()) dumpRaw(in, *first);
  }

  // Random operators (dropout) draw from the CPU generator: each run starts from the state the
  // job's first call had (stored with the forward sample), or from --seed for random inputs.
  void seedGenerator(const std::string& event) const {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    const Sample* forward = stored_.sample("forward");
    if (opt_.inputs == InputSource::Samples && event != "aot_backward_graph" && forward && forward->rngState) {
      generator.set_state(stored_.blob(*forward->rngState));
    } else {
      generator.set_current_seed(opt_.seed);
    }
  }

  static RawValue raw(const c10::IValue& v) {
    RawValue r;
    if (v.isTensor()) {
      at::Tensor t = v.toTensor().contiguous();
      r.kind = "tensor";
      r.dtype = c10::toString(t.scalar_type());
      std::string name = r.dtype;  // PyTorch's C++ names (Float, Long) -> Python's (float32, int64)
      static const std::map<std::string, std::string> kNames = {{"Float", "float32"},
                                                                {"Double", "float64"},
                                                                {"Half", "float16"},
                                                                {"BFloat16", "bfloat16"},
                                                                {"Long", "int64"},
                                                                {"Int", "int32"},
                                                                {"Short", "int16"},
                                                                {"Char", "int8"},
                                                                {"Byte", "uint8"},
                                                                {"Bool", "bool"},
                                                                {"ComplexFloat", "complex64"},
                                                                {"ComplexDouble", "complex128"}};
      auto it = kNames.find(name);
      r.dtype = it == kNames.end() ? name : it->second;
      r.shape = t.sizes().vec();
      r.bytes.assign(static_cast<const char*>(t.data_ptr()), t.nbytes());
    } else if (v.isInt()) {
      r.kind = "int", r.integer = v.toInt();
    } else if (v.isDouble()) {
      r.kind = "float", r.real = v.toDouble();
    } else if (v.isBool()) {
      r.kind = "bool", r.integer = v.toBool();
    } else {
      r.kind = "none";
    }
    return r;
  }

  void dumpRaw(const std::vector<c10::IValue>& in, const std::vector<c10::IValue>& out) const {
    TensorFile file;
    for (const c10::IValue& v : in) file.inputs.push_back(raw(v));
    for (const c10::IValue& v : out) file.outputs.push_back(raw(v));
    for (const auto& [node, value] : random_) {
      std::vector<RawValue> values;
      if (value.isTuple())
        for (const c10::IValue& item : value.toTupleRef().elements()) values.push_back(raw(item));
      else
        values.push_back(raw(value));
      file.random.emplace_back(node, std::move(values));
    }
    if (Status written = writeTensorFile(opt_.rawDumpPath, file); !written.isOk()) throw RunError(written.message());
  }

  // (inputs, outputs) as plain tuples, which torch.load(weights_only=True) reads.
  void dump(const std::vector<c10::IValue>& in, const std::vector<c10::IValue>& out) const {
    c10::IValue both = c10::ivalue::Tuple::create({c10::ivalue::Tuple::create(in), c10::ivalue::Tuple::create(out)});
    std::vector<char> bytes = torch::pickle_save(both);
    std::ofstream file(opt_.dumpPath, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) throw RunError("cannot write " + opt_.dumpPath);
  }

 private:
  StoredValues stored_;
  const RunOptions& opt_;
  Symbols symbols_;
  std::vector<std::string> filled_;                          // inputs not stored, filled at random
  std::vector<std::pair<std::string, c10::IValue>> random_;  // what random nodes drew in the first run
};

}  // namespace

bool RunReport::ok() const {
  if (failure) return false;
  return std::none_of(outputs.begin(), outputs.end(),
                      [](const OutputCheck& c) { return c.status == "differs" || c.status == "shape differs"; });
}

std::string inputsDescription(const RunOptions& options) {
  return options.inputs == InputSource::Samples ? "samples" : "random (seed " + std::to_string(options.seed) + ")";
}

Result<RunReport> runGraph(const Job& job, const std::string& compileId, const RunOptions& options) {
  RunReport report;
  report.compileId = compileId;
  report.inputs = inputsDescription(options);
  const Compile* compile = job.find(compileId);
  if (!compile) return Status::notFound("no compile " + compileId + " in this store");
  try {
    Run(job, *compile, options).go(&report);
  } catch (const std::exception& e) {
    std::string message = e.what();  // libtorch's C++ stack trace is no help to the user
    if (size_t cut = message.find("\nException raised from"); cut != std::string::npos) message.resize(cut);
    return Status::invalidArgument(message);
  }
  return report;
}

}  // namespace dynrep::replay::run
