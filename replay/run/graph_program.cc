#include "graph_program.h"

#include <cmath>
#include <stdexcept>

namespace dynrep::replay::run {

namespace {

using nlohmann::json;

bool hasRef(const json& value) {
  if (value.is_object()) return value.contains("ref") || (value.contains("tuple") && hasRef(value["tuple"]));
  if (value.is_array()) {
    for (const json& item : value)
      if (hasRef(item)) return true;
  }
  return false;
}

const json& argAt(const json& node, const c10::Argument& p, size_t i, bool* given) {
  static const json kNone;
  const json& args = node.contains("args") ? node["args"] : kNone;
  const json& kwargs = node.contains("kwargs") ? node["kwargs"] : kNone;
  *given = true;
  if (args.is_array() && i < args.size() && !p.kwarg_only()) return args[i];
  if (kwargs.is_object() && kwargs.contains(p.name())) return kwargs[p.name()];
  *given = false;
  return kNone;
}

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
  static const char* kOps[] = {"getitem", "neg", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                               "eq", "ne", "lt", "le", "gt", "ge"};
  for (const char* prefix : {"operator.", "_operator."})
    if (target.rfind(prefix, 0) == 0)
      for (const char* op : kOps)
        if (target == std::string(prefix) + op) return true;
  return target == "torch.sym_float" || target == "torch.sym_int";
}

}  // namespace

GraphProgram::GraphProgram(const json& ir, std::map<std::string, at::Tensor> constants)
    : ir_(ir), constants_(std::move(constants)) {
  for (const json& node : ir_["nodes"]) {
    std::string op = node.value("op", "");
    if (op == "placeholder") {
      inputs_.push_back(node.value("name", ""));
      continue;
    }
    if (op == "output") {
      output_ = &node;
      continue;
    }
    Step step{&node, node.value("name", ""), node.value("target", ""), std::nullopt, {}};
    if (op == "get_attr") {
      if (!constants_.count(step.target)) {
        failure_ = describe(node, "constant " + step.target + " was not stored with its data");
        return;
      }
    } else if (op != "call_function") {
      failure_ = describe(node, "a " + op + " node: the runner runs aten graphs (AOTAutograd's), "
                                "whose nodes are operator calls; load the Dynamo graph in Python");
      return;
    } else if (size_t sep = step.target.find("::"); sep != std::string::npos &&
                                                    step.target.rfind("higher_order::", 0) != 0) {
      size_t dot = step.target.find('.', sep);
      std::string name = step.target.substr(0, dot);
      std::string overload = dot == std::string::npos ? "" : step.target.substr(dot + 1);
      if (overload == "default") overload = "";
      step.op = c10::Dispatcher::singleton().findSchema({name, overload});
      if (!step.op) {
        failure_ = describe(node, "operator " + step.target + " is not registered in this process" +
                                      (step.target.rfind("aten::", 0) == 0
                                           ? std::string(" (a different libtorch version?)")
                                           : " (a custom operator: load the library that registers it with --load LIB.so)"));
        return;
      }
      const auto& params = step.op->schema().arguments();
      for (size_t i = 0; i < params.size(); ++i) {
        bool given = false;
        const json& arg = argAt(node, params[i], i, &given);
        if (!given && params[i].default_value()) step.constants.push_back(*params[i].default_value());
        else if (given && !hasRef(arg)) {
          try {
            step.constants.push_back(toIValue(arg, params[i].type(), Env{}));
          } catch (const std::exception& e) {
            failure_ = describe(node, "argument '" + params[i].name() + "': " + e.what());
            return;
          }
        } else if (!given) {
          failure_ = describe(node, "argument '" + params[i].name() + "' has no value and no default");
          return;
        } else {
          step.constants.push_back(std::nullopt);
        }
      }
    } else if (step.target.rfind("higher_order::", 0) == 0) {
      failure_ = describe(node, "higher-order operator " + step.target + " (a subgraph call) is not run here");
      return;
    } else if (!isPythonOp(step.target)) {
      failure_ = describe(node, "calls the Python function " + step.target +
                                    ": the runner runs aten graphs (--graph forward, backward or inference); "
                                    "rebuild a Dynamo graph in Python with dynamo_replay.load_graph");
      return;
    }
    steps_.push_back(std::move(step));
  }
}

NodeFailure GraphProgram::describe(const json& node, const std::string& message) const {
  NodeFailure f;
  f.node = node.value("name", "");
  f.op = node.value("target", node.value("op", ""));
  if (node.contains("location")) {
    const json& loc = node["location"];
    f.location = loc.value("file", "") + ":" + std::to_string(loc.value("line", 0)) + "  " + loc.value("code", "");
  }
  if (node.contains("scope") && !node["scope"].empty()) {
    const json& inner = node["scope"].back();
    f.scope = inner.value("path", "") + " (" + inner.value("class", "") + ")";
  }
  f.message = message;
  return f;
}

c10::IValue GraphProgram::callPython(const Step& step, const Env& env) const {
  const json& args = (*step.node)["args"];
  auto arg = [&](size_t i) { return toIValue(args.at(i), nullptr, env); };
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
  if (name == "pow") return ints && b.toInt() >= 0 ? c10::IValue((int64_t)std::llround(std::pow(a.toInt(), b.toInt())))
                                                   : c10::IValue(std::pow(number(a), number(b)));
  if (name == "eq") return number(a) == number(b);
  if (name == "ne") return number(a) != number(b);
  if (name == "lt") return number(a) < number(b);
  if (name == "le") return number(a) <= number(b);
  if (name == "gt") return number(a) > number(b);
  if (name == "ge") return number(a) >= number(b);
  throw std::runtime_error("the Python function " + t + " is not run here");
}

std::optional<std::vector<c10::IValue>> GraphProgram::run(const std::vector<c10::IValue>& inputs,
                                                          NodeFailure* failure) const {
  Env env;
  env.reserve(steps_.size() + inputs_.size());
  for (size_t i = 0; i < inputs_.size() && i < inputs.size(); ++i) env[inputs_[i]] = inputs[i];
  std::vector<c10::IValue> stack;
  for (const Step& step : steps_) {
    try {
      const json& node = *step.node;
      if (step.op) {
        const auto& params = step.op->schema().arguments();
        stack.clear();
        for (size_t i = 0; i < params.size(); ++i) {
          if (step.constants[i]) {
            stack.push_back(*step.constants[i]);
          } else {
            bool given = false;
            stack.push_back(toIValue(argAt(node, params[i], i, &given), params[i].type(), env));
          }
        }
        step.op->callBoxed(&stack);
        env[step.name] = stack.size() == 1 ? std::move(stack[0]) : c10::IValue(c10::ivalue::Tuple::create(stack));
      } else if (node.value("op", "") == "get_attr") {
        env[step.name] = constants_.at(step.target);
      } else {
        env[step.name] = callPython(step, env);
      }
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (size_t cut = message.find("\nException raised from"); cut != std::string::npos) message.resize(cut);
      *failure = describe(*step.node, message);
      return std::nullopt;
    }
  }
  std::vector<c10::IValue> outputs;
  if (output_ && output_->contains("args") && !(*output_)["args"].empty()) {
    const json& result = (*output_)["args"][0];
    const json& items = result.is_object() && result.contains("tuple") ? result["tuple"] : result;
    if (items.is_array()) {
      for (const json& item : items) outputs.push_back(toIValue(item, nullptr, env));
    } else {
      outputs.push_back(toIValue(items, nullptr, env));
    }
  }
  return outputs;
}

}  // namespace dynrep::replay::run
