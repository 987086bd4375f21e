// The graph driver: one func.func per graph IR. Placeholders become arguments, their symbolic
// sizes are bound and checked at entry, each node goes to its lowering (the custom-op library
// first, then the built-in table), and what cannot be lowered is reported and stood in for by
// a call to an external function, so the rest of the graph still lowers and verifies.
#include <set>
#include <sstream>

#include "dynrep/replay/mlir/lower.h"
#include "dynrep/replay/query/random_ops.h"
#include "graph_nodes.h"
#include "op_call.h"
#include "ops/ops.h"
#include "python_scalars.h"
#include "to_torch_dialect.h"

namespace dynrep::replay::lowering {

namespace {

Value parseDefault(const std::string& text, const std::string& type) {
  if (text == "None") return Value();
  if (text == "True" || text == "False") return Value::boolean(text == "True");
  if (!text.empty() && text.front() == '[') {
    std::vector<Value> items;
    std::stringstream in(text.substr(1, text.size() - 2));
    for (std::string item; std::getline(in, item, ',');)
      if (item.find_first_not_of(' ') != std::string::npos)
        items.push_back(parseDefault(item.substr(item.find_first_not_of(' ')), ""));
    return Value::list(std::move(items));
  }
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end && *end == '\0' && !text.empty()) {
    bool real = text.find_first_of(".eE") != std::string::npos || type.rfind("float", 0) == 0;
    return real ? Value::real(number) : Value::integer(static_cast<int64_t>(number));
  }
  Value v;
  v.kind = Value::Kind::Text;
  v.text = text.size() >= 2 && (text.front() == '"' || text.front() == '\'') ? text.substr(1, text.size() - 2) : text;
  return v;
}

bool complexValue(const Value& v) {
  if (v.kind == Value::Kind::Complex) return true;
  if (v.isTensor()) return isComplex(v.type.dtype);
  for (const Value& item : v.items)
    if (complexValue(item)) return true;
  return false;
}

// Whether a node reads or writes a complex tensor.
bool touchesComplex(const OpCall& c) {
  for (const Value& v : c.args)
    if (complexValue(v)) return true;
  for (const TensorType& t : c.outs)
    if (isComplex(t.dtype)) return true;
  return false;
}

std::string elementOf(const std::string& listType) {
  size_t open = listType.find('[');
  return open == std::string::npos ? "" : listType.substr(0, open);
}

class GraphLowering {
 public:
  GraphLowering(const Graph& ir, const LowerOptions& options) : ir_(ir), opt_(options) {}

  LoweredGraph run() {
    out_.event = ir_.event.empty() ? "graph" : ir_.event;
    out_.function = functionName(out_.event);
    std::string signature = arguments();
    entryChecks();
    for (const Node& node : ir_.nodes) {
      if (node.is(Node::Op::CallFunction)) {
        out_.nodes++;
        if (!drawn_.count(node.name)) lowerNode(node);
      } else if (node.is(Node::Op::GetAttr)) {
        constant(node);
      } else if (node.is(Node::Op::Output)) {
        returns(node);
      } else if (!node.is(Node::Op::Placeholder)) {
        issue(node, "a " + node.opName + " node: only aten graphs (AOTAutograd's) are lowered");
      }
    }
    std::string module = moduleOpening(out_, opt_, signature, resultTypes_);
    module += e_.text();
    module += "  }\n";
    for (const std::string& decl : declarations_) module += "  " + decl + "\n";
    if (opt_.library) module += opt_.library->text;
    module += "}\n";
    out_.text = module;
    return out_;
  }

 private:
  static TensorType tensorType(const TensorMeta& meta) {
    TensorType t;
    auto dtype = parseDType(meta.dtype);
    if (!dtype && meta.dtype.rfind("float8", 0) == 0)
      throw Unsupported("dtype " + meta.dtype +
                        " is not lowered: float8 values would need PyTorch's saturating "
                        "conversions and MLIR's emulation of 8-bit floats, which this lowering does not reproduce");
    if (!dtype) throw Unsupported("dtype " + (meta.dtype.empty() ? std::string("?") : meta.dtype) + " is not lowered");
    t.dtype = *dtype;
    for (const Dimension& d : meta.shape) {
      Dim dim;
      if (d.isStatic())
        dim.size = d.size;
      else
        dim.expr = d.expr;
      t.dims.push_back(dim);
    }
    return t;
  }
  // The value with the layout the IR records for it.
  static Value withLayout(Value v, const TensorMeta& meta) {
    auto toDim = [](const Dimension& d) { return d.isStatic() ? Dim{d.size, ""} : Dim{-1, d.expr}; };
    v.strides.reset();
    if (meta.stride) {
      v.strides.emplace();
      for (const Dimension& d : *meta.stride) v.strides->push_back(toDim(d));
    }
    v.storageOffset.reset();
    if (meta.storageOffset) v.storageOffset = toDim(*meta.storageOffset);
    return v;
  }
  static TensorType tensorType(const ValueMeta& meta) {
    if (!meta.isTensor()) throw Unsupported("dtype ? is not lowered");
    return tensorType(meta.tensor);
  }

  void issue(const Node& node, const std::string& message) { out_.issues.push_back(nodeIssue(ir_, node, message)); }

  std::string arguments() {
    std::string signature;
    int n = 0;
    for (const Node* placeholder : ir_.placeholders()) {
      const Node& node = *placeholder;
      const ValueMeta meta = node.meta() ? *node.meta() : ValueMeta{};
      std::string arg = "%arg" + std::to_string(n++);
      Port port{node.name, "", meta, -1};
      if (meta.kind == ValueMeta::Kind::Symbolic) {
        const std::string& kind = meta.symType;
        Value::Kind k = kind == "float" ? Value::Kind::Float : kind == "bool" ? Value::Kind::Bool : Value::Kind::Int;
        port.type = k == Value::Kind::Float ? "f64" : k == Value::Kind::Bool ? "i1" : "i64";
        values_[port.name] = Value::scalar(k, arg);
        values_[port.name].sym = meta.sym;
        const std::string& expr = meta.sym;
        if (k == Value::Kind::Int && Emitter::plainSymbol(expr) && !e_.bound(expr))
          e_.bindSymbol(expr, e_.toIndex(arg));
      } else if (meta.isTensor()) {
        try {
          TensorType t = tensorType(meta);
          port.type = t.str();
          values_[port.name] = withLayout(Value::tensor(arg, t), meta.tensor);
          for (size_t d = 0; d < t.rank(); ++d)
            if (!t.dims[d].isStatic() && Emitter::plainSymbol(t.dims[d].expr) && !e_.bound(t.dims[d].expr)) {
              std::string idx = e_.fresh("sym");
              e_.line(idx + " = tensor.dim " + arg + ", " + e_.index(static_cast<int64_t>(d)) + " : " + t.str());
              e_.bindSymbol(t.dims[d].expr, idx);
              boundAt_[arg + "/" + std::to_string(d)] = true;
            }
        } catch (const Unsupported& u) {
          issue(node, u.what());
          port.type = "tensor<f32>";
        }
      } else {
        issue(node, "an input that is neither a tensor nor a symbolic scalar");
        port.type = "i64";
      }
      out_.inputs.push_back(port);
      signature += std::string(signature.empty() ? "" : ", ") + arg + ": " + port.type;
      if (port.type.rfind("tensor", 0) == 0 && opt_.dialect != Dialect::Torch)
        signature += " {bufferization.writable = false}";
    }
    if (opt_.dialect != Dialect::Torch) randomArguments(&signature, n);
    return signature;
  }

  // A node that draws random numbers takes its outputs as extra arguments after the graph's
  // inputs (random_ops.h): port "node#i" with the output's description and "random": node.
  void randomArguments(std::string* signature, int n) {
    for (const Node& node : ir_.nodes) {
      if (!drawsRandom(node)) continue;
      std::vector<Value> items;
      size_t position = 0;
      for (const ValueMeta& meta : node.outputs) {
        std::string arg = "%arg" + std::to_string(n++);
        Port port{node.name + "#" + std::to_string(position), "", meta, -1};
        port.random = node.name;
        port.randomOutput = position++;
        try {
          TensorType t = tensorType(meta);
          port.type = t.str();
          items.push_back(Value::tensor(arg, t));
        } catch (const Unsupported& u) {
          issue(node, std::string("a random output that is not a tensor: ") + u.what());
          port.type = "tensor<f32>";
        }
        out_.inputs.push_back(port);
        *signature += (signature->empty() ? "" : ", ") + arg + ": " + port.type + " {bufferization.writable = false}";
      }
      values_[node.name] = items.size() == 1 ? items[0] : Value::list(items);
      drawn_.insert(node.name);
    }
  }

  // Every relation between input sizes and every symbol range PyTorch's guards rely on is
  // asserted, so a call at sizes the graph was not compiled for fails with the reason.
  void entryChecks() {
    for (const Port& port : out_.inputs) {
      const Value& v = values_[port.name];
      if (!v.isTensor()) continue;
      for (size_t d = 0; d < v.type.rank(); ++d) {
        const Dim& dim = v.type.dims[d];
        if (dim.isStatic() || boundAt_.count(v.ssa + "/" + std::to_string(d))) continue;
        try {
          std::string want = e_.symbolValue(dim.expr);
          std::string have = e_.fresh("dim");
          e_.line(have + " = tensor.dim " + v.ssa + ", " + e_.index(static_cast<int64_t>(d)) + " : " + v.type.str());
          std::string ok = e_.fresh("ok");
          e_.line(ok + " = arith.cmpi eq, " + have + ", " + want + " : index");
          e_.line("cf.assert " + ok + ", " +
                  mlirString("input " + port.name + " dim " + std::to_string(d) + " must be " + dim.expr));
        } catch (const Unsupported& u) {
          Node fake;
          fake.name = port.name, fake.op = Node::Op::Placeholder, fake.opName = "placeholder";
          issue(fake, u.what());
        }
      }
    }
    for (const auto& [symbol, range] : opt_.ranges) {
      if (!e_.bound(symbol)) continue;
      std::string value = e_.symbolValue(symbol);
      auto check = [&](const char* pred, int64_t bound, const std::string& what) {
        std::string ok = e_.fresh("ok");
        e_.line(ok + " = arith.cmpi " + pred + ", " + value + ", " + e_.index(bound) + " : index");
        e_.line("cf.assert " + ok + ", " +
                mlirString(symbol + " " + what + " (the compile's range is [" + std::to_string(range.first) + ", " +
                           std::to_string(range.second) + "])"));
      };
      if (range.first > 0) check("sge", range.first, ">= " + std::to_string(range.first));
      if (range.second < (int64_t{1} << 62)) check("sle", range.second, "<= " + std::to_string(range.second));
    }
  }

  Value resolve(const Argument& arg, const std::string& type) {
    using K = Argument::Kind;
    switch (arg.kind) {
      case K::None: return Value();
      case K::Bool: return Value::boolean(arg.boolean);
      case K::Int:
        if (type.rfind("float", 0) == 0) return Value::real(static_cast<double>(arg.integer));
        return Value::integer(arg.integer);
      case K::Float: return Value::real(arg.real);
      case K::String:
      case K::DType:
      case K::Layout:
      case K::MemoryFormat:
      case K::Device: {
        Value v;
        v.kind = Value::Kind::Text;
        v.text = arg.text;
        return v;
      }
      case K::List:
      case K::Tuple: {
        std::vector<Value> items;
        for (const Argument& item : arg.items) items.push_back(resolve(item, elementOf(type)));
        return Value::list(std::move(items));
      }
      case K::Ref: {
        auto it = values_.find(arg.text);
        if (it == values_.end()) throw Unsupported("uses " + arg.text + ", which was not lowered");
        return it->second;
      }
      case K::Sym: return Value::scalar(Value::Kind::Int, e_.fromIndex(e_.symbolValue(arg.text)));
      case K::Complex: {
        if (arg.items.size() != 2) break;
        Value re = resolve(arg.items[0], "float"), im = resolve(arg.items[1], "float");
        if (!re.isConst() || !im.isConst()) break;
        return Value::complex(re.number, im.number);
      }
      case K::Slice:
      case K::Ellipsis:
      case K::Callable:
      case K::Repr:
      case K::Expr:
      case K::Enum: break;
    }
    throw Unsupported("a " + arg.key() + " argument is not lowered");
  }

  // Whether an op's results are views of (or the same memory as) its first argument: its schema
  // gives both one alias set, `Tensor(a) self -> Tensor(a)` (`Tensor(a -> *) self -> Tensor(a)[]`
  // for a split, `Tensor(a!)` in place).
  static bool aliasesFirstArgument(const std::string& schema) {
    auto aliasAt = [&](size_t from) -> std::string {
      if (from == std::string::npos || schema.compare(from, 7, "Tensor(") != 0) return "";
      size_t end = schema.find_first_of(" !)", from + 7);
      return end == std::string::npos ? "" : schema.substr(from + 7, end - from - 7);
    };
    size_t open = schema.find('('), arrow = schema.rfind("->");
    if (open == std::string::npos || arrow == std::string::npos) return false;
    std::string in = aliasAt(open + 1);
    return !in.empty() && aliasAt(schema.find_first_not_of(" (", arrow + 2)) == in;
  }

  // A view's results keep the tensor whose memory they view (Value::storage). Every other op's
  // are new memory and keep none, even where its lowering handed back its input's value (a
  // clone, a copy to the same dtype).
  Value sharingStorage(const OpCall& c, Value result) const {
    const Schema* schema = ir_.schema(c.target);
    std::shared_ptr<const Value> base;
    if (schema && !c.args.empty() && c.args[0].isTensor() && aliasesFirstArgument(schema->text))
      base = c.args[0].storage ? c.args[0].storage : std::make_shared<const Value>(c.args[0]);
    if (result.isTensor()) result.storage = base;
    for (Value& item : result.items)
      if (item.isTensor()) item.storage = base;
    return result;
  }

  void bindOutput(const Node& node, Value value) {
    const std::vector<ValueMeta>& metas = node.outputs;
    auto fix = [&](Value& v, const ValueMeta& meta) {
      if (v.isTensor() && meta.isTensor()) {
        TensorType want = tensorType(meta);
        if (want.str() != v.type.str()) {
          if (want.dtype != v.type.dtype || want.rank() != v.type.rank())
            throw Unsupported("the lowering produced " + v.type.str() + " where the IR says " + want.str());
          v = Value::tensor(e_.cast(v, want), want);
        }
        v = withLayout(std::move(v), meta.tensor);  // this node's, whichever value the lowering reused
      } else if (v.kind == Value::Kind::Int && meta.kind == ValueMeta::Kind::Symbolic) {
        const std::string& expr = meta.sym;
        v.sym = expr;
        if (Emitter::plainSymbol(expr) && !e_.bound(expr)) {
          e_.bindSymbol(expr, e_.toIndex(v.isConst() ? e_.scalars().constant(v.number, DType::I64) : v.ssa));
        }
      }
    };
    if (value.kind == Value::Kind::List && metas.size() == value.items.size())
      for (size_t i = 0; i < metas.size(); ++i) fix(value.items[i], metas[i]);
    else if (metas.size() == 1)
      fix(value, metas[0]);
    values_[node.name] = std::move(value);
  }

  OpCall call(const Node& node, const std::string& target) {
    OpCall c{e_, node, target, {}, {}, {}, {}};
    const Schema* schema = ir_.schema(target);
    if (!schema) throw Unsupported("the IR has no schema for " + target);
    const std::vector<Argument>& args = node.args;
    for (size_t i = 0; i < schema->arguments.size(); ++i) {
      const SchemaArgument& param = schema->arguments[i];
      const std::string &name = param.name, &type = param.type;
      c.names.push_back(name);
      c.types.push_back(type);
      auto kwarg = node.kwargs.find(name);
      if (i < args.size() && !param.kwargOnly)
        c.args.push_back(resolve(args[i], type));
      else if (kwarg != node.kwargs.end())
        c.args.push_back(resolve(kwarg->second, type));
      else if (param.defaultValue)
        c.args.push_back(parseDefault(*param.defaultValue, type));
      else
        throw Unsupported("argument '" + name + "' has no value and no default");
    }
    for (const ValueMeta& meta : node.outputs) c.outs.push_back(meta.isTensor() ? tensorType(meta) : TensorType{});
    return c;
  }

  // Lowers one node at its location, whole or not at all: on failure its partial text (which
  // may leave a linalg.generic region open) is dropped, the node reported and stood in for.
  template <typename F>
  void guarded(const Node& node, const std::string& target, F lower) {
    e_.setLocation(nodeLocation(node));
    Emitter::Checkpoint mark = e_.checkpoint();
    try {
      lower();
    } catch (const Unsupported& u) {
      e_.rollback(mark);
      issue(node, u.what());
      standIn(node, target);
    } catch (const std::exception& ex) {
      e_.rollback(mark);
      issue(node, std::string("lowering failed: ") + ex.what());
      standIn(node, target);
    }
    e_.setLocation("");
  }

  void lowerNode(const Node& node) {
    const std::string& target = node.target;
    guarded(node, target, [&] {
      if (runtimeAssert(node, target)) return;
      if (target.find("::") == std::string::npos) {
        bindOutput(node, python(node, target));
      } else if (opt_.library && opt_.library->functions.count(target)) {
        OpCall c = call(node, target);
        bindOutput(node, libraryCall(c));
      } else {
        auto it = builtinOps().find(target);
        if (it == builtinOps().end()) throw Unsupported("no lowering for " + target);
        OpCall c = call(node, target);
        if (touchesComplex(c) && !loweredForComplex(target))
          throw Unsupported("no lowering for " + target + " on complex tensors");
        bindOutput(node, sharingStorage(c, it->second(c)));
      }
    });
  }

  // The run-time checks PyTorch puts in graphs over symbols (deferred asserts on unbacked
  // sizes, ranges a size must be in) become cf.assert with PyTorch's message: a call the
  // graph was not compiled for fails with the reason, as the compiled code would.
  bool runtimeAssert(const Node& node, const std::string& target) {
    if (target != "aten::_assert_scalar.default" && target != "aten::sym_constrain_range.default" &&
        target != "aten::sym_constrain_range_for_size.default" && target != "aten::_assert_async.msg")
      return false;
    OpCall c = call(node, target);
    Scalars s = e_.scalars();
    if (target == "aten::_assert_scalar.default" || target == "aten::_assert_async.msg") {
      const Value& cond = c.arg(0);
      if (cond.isTensor()) throw Unsupported("an assert on a tensor's value");
      if (cond.isConst() && cond.number != 0) return true;
      std::string message =
          c.args.size() > 1 && c.arg(1).kind == Value::Kind::Text ? c.arg(1).text : "assertion failed";
      e_.line("cf.assert " + s.of(cond, DType::Bool) + ", " + mlirString(message));
      return true;
    }
    // sym_constrain_range[_for_size](size, min, max)
    std::string size = s.of(c.arg(0), DType::I64);
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (c.none(i)) continue;
      int64_t bound = c.integer(i);
      std::string ok =
          s.cmp(i == 1 ? "sge" : "sle", size, s.constant(static_cast<double>(bound), DType::I64), DType::I64);
      e_.line("cf.assert " + ok + ", " +
              mlirString(node.name + ": the size must be " + (i == 1 ? ">= " : "<= ") + std::to_string(bound)));
    }
    return true;
  }

  // A node that was not lowered becomes a call to an external function of the same types, so
  // what follows still lowers and the module still verifies (it is not run).
  void standIn(const Node& node, const std::string& target) {
    std::vector<std::string> types;
    std::vector<TensorType> tensorTypes;
    try {
      for (const ValueMeta& meta : node.outputs) {
        if (meta.isTensor()) {
          tensorTypes.push_back(tensorType(meta));
          types.push_back(tensorTypes.back().str());
        } else {
          tensorTypes.emplace_back();
          types.push_back("i64");
        }
      }
    } catch (const Unsupported&) {
      return;  // its users are reported in turn
    }
    std::string fn = "unsupported." + node.name;
    std::string results, names;
    for (size_t i = 0; i < types.size(); ++i) results += (i ? ", " : "") + types[i];
    declarations_.push_back("func.func private @" + mlirString(fn) + "() -> (" + results +
                            ") attributes {dynrep.op = " + mlirString(target) + "}");
    std::vector<Value> items;
    std::string base = e_.fresh("u");
    e_.line(base + (types.size() > 1 ? ":" + std::to_string(types.size()) : "") + " = func.call @" + mlirString(fn) +
            "() : () -> (" + results + ")");
    for (size_t i = 0; i < types.size(); ++i) {
      std::string ssa = types.size() > 1 ? base + "#" + std::to_string(i) : base;
      items.push_back(tensorTypes[i].dims.empty() && types[i] == "i64" ? Value::scalar(Value::Kind::Int, ssa)
                                                                       : Value::tensor(ssa, tensorTypes[i]));
    }
    values_[node.name] = items.size() == 1 ? items[0] : Value::list(items);
  }

  Value libraryCall(OpCall& c) {
    const LibraryFunction& fn = opt_.library->functions.at(c.target);
    std::vector<std::string> operands, types;
    size_t k = 0;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const Value& v = c.args[i];
      if (v.isNone()) continue;
      if (k >= fn.argTypes.size())
        throw Unsupported("the library's " + c.target + " takes " + std::to_string(fn.argTypes.size()) +
                          " arguments; the node passes more");
      const std::string& want = fn.argTypes[k++];
      if (v.isTensor()) {
        operands.push_back(want == v.type.str() ? v.ssa : e_.fresh("lc"));
        if (want != v.type.str())
          e_.line(operands.back() + " = tensor.cast " + v.ssa + " : " + v.type.str() + " to " + want);
      } else if (v.isScalar()) {
        DType t = want == "f64"   ? DType::F64
                  : want == "f32" ? DType::F32
                  : want == "i1"  ? DType::Bool
                  : want == "i32" ? DType::I32
                                  : DType::I64;
        operands.push_back(e_.scalars().of(v, t));
      } else {
        throw Unsupported("argument '" + c.names[i] + "' cannot be passed to a library function");
      }
      types.push_back(want);
    }
    if (k != fn.argTypes.size())
      throw Unsupported("the library's " + c.target + " takes " + std::to_string(fn.argTypes.size()) +
                        " arguments; the node passes " + std::to_string(k));
    if (fn.resultTypes.size() != c.outs.size())
      throw Unsupported("the library's " + c.target + " returns " + std::to_string(fn.resultTypes.size()) +
                        " values; the node has " + std::to_string(c.outs.size()));
    std::string base = e_.fresh("lib");
    std::string argList, typeList, resultList;
    for (size_t i = 0; i < operands.size(); ++i)
      argList += (i ? ", " : "") + operands[i], typeList += (i ? ", " : "") + types[i];
    for (size_t i = 0; i < fn.resultTypes.size(); ++i) resultList += (i ? ", " : "") + fn.resultTypes[i];
    e_.line(base + (fn.resultTypes.size() > 1 ? ":" + std::to_string(fn.resultTypes.size()) : "") + " = func.call @" +
            mlirString(c.target) + "(" + argList + ") : (" + typeList + ") -> (" + resultList + ")");
    std::vector<Value> items;
    for (size_t i = 0; i < fn.resultTypes.size(); ++i) {
      std::string ssa = fn.resultTypes.size() > 1 ? base + "#" + std::to_string(i) : base;
      TensorType have = c.outs[i];
      // The library result's static dims may differ from the IR's: bindOutput casts to the IR type.
      std::string cast = e_.fresh("lr");
      e_.line(cast + " = tensor.cast " + ssa + " : " + fn.resultTypes[i] + " to " + have.str());
      items.push_back(Value::tensor(cast, have));
    }
    return items.size() == 1 ? items[0] : Value::list(items);
  }

  // The Python-level nodes of aten graphs: tuple indexing and symbolic scalar arithmetic.
  Value python(const Node& node, const std::string& target) {
    const std::vector<Argument>& args = node.args;
    std::string name = target.substr(target.rfind('.') + 1);
    if (name == "getitem") {
      Value seq = resolve(args.at(0), "");
      Value idx = resolve(args.at(1), "int");
      if (seq.kind != Value::Kind::List || !idx.isConst())
        throw Unsupported("getitem on a " + std::string(seq.isTensor() ? "tensor" : "value") + " is not lowered");
      int64_t i = static_cast<int64_t>(idx.number);
      if (i < 0) i += static_cast<int64_t>(seq.items.size());
      if (i < 0 || i >= static_cast<int64_t>(seq.items.size())) throw Unsupported("getitem index out of range");
      return seq.items[static_cast<size_t>(i)];
    }
    std::vector<Value> values;
    for (const Argument& a : args) values.push_back(resolve(a, ""));
    const ValueMeta meta = node.meta() ? *node.meta() : ValueMeta{};
    Value::Kind result = meta.symType == "float"  ? Value::Kind::Float
                         : meta.symType == "bool" ? Value::Kind::Bool
                         : meta.symType == "int"  ? Value::Kind::Int
                                                  : (values.empty() ? Value::Kind::Int : values[0].kind);
    return pythonScalar(e_, target, values, result);
  }

  // A graph constant as a dense literal of its stored bytes.
  void constant(const Node& node) {
    const std::string& target = node.target;
    guarded(node, "get_attr", [&] {
      auto found = ir_.constants.find(target);
      if (found == ir_.constants.end()) throw Unsupported("constant " + target + " is not in the IR");
      const Constant& entry = found->second;
      if (!entry.tensor) throw Unsupported("dtype ? is not lowered");
      TensorType t = tensorType(*entry.tensor);
      auto bytes = opt_.constants.find(target);
      if (bytes == opt_.constants.end())
        throw Unsupported("graph constant " + target + ": its data was not stored (" +
                          (entry.skipped.empty() ? "no blob" : entry.skipped) + ")");
      for (const Dim& d : t.dims)
        if (!d.isStatic()) throw Unsupported("graph constant " + target + " has a symbolic shape");
      std::string name = e_.assign("cst", "arith.constant dense<\"0x" + hexBytes(bytes->second) + "\"> : " + t.str());
      values_[node.name] = Value::tensor(name, t);
    });
  }

  void returns(const Node& node) {
    std::vector<Argument> items = ir_.returned();
    std::vector<std::string> ssa, types;
    for (size_t i = 0; i < items.size(); ++i) {
      Port port{std::to_string(i), "", ValueMeta{}, -1};
      Value v;
      try {
        v = resolve(items[i], "");
      } catch (const Unsupported& u) {
        issue(node, u.what());
        out_.outputs.push_back(port);
        continue;
      }
      if (v.isTensor()) {
        port.type = v.type.str();
        port.meta.kind = ValueMeta::Kind::Tensor;  // MLIR's i8 is int8 or uint8: the dtype says which
        port.meta.tensor.dtype = dtypeName(v.type.dtype);
        ssa.push_back(v.ssa);
      } else if (v.isScalar()) {
        DType t = v.kind == Value::Kind::Float ? DType::F64 : v.kind == Value::Kind::Bool ? DType::Bool : DType::I64;
        port.type = elementType(t);
        ssa.push_back(e_.scalars().of(v, t));
      } else {
        out_.outputs.push_back(port);  // None
        continue;
      }
      port.result = static_cast<int>(types.size());
      types.push_back(port.type);
      out_.outputs.push_back(port);
    }
    std::string list, typeList;
    for (size_t i = 0; i < ssa.size(); ++i) list += (i ? ", " : "") + ssa[i], typeList += (i ? ", " : "") + types[i];
    e_.line("return" + (ssa.empty() ? std::string() : " " + list + " : " + typeList));
    resultTypes_ = typeList;
  }

  const Graph& ir_;
  const LowerOptions& opt_;
  Emitter e_;
  LoweredGraph out_;
  std::map<std::string, Value> values_;
  std::set<std::string> drawn_;          // nodes drawing random numbers: their outputs are arguments
  std::map<std::string, bool> boundAt_;  // "arg/dim" that bound a symbol
  std::vector<std::string> declarations_;
  std::string resultTypes_;
};

}  // namespace

Result<LoweredGraph> lowerGraph(const Graph& ir, const LowerOptions& options) {
  if (ir.format < 2)
    return Status::notSupported(
        "graph IR format 1 (parsed from printed text, without schemas); capture the job again to lower it");
  try {
    if (options.dialect == Dialect::Torch) return lowerTorchDialect(ir, options);
    return GraphLowering(ir, options).run();
  } catch (const std::exception& e) {  // the library's boundary: exceptions stay inside it
    return Status::invalidArgument(std::string("lowering failed: ") + e.what());
  }
}

}  // namespace dynrep::replay::lowering
