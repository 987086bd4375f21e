// Preparing a stored graph (operators looked up, arguments resolved) and running it node by node.
#include "graph_program.h"

#include <cmath>
#include <stdexcept>

#include "dynrep/replay/query/random_ops.h"
#include "prims.h"

namespace dynrep::replay::run {

namespace {

c10::IValue element(const c10::IValue& value, int64_t index) {
  if (value.isTuple()) return value.toTupleRef().elements().at(index);
  if (value.isList()) return value.toListRef().at(index);
  throw std::runtime_error("getitem on a " + value.tagKind());
}

double number(const c10::IValue& v) {
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isDouble()) return v.toDouble();
  if (v.isBool()) return v.toBool();
  throw std::runtime_error("expected a number, got " + v.tagKind());
}

// The Python-level calls aten graphs make between operators: tuple indexing and symbolic
// int arithmetic (callPython).
bool isPythonOp(const std::string& target) {
  static const char* kOps[] = {"getitem", "neg", "add", "sub", "mul", "truediv", "floordiv", "mod",
                               "pow",     "eq",  "ne",  "lt",  "le",  "gt",      "ge"};
  for (const char* prefix : {"operator.", "_operator."})
    if (target.rfind(prefix, 0) == 0)
      for (const char* op : kOps)
        if (target == std::string(prefix) + op) return true;
  return target == "torch.sym_float" || target == "torch.sym_int";
}

}  // namespace

GraphProgram::GraphProgram(const Graph& ir, const std::map<std::string, at::Tensor>& constants) : ir_(ir) {
  Slots slots;
  for (const Node& node : ir_.nodes) {
    if (node.is(Node::Op::Placeholder)) {
      inputSlots_.push_back(slots[node.name] = slotCount_++);
    } else if (node.is(Node::Op::GetAttr)) {
      auto it = constants.find(node.target);
      if (it == constants.end()) {
        failure_ = describe(node, "constant " + node.target + " was not stored with its data");
        return;
      }
      constantSlots_.emplace_back(slots[node.name] = slotCount_++, it->second);
    } else if (node.is(Node::Op::Output)) {
      try {
        for (const Argument& item : ir_.returned()) outputs_.push_back(resolve(item, nullptr, slots));
      } catch (const std::exception& e) {
        failure_ = describe(node, e.what());
        return;
      }
    } else if (!prepare(node, &slots)) {
      return;
    }
  }
  planReleases();
}

bool GraphProgram::prepare(const Node& node, Slots* slots) {
  Step step;
  step.node = &node;
  step.target = node.target;
  if (!node.is(Node::Op::CallFunction)) {
    failure_ = describe(node, "a " + node.opName +
                                  " node: the runner runs aten graphs (AOTAutograd's), "
                                  "whose nodes are operator calls; load the Dynamo graph in Python");
    return false;
  }
  if (step.target.rfind("higher_order::", 0) == 0) {
    failure_ = describe(node, "higher-order operator " + step.target + " (a subgraph call) is not run here");
    return false;
  }
  try {
    if (step.target.find("::") != std::string::npos) {
      prepareOperator(node, &step, *slots);
      if (failure_) return false;
    } else if (isPythonOp(step.target)) {
      step.kind = StepKind::Python;
      for (const Argument& arg : node.args) step.args.push_back(resolve(arg, nullptr, *slots));
    } else {
      failure_ = describe(node, "calls the Python function " + step.target +
                                    ": the runner runs aten graphs (--graph forward, backward or inference); "
                                    "rebuild a Dynamo graph in Python with dynamo_replay.load_graph");
      return false;
    }
  } catch (const std::exception& e) {
    failure_ = describe(node, e.what());
    return false;
  }
  step.slot = (*slots)[node.name] = slotCount_++;
  steps_.push_back(std::move(step));
  return true;
}

void GraphProgram::prepareOperator(const Node& node, Step* step, const Slots& slots) {
  size_t dot = step->target.find('.', step->target.find("::"));
  std::string name = step->target.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : step->target.substr(dot + 1);
  step->op = c10::Dispatcher::singleton().findSchema({name, overload == "default" ? "" : overload});
  if (!step->op && preparePrimitive(node, step, slots)) return;
  if (!step->op) {
    std::string why =
        step->target.rfind("aten::", 0) == 0 ? " (a different libtorch version?)"
        : step->target.rfind("prims::", 0) == 0
            ? " (a PyTorch primitive registered from Python, torch._prims, which the runner does not compute yet)"
            : " (a custom operator: load the library that registers it with --load LIB.so)";
    failure_ = describe(node, "operator " + step->target + " is not registered in this process" + why);
    return;
  }
  const std::vector<Argument>& args = node.args;
  const std::vector<c10::Argument>& params = step->op->schema().arguments();
  if (args.size() > params.size()) throw std::runtime_error("more arguments than " + step->target + " takes");
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument& p = params[i];
    try {
      auto kwarg = node.kwargs.find(p.name());
      if (i < args.size() && !p.kwarg_only()) {
        step->args.push_back(resolve(args[i], p.type(), slots));
      } else if (kwarg != node.kwargs.end()) {
        step->args.push_back(resolve(kwarg->second, p.type(), slots));
      } else if (p.default_value()) {
        step->args.push_back(constantValue(*p.default_value()));
      } else {
        throw std::runtime_error("no value given and no default");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error("argument '" + p.name() + "': " + e.what());
    }
  }
}
NodeFailure GraphProgram::describe(const Node& node, const std::string& message) const {
  NodeFailure f;
  f.node = node.name;
  f.op = node.what();
  if (node.location) {
    const SourceLocation& loc = *node.location;
    f.location = loc.file + ":" + std::to_string(loc.line) + "  " + loc.code;
  }
  if (!node.scope.empty()) f.scope = node.scope.back().path + " (" + node.scope.back().className + ")";
  f.message = message;
  return f;
}

// A prims:: operator the runner computes itself (prims.h), its arguments in the order of the
// schema capture stored, since libtorch does not know it.
bool GraphProgram::preparePrimitive(const Node& node, Step* step, const Slots& slots) {
  step->primitive = findPrimitive(step->target);
  const Schema* schema = ir_.schema(step->target);
  if (!step->primitive || !schema) return false;
  const std::vector<SchemaArgument>& params = schema->arguments;
  for (size_t i = 0; i < params.size(); ++i) {
    auto kwarg = node.kwargs.find(params[i].name);
    if (i < node.args.size() && !params[i].kwargOnly)
      step->args.push_back(resolve(node.args[i], nullptr, slots));
    else if (kwarg != node.kwargs.end())
      step->args.push_back(resolve(kwarg->second, nullptr, slots));
    else
      step->args.push_back(constantValue(c10::IValue()));
  }
  step->kind = StepKind::Primitive;
  return true;
}

void GraphProgram::planReleases() {
  std::vector<int> lastUse(slotCount_, -1);
  std::vector<int> read;
  for (size_t i = 0; i < steps_.size(); ++i) {
    read.clear();
    for (const Resolved& arg : steps_[i].args) arg.collectSlots(&read);
    for (int slot : read) lastUse[slot] = static_cast<int>(i);
  }
  read.clear();
  for (const Resolved& out : outputs_) out.collectSlots(&read);
  for (int slot : read) lastUse[slot] = -1;  // returned: kept to the end
  for (int slot = 0; slot < slotCount_; ++slot)
    if (lastUse[slot] >= 0) steps_[lastUse[slot]].release.push_back(slot);
}

c10::IValue GraphProgram::callPython(const Step& step, const std::vector<c10::IValue>& values) const {
  auto arg = [&](size_t i) { return step.args.at(i)(values); };
  const std::string& t = step.target;
  if (t == "operator.getitem" || t == "_operator.getitem") return element(arg(0), arg(1).toInt());
  if (t == "torch.sym_float") return number(arg(0));
  if (t == "torch.sym_int") return static_cast<int64_t>(number(arg(0)));
  if (t == "operator.neg" || t == "_operator.neg") {
    c10::IValue a = arg(0);
    return a.isInt() ? c10::IValue(-a.toInt()) : c10::IValue(-number(a));
  }
  c10::IValue a = arg(0), b = arg(1);
  bool ints = a.isInt() && b.isInt();
  std::string name = t.substr(t.find('.') + 1);
  if (name == "add") return ints ? c10::IValue(a.toInt() + b.toInt()) : c10::IValue(number(a) + number(b));
  if (name == "sub") return ints ? c10::IValue(a.toInt() - b.toInt()) : c10::IValue(number(a) - number(b));
  if (name == "mul") return ints ? c10::IValue(a.toInt() * b.toInt()) : c10::IValue(number(a) * number(b));
  if (name == "truediv") return number(a) / number(b);
  if (name == "floordiv" && ints) {
    int64_t q = a.toInt() / b.toInt();
    return (a.toInt() % b.toInt() != 0 && ((a.toInt() < 0) != (b.toInt() < 0))) ? q - 1 : q;
  }
  if (name == "floordiv") return std::floor(number(a) / number(b));
  if (name == "mod" && ints) return a.toInt() - b.toInt() * (int64_t)std::floor(double(a.toInt()) / b.toInt());
  if (name == "pow")
    return ints && b.toInt() >= 0 ? c10::IValue((int64_t)std::llround(std::pow(a.toInt(), b.toInt())))
                                  : c10::IValue(std::pow(number(a), number(b)));
  if (name == "eq") return number(a) == number(b);
  if (name == "ne") return number(a) != number(b);
  if (name == "lt") return number(a) < number(b);
  if (name == "le") return number(a) <= number(b);
  if (name == "gt") return number(a) > number(b);
  if (name == "ge") return number(a) >= number(b);
  throw std::runtime_error("the Python function " + t + " is not run here");
}

std::optional<std::vector<c10::IValue>>
GraphProgram::run(const std::vector<c10::IValue>& inputs, NodeFailure* failure,
                  std::vector<std::pair<std::string, c10::IValue>>* random) const {
  std::vector<c10::IValue> values(slotCount_);
  for (size_t i = 0; i < inputSlots_.size() && i < inputs.size(); ++i) values[inputSlots_[i]] = inputs[i];
  for (const auto& [slot, value] : constantSlots_) values[slot] = value;
  std::vector<c10::IValue> stack;
  for (const Step& step : steps_) {
    try {
      if (step.kind == StepKind::Operator) {
        stack.clear();
        for (const Resolved& arg : step.args) stack.push_back(arg(values));
        step.op->callBoxed(&stack);
        values[step.slot] = stack.size() == 1 ? std::move(stack[0]) : c10::IValue(c10::ivalue::Tuple::create(stack));
        if (random && drawsRandom(*step.node)) random->emplace_back(step.node->name, values[step.slot]);
      } else if (step.kind == StepKind::Primitive) {
        stack.clear();
        for (const Resolved& arg : step.args) stack.push_back(arg(values));
        values[step.slot] = step.primitive(stack);
        if (random && drawsRandom(*step.node)) random->emplace_back(step.node->name, values[step.slot]);
      } else {
        values[step.slot] = callPython(step, values);
      }
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (size_t cut = message.find("\nException raised from"); cut != std::string::npos) message.resize(cut);
      *failure = describe(*step.node, message);
      return std::nullopt;
    }
    for (int slot : step.release) values[slot] = c10::IValue();
  }
  std::vector<c10::IValue> outputs;
  outputs.reserve(outputs_.size());
  for (const Resolved& out : outputs_) outputs.push_back(out(values));
  return outputs;
}

}  // namespace dynrep::replay::run
