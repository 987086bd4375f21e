// The torch dialect form of a graph IR: what torch-mlir's FX importer (fx_importer.py,
// import_stateless_graph with import_symbolic_shape_expressions) writes for an aten graph, in MLIR's
// generic op syntax, which plain MLIR tools parse (mlir-opt --allow-unregistered-dialect) and
// torch-mlir-opt reads as the ops. Conventions kept, from the importer and torch-mlir's op
// definitions: `ns::name.overload` is `torch.ns.name.overload` (`.default` dropped), an op torch-mlir
// lacks is `torch.operator` named "torch.ns.name" (registered() approximates the registry);
// operands in schema order, defaults filled; scalars as torch.constant.*, dtypes and enums as
// ints, lists as prim.ListConstruct; tuple results as op results, Tensor[] as a list unpacked by
// prim.ListUnpack; SymInt arithmetic as aten.<op>.{int,float,float_int}; torch.symbolic_int per
// symbol and torch.bind_symbolic_shape after each symbolic tensor; constants as vtensor.literal
// (a dense splat, or dense_resource with options.constants' bytes in dialect_resources).
// Differences: locations are the linalg lowering's (graph_nodes.h); zero-element constants are dense<>; a node that
// cannot be lowered is reported and stood in for by a call to an external function. Checked: every aot_* graph of the
// corpus stores (mlp, gpt, convnet, hf_gpt2_train, hf_bert, graph_break, inductor) lowers without issues and parses
// with mlir-opt-19 --allow-unregistered-dialect.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "to_torch_dialect.h"

#include "dynrep/replay/query/size_expr.h"
#include "emitter.h"
#include "graph_nodes.h"

namespace dynrep::replay::lowering {

namespace {

// Ops AOTAutograd emits that torch-mlir (2026-08) does not define, so they import as torch.operator.
const std::set<std::string> kAtenMissing = {"_native_batch_norm_legit",
                                            "_native_batch_norm_legit.no_stats",
                                            "_native_batch_norm_legit_no_training",
                                            "_native_batch_norm_legit_functional",
                                            "_scaled_dot_product_efficient_attention",
                                            "_scaled_dot_product_flash_attention",
                                            "_scaled_dot_product_flash_attention_for_cpu",
                                            "_scaled_dot_product_flash_attention_for_cpu_backward",
                                            "slice_backward",
                                            "select_backward",
                                            "_unsafe_index",
                                            "squeeze.dims",
                                            "fmod.int",
                                            "stride",
                                            "stride.int",
                                            "sym_storage_offset",
                                            "_cdist_forward",
                                            "_pdist_forward",
                                            "_fft_r2c",
                                            "_fft_c2r",
                                            "grid_sampler_2d",
                                            "randperm",
                                            "bitwise_or.Scalar",
                                            "bitwise_xor.Scalar"};
const std::set<std::string> kPrimsDefined = {
    "collapse", "convert_element_type", "iota", "prod", "split_dim", "sqrt", "squeeze", "sum", "var", "view_of"};

bool registered(const std::string& name) {  // "aten.add.Tensor"
  std::string ns = name.substr(0, name.find('.')), rest = name.substr(name.find('.') + 1);
  return ns == "aten" ? !kAtenMissing.count(rest) : ns == "prims" && kPrimsDefined.count(rest);
}

// MLIR's float literal needs a '.'; non-finite values are spelled by their bits.
std::string floatAttr(double v) {
  if (std::isnan(v) || std::isinf(v))
    return std::isnan(v) ? "0x7FF8000000000000" : v > 0 ? "0x7FF0000000000000" : "0xFFF0000000000000";
  char buf[40];
  for (int p = 1; p <= 17; ++p)
    if (std::snprintf(buf, sizeof buf, "%.*g", p, v), std::strtod(buf, nullptr) == v) break;
  std::string s = buf;
  if (s.find('.') == std::string::npos) s.insert(std::min(s.find('e'), s.size()), ".0");
  return s;
}

bool idChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The symbols an expression mentions (identifiers that are not function names), in order.
void freeSymbols(const std::string& e, std::vector<std::string>& out) {
  for (size_t i = 0, j; i < e.size(); i = std::max(j, i + 1)) {
    for (j = i; j < e.size() && idChar(e[j]);) ++j;
    std::string id = e.substr(i, j - i);
    size_t next = e.find_first_not_of(' ', j);
    if (!id.empty() && !std::isdigit(static_cast<unsigned char>(id[0])) &&
        (next == std::string::npos || e[next] != '(') && std::find(out.begin(), out.end(), id) == out.end())
      out.push_back(id);
  }
}

// Sympy's printed size expression (`2*s0`, `s0 + 1`, `(s0//2)`, `Mod(s0, 2)`, `s0**2`) in MLIR's
// affine syntax, whose precedences are Python's: `//` is floordiv, Mod() mod (floor modulo, which
// affine's is for the positive divisors sizes have), a power a product. Throws for what is not
// (semi-)affine: Max, a comparison.
std::string affine(const std::string& e, const std::map<std::string, std::string>& symbols) {
  using K = SizeExpr::Kind;
  auto spell = [&](const SizeExpr& n, const std::vector<std::string>& a) -> std::string {
    // An operand in brackets where it binds looser than n, or as loose on the right of a
    // left-associative operator: `s0 - (s1 - 1)`.
    auto operand = [&](size_t i) {
      int mine = bindingPower(n.kind == K::CeilDiv ? K::Mul : n.kind), theirs = bindingPower(n.args[i].kind);
      return theirs < mine || (i > 0 && theirs == mine) ? "(" + a[i] + ")" : a[i];
    };
    auto infix = [&](const char* op) { return operand(0) + " " + op + " " + operand(1); };
    switch (n.kind) {
      case K::Integer: return std::to_string(n.value);
      case K::Symbol:
        if (!symbols.count(n.name)) throw std::runtime_error("not affine: " + e);
        return symbols.at(n.name);
      case K::Add: return infix("+");
      case K::Sub: return infix("-");
      case K::Mul: return infix("*");
      case K::Neg: return "-" + operand(0);
      case K::FloorDiv: return infix("floordiv");
      case K::CeilDiv: return infix("ceildiv");
      case K::Mod: return infix("mod");
      case K::Pow: {  // x**n as x * x ...
        const SizeExpr& exponent = n.args[1];
        if (exponent.kind != K::Integer || exponent.value > 64) throw std::runtime_error("power");
        if (exponent.value == 0) return "1";
        std::string base = bindingPower(n.args[0].kind) < bindingPower(K::Mul) ? "(" + a[0] + ")" : a[0];
        std::string v = base;
        for (int64_t k = 1; k < exponent.value; ++k) v += " * " + base;
        return exponent.value == 1 ? v : "(" + v + ")";
      }
      case K::TruncDiv:
      case K::Max:
      case K::Min:
      case K::Where:
      case K::Eq:
      case K::Ne:
      case K::Lt:
      case K::Le:
      case K::Gt:
      case K::Ge: throw std::runtime_error("not affine: " + e);
    }
    throw std::runtime_error("not affine: " + e);
  };
  Result<SizeExpr> tree = parseSizeExpr(e);
  if (!tree.isOk()) throw std::runtime_error(tree.status().message());
  return spellSize(*tree, spell);
}

struct TV {  // an SSA value and its torch type
  std::string ssa, type;
};
struct NodeValue {
  std::vector<TV> results;
  bool list = false;  // results[0] is a !torch.list, unpacked into itemTypes by the first getitem
  std::vector<std::string> itemTypes = {};
};

class TorchLowering {
 public:
  TorchLowering(const Graph& ir, const LowerOptions& options) : ir_(ir), opt_(options) {}

  LoweredGraph run() {
    out_.event = ir_.event.empty() ? "graph" : ir_.event;
    out_.function = functionName(out_.event);
    for (const Node& node : ir_.nodes) used_.insert("%" + node.name);
    std::string signature = arguments();
    for (const Node& node : ir_.nodes) {
      loc_ = nodeLocation(node), node_ = node.name, named_ = false;
      if (node.is(Node::Op::CallFunction))
        out_.nodes++, guarded(node, [&] { callFunction(node); });
      else if (node.is(Node::Op::GetAttr))
        guarded(node, [&] { constant(node); });
      else if (node.is(Node::Op::Output) && return_.empty())
        returns(node);
      else if (!node.is(Node::Op::Placeholder))
        issue(node, "a " + node.opName + " node: only aten graphs (AOTAutograd's) are lowered");
    }
    std::string& m = out_.text;
    m = moduleOpening(out_, opt_, signature, resultTypes_);
    if (return_.empty()) {
      Node output;
      output.name = output.opName = "output", output.op = Node::Op::Output;
      issue(output, "the graph has no output node"), return_ = "return loc(unknown)";
    }
    for (const std::string& l : body_) m += "    " + l + "\n";
    m += "    " + return_ + "\n";
    m += "  }\n";
    for (const std::string& decl : declarations_) m += "  " + decl + "\n";
    m += "}\n";
    for (size_t i = 0; i < resources_.size(); ++i)  // the constants' bytes, after the module
      m += (i ? ",\n      " : "{-#\n  dialect_resources: {\n    builtin: {\n      ") + resources_[i] +
           (i + 1 == resources_.size() ? "\n    }\n  }\n#-}\n" : "");
    return out_;
  }

 private:
  void issue(const Node& node, const std::string& message) { out_.issues.push_back(nodeIssue(ir_, node, message)); }

  // A node lowers whole or not at all: on failure its partial text is dropped, the node reported,
  // and a call to an external function of its types stands in for it so that its users lower.
  template <typename F>
  void guarded(const Node& node, F lower) {
    size_t mark = body_.size();
    try {
      return lower();
    } catch (const Unsupported& u) {
      issue(node, u.what());
    } catch (const std::exception& ex) {
      issue(node, std::string("lowering failed: ") + ex.what());
    }
    body_.resize(mark);
    std::vector<std::string> types;
    try {
      for (const ValueMeta& meta : node.outputs) types.push_back(typeOf(meta));
    } catch (const std::exception&) {
      return;  // its users are reported in turn
    }
    std::string fn = "@" + mlirString("unsupported." + node_), list;
    for (size_t i = 0; i < types.size(); ++i) list += (i ? ", " : "") + types[i];
    declarations_.push_back("func.func private " + fn + "() -> (" + list +
                            ") attributes {dynrep.op = " + mlirString(node.target) + "}");
    values_[node_] = {op("func.call", {}, types, "callee = " + fn, node_)};
  }

  // SSA names read like the IR: a node's value takes the node's name, other values say what they
  // are (%int1, %none), made unique by a `.n` suffix that FX names never have.
  std::string fresh(std::string hint) {
    for (char& c : hint)
      if (!idChar(c) && !std::strchr(".$-", c)) c = '_';
    if (hint.empty() || std::isdigit(static_cast<unsigned char>(hint[0]))) hint = "v" + hint;
    if (hint == node_ && !named_) return named_ = true, "%" + hint;
    std::string name = "%" + hint;
    for (int n = 1; !used_.insert(name).second; ++n) name = "%" + hint + "." + std::to_string(n);
    return name;
  }

  // One op in generic form: %r = "name"(operands) {attrs} : (operand types) -> result types.
  std::vector<TV> op(const std::string& name, const std::vector<TV>& operands, const std::vector<std::string>& types,
                     const std::string& attrs = "", const std::string& hint = "v") {
    std::string base = types.empty() ? "" : fresh(hint), args, argTypes, resultTypes;
    for (size_t i = 0; i < operands.size(); ++i)
      args += (i ? ", " : "") + operands[i].ssa, argTypes += (i ? ", " : "") + operands[i].type;
    for (size_t i = 0; i < types.size(); ++i) resultTypes += (i ? ", " : "") + types[i];
    body_.push_back((types.empty() ? "" : base + (types.size() > 1 ? ":" + std::to_string(types.size()) : "") + " = ") +
                    mlirString(name) + "(" + args + ") " + (attrs.empty() ? "" : "{" + attrs + "} ") + ": (" +
                    argTypes + ") -> " + (types.size() == 1 ? resultTypes : "(" + resultTypes + ")") + " " + loc_);
    std::vector<TV> out;
    for (size_t i = 0; i < types.size(); ++i)
      out.push_back({types.size() > 1 ? base + "#" + std::to_string(i) : base, types[i]});
    return out;
  }
  std::vector<TV> atenOp(const std::string& name, const std::vector<TV>& operands,
                         const std::vector<std::string>& types) {
    if (registered(name)) return op("torch." + name, operands, types, "", node_);
    return op("torch.operator", operands, types, "name = " + mlirString("torch." + name), node_);
  }
  TV constant(const std::string& kind, const std::string& value, const std::string& type, const std::string& hint) {
    return op("torch.constant." + kind, {}, {type}, value.empty() ? "" : "value = " + value, hint)[0];
  }
  TV constInt(int64_t v) {
    return constant("int", std::to_string(v) + " : i64", "!torch.int", "int" + std::to_string(v));
  }
  TV constFloat(double v) { return constant("float", floatAttr(v) + " : f64", "!torch.float", "float"); }

  static std::string typeOf(const ValueMeta& meta) {
    using K = ValueMeta::Kind;
    if (meta.kind == K::Tensor) {
      std::optional<DType> d = parseDType(meta.tensor.dtype);
      if (!d) throw Unsupported("dtype " + meta.tensor.dtype + " is not lowered");
      std::string shape;
      for (const Dimension& s : meta.tensor.shape)
        shape += (shape.empty() ? "" : ",") + (s.isStatic() ? std::to_string(s.size) : "?");
      return "!torch.vtensor<[" + shape + "]," + torchElementType(*d) + ">";
    }
    if (meta.kind == K::Symbolic)
      return meta.symType == "float" || meta.symType == "bool" ? "!torch." + meta.symType : "!torch.int";
    if (meta.kind != K::Plain)
      throw Unsupported("a value of type " + (meta.text.empty() ? std::string("(not recorded)") : meta.text) +
                        " is not lowered");
    using A = Argument::Kind;
    A v = meta.value.kind;
    return v == A::Bool    ? "!torch.bool"
           : v == A::Int   ? "!torch.int"
           : v == A::Float ? "!torch.float"
           : v == A::None  ? "!torch.none"
                           : "!torch.str";
  }

  // Placeholders are the function's arguments; then come the symbols, then the arguments' binds.
  std::string arguments() {
    std::string signature;
    std::vector<std::string> symbols;
    std::map<std::string, std::string> sources;
    for (const Node& node : ir_.nodes) {
      for (const ValueMeta& meta : node.outputs) {
        if (meta.isTensor()) {
          for (const Dimension& d : meta.tensor.shape)
            if (!d.isStatic()) freeSymbols(d.expr, symbols);
          if (meta.tensor.stride)
            for (const Dimension& d : *meta.tensor.stride)
              if (!d.isStatic()) freeSymbols(d.expr, symbols);
        }
        if (meta.kind == ValueMeta::Kind::Symbolic) freeSymbols(meta.sym, symbols);
      }
      if (!node.is(Node::Op::Placeholder)) continue;
      if (node.input && node.input->role == "symbol") sources[node.input->symbol] = node.input->source;
      Port port{node.name, "!torch.none", node.meta() ? *node.meta() : ValueMeta{}, -1};
      std::string arg = "%arg" + std::to_string(out_.inputs.size());
      try {
        port.type = typeOf(port.meta);
      } catch (const std::exception& ex) {
        issue(node, ex.what());
      }
      used_.insert(arg), setValue(node, {{{arg, port.type}}});
      signature += (signature.empty() ? "" : ", ") + arg + ": " + port.type;
      out_.inputs.push_back(port);
    }
    for (const std::string& s : symbols) {
      auto range = opt_.ranges.count(s) ? opt_.ranges.at(s) : std::pair<int64_t, int64_t>{2, INT64_MAX};
      if (range.second >= (int64_t{1} << 62)) range.second = INT64_MAX;  // int_oo, as the importer writes it
      loc_ = "loc(" + mlirString(sources.count(s) ? sources[s] : s) + ")";
      symbols_[s] = op("torch.symbolic_int", {}, {"!torch.int"},
                       "symbol_name = " + mlirString(s) + ", min_val = " + std::to_string(range.first) +
                           " : i64, max_val = " + std::to_string(range.second) + " : i64",
                       s)[0]
                        .ssa;
    }
    for (const Node* node : ir_.placeholders()) loc_ = nodeLocation(*node), bindShape(*node);
    return signature;
  }

  void setValue(const Node& node, NodeValue v) {
    const std::vector<ValueMeta>& metas = node.outputs;
    if (v.results.size() == 1 && !v.list && metas.size() == 1 && metas[0].kind == ValueMeta::Kind::Symbolic)
      symValues_.emplace(metas[0].sym, v.results[0]);  // for {"sym": expr} arguments
    values_[node.name] = std::move(v);
  }

  // torch.bind_symbolic_shape for a node whose one value is a tensor with symbolic sizes or strides.
  void bindShape(const Node& node) {
    const std::vector<ValueMeta>& metas = node.outputs;
    auto it = values_.find(node.name);
    if (metas.size() != 1 || !metas[0].isTensor() || it == values_.end() || it->second.results.size() != 1 ||
        it->second.list)
      return;
    const std::vector<Dimension>& shape = metas[0].tensor.shape;
    std::vector<std::string> names;
    bool symbolic = false;
    for (const Dimension& d : shape) symbolic |= !d.isStatic();
    if (metas[0].tensor.stride)
      for (const Dimension& d : *metas[0].tensor.stride) symbolic |= !d.isStatic();
    if (!symbolic) return;
    for (const Dimension& d : shape)
      if (!d.isStatic()) freeSymbols(d.expr, names);
    std::sort(names.begin(), names.end());  // as the importer orders them
    std::map<std::string, std::string> local;
    std::vector<TV> operands{it->second.results[0]};
    std::string symbolList, exprs;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!symbols_.count(names[i])) return;
      local[names[i]] = "s" + std::to_string(i), symbolList += (i ? ", s" : "[s") + std::to_string(i);
      operands.push_back({symbols_[names[i]], "!torch.int"});
    }
    try {
      for (const Dimension& d : shape)
        exprs += (exprs.empty() ? "" : ", ") + (d.isStatic() ? std::to_string(d.size) : affine(d.expr, local));
    } catch (const std::exception&) {
      return;  // not affine: the importer has no bind for it either
    }
    op("torch.bind_symbolic_shape", operands, {},
       "shape_expressions = affine_map<()" + symbolList + (names.empty() ? "" : "]") + " -> (" + exprs + ")>");
  }

  // A schema default's text as the IR argument it stands for.
  static Argument defaultValue(const std::string& text, const std::string& type) {
    using K = Argument::Kind;
    Argument a;
    if (text.empty() || text == "None") return a;
    if (text == "True" || text == "False") return a.kind = K::Bool, a.boolean = text == "True", a;
    if (text.front() == '[') {  // [0, 0]
      a.kind = K::List;
      std::string inner = text.substr(1, text.size() - 2), item;
      for (size_t start = 0, comma; start < inner.size(); start = comma + 1) {
        comma = std::min(inner.find(',', start), inner.size());
        item = inner.substr(start, comma - start);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        if (!item.empty()) a.items.push_back(defaultValue(item, ""));
      }
      return a;
    }
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\''))
      return a.kind = K::String, a.text = text.substr(1, text.size() - 2), a;
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    if (*end == '\0') {
      if (text.find_first_of(".eEni") != std::string::npos) return a.kind = K::Float, a.real = number, a;
      return a.kind = K::Int, a.integer = std::stoll(text), a;
    }
    std::string base = type.substr(0, type.find('?'));
    if (base == "ScalarType" || base == "Layout" || base == "MemoryFormat" || base == "Device") {
      a.kind = base == "ScalarType" ? K::DType
               : base == "Layout"   ? K::Layout
               : base == "Device"   ? K::Device
                                    : K::MemoryFormat;
      return a.text = text, a;
    }
    if (text == "Mean" || text == "Sum")
      return a.kind = K::Int, a.integer = text == "Mean" ? 1 : 2, a;  // at::Reduction
    throw Unsupported("the default '" + text + "' of a " + type + " argument");
  }

  // One IR argument as an SSA value of the torch type the schema's type asks for.
  TV arg(const Argument& a, const std::string& schemaType) {
    using K = Argument::Kind;
    std::string type =
        schemaType.empty() || schemaType.back() != '?' ? schemaType : schemaType.substr(0, schemaType.size() - 1);
    std::string base = type.substr(0, type.find('['));
    if (a.isSequence()) return list(a.items, type.find('[') == std::string::npos ? "" : base);
    if (a.kind == K::None) return constant("none", "", "!torch.none", "none");
    if (a.kind == K::Bool) {
      std::string v = a.boolean ? "true" : "false";
      return convertBool(constant("bool", v, "!torch.bool", v), base);
    }
    bool finite = a.kind == K::Int || std::isfinite(a.real);  // inf and nan are spelled {"float": ...}, never wrapped
    if (a.isNumber() && finite && base == "Tensor") {         // a wrapped scalar, as torch.tensor(a) makes it
      TV n = a.kind == K::Float ? constFloat(a.real) : constInt(a.integer);
      return op("torch.prim.NumToTensor.Scalar", {n},
                {a.kind == K::Float ? "!torch.vtensor<[],f32>" : "!torch.vtensor<[],si64>"})[0];
    }
    if (a.isNumber()) return base == "float" || a.kind == K::Float ? constFloat(a.number()) : constInt(a.integer);
    if (a.kind == K::String) return constant("str", mlirString(a.text), "!torch.str", "str");
    std::string text = a.text;
    if (a.kind == K::Ellipsis) text = "true";
    if (!a.items.empty()) {  // slice, complex: their items as the IR lists them
      Argument items;
      items.kind = K::List, items.items = a.items;
      text = items.spelling();
    }
    if (text.rfind("torch.", 0) == 0) text = text.substr(6);
    static const std::map<std::string, int> kEnums = {
        {"strided", 0},       {"sparse_coo", 1},      {"sparse_csr", 2},        {"sparse_csc", 3},
        {"sparse_bsr", 4},    {"sparse_bsc", 5},      {"contiguous_format", 0}, {"preserve_format", 1},
        {"channels_last", 2}, {"channels_last_3d", 3}};
    if (a.kind == K::Ref) {
      auto it = values_.find(text);
      if (it == values_.end()) throw Unsupported("uses " + text + ", which was not lowered");
      if (it->second.results.size() != 1 || it->second.list)
        throw Unsupported("uses " + text + ", a tuple, as one value");
      return convertBool(it->second.results[0], base);
    }
    if (a.kind == K::DType && parseDType(text)) return constInt(scalarTypeCode(*parseDType(text)));
    if ((a.kind == K::Layout || a.kind == K::MemoryFormat) && kEnums.count(text)) return constInt(kEnums.at(text));
    if (a.kind == K::Device) return constant("device", mlirString(text), "!torch.Device", text);
    if (a.kind == K::Sym && symValues_.count(text)) return symValues_.at(text);
    throw Unsupported("a " + a.key() + " argument (" + text + ") is not lowered");
  }

  TV convertBool(const TV& v, const std::string& base) {  // the importer's _convert_type
    if (v.type != "!torch.bool") return v;
    if (base == "float") return op("torch.aten.Float.bool", {v}, {"!torch.float"})[0];
    if (base == "int" || base == "SymInt" || base == "Scalar") return op("torch.aten.Int.bool", {v}, {"!torch.int"})[0];
    return v;
  }

  TV list(const std::vector<Argument>& items, std::string element) {
    bool optional = !element.empty() && element.back() == '?';
    if (optional) element.pop_back();
    std::vector<TV> values;
    for (const Argument& item : items) values.push_back(arg(item, element));
    std::string kind = element == "Tensor" ? "vtensor" : element == "SymInt" ? "int" : element;
    for (const TV& v : values)  // no schema type: the elements say
      if (kind.empty() && v.type != "!torch.none")
        kind = v.type.rfind("!torch.vtensor", 0) == 0 ? "vtensor" : v.type.substr(7);
    kind = kind.empty() ? "int" : kind;
    return op("torch.prim.ListConstruct", values, {"!torch.list<" + (optional ? "optional<" + kind + ">" : kind) + ">"},
              "", "list")[0];
  }

  void callFunction(const Node& node) {
    const std::string& target = node.target;
    if (target.find("::") == std::string::npos) return python(node, target);
    if (target.rfind("higher_order::", 0) == 0)
      throw Unsupported("the higher-order operator " + target + " is not lowered");
    if (target == "aten::_assert_async.msg") return setValue(node, {});  // the importer drops it
    const Schema* schema = ir_.schema(target);
    if (!schema) throw Unsupported("the IR has no schema for " + target);
    const std::vector<Argument>& args = node.args;
    const std::vector<SchemaArgument>& params = schema->arguments;
    // The importer's renames: symbolic size ops, its canonicalizations, and the Scalar overloads
    // AOTAutograd should have used for a scalar `other`.
    static const std::map<std::string, std::string> kRenamed = {
        {"aten::sym_size.int", "aten.size.int"},
        {"aten::sym_size.default", "aten.size"},
        {"aten::sym_stride.int", "aten.stride.int"},
        {"aten::sym_stride.default", "aten.stride"},
        {"aten::sym_numel.default", "aten.numel"},
        {"aten::lift_fresh_copy.default", "aten.clone"},
        {"aten::_unsafe_index_put.default", "aten._unsafe_index_put.hacked_twin"},
        // An input mutation AOTAutograd keeps (copy_ into a placeholder): torch-mlir defines copy_
        // over !torch.tensor only, so its value is the functional copy, as the linalg form computes it.
        {"aten::copy_.default", "aten.copy"}};
    std::string name = target.substr(0, target.find("::")) + "." + target.substr(target.find("::") + 2);
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".default") == 0) name.resize(name.size() - 8);
    if (kRenamed.count(target)) name = kRenamed.at(target);
    bool scalarOther =
        std::set<std::string>{"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::div.Tensor"}.count(
            target) &&
        args.size() > 1 && !scalarType(args[1]).empty();
    if (scalarOther) name = name.substr(0, name.size() - 6) + "Scalar";
    std::vector<TV> operands;
    for (size_t i = 0; i < params.size(); ++i) {
      std::string pname = params[i].name, type = scalarOther && i == 1 ? "Scalar" : params[i].type;
      auto kwarg = node.kwargs.find(pname);
      if (i < args.size())
        operands.push_back(arg(args[i], type));
      else if (kwarg != node.kwargs.end())
        operands.push_back(arg(kwarg->second, type));
      else if (params[i].defaultValue)
        operands.push_back(arg(defaultValue(*params[i].defaultValue, type), type));
      else
        throw Unsupported("argument '" + pname + "' has no value and no default");
    }
    if (target == "aten::lift_fresh_copy.default")
      operands.push_back(constant("none", "", "!torch.none", "none"));  // clone's memory_format
    const std::vector<SchemaArgument>& returns = schema->returns;
    NodeValue v;
    for (const ValueMeta& meta : node.outputs) v.itemTypes.push_back(typeOf(meta));
    std::string returned = returns.size() == 1 ? returns[0].type : "";
    std::vector<std::string> types = v.itemTypes;
    if ((v.list = returned.find('[') != std::string::npos)) {  // Tensor[], int[]: one list value
      std::string element = returned.substr(0, returned.find('['));
      types = {"!torch.list<" +
               std::string(element == "Tensor"   ? "vtensor"
                           : element == "SymInt" ? "int"
                                                 : element) +
               ">"};
    } else if (returns.size() == 1) {
      if (types.empty()) throw Unsupported("the node records no output");
      types.resize(1);
    }
    v.results = atenOp(name, operands, types);
    setValue(node, v);
    bindShape(node);
  }

  std::string scalarType(const Argument& a) const {  // !torch.int/float/bool of a literal or a symbolic node, else ""
    if (a.kind == Argument::Kind::Bool || a.kind == Argument::Kind::Int)
      return a.kind == Argument::Kind::Bool ? "!torch.bool" : "!torch.int";
    if (a.kind == Argument::Kind::Float) return std::isfinite(a.real) ? "!torch.float" : "";
    auto it = a.kind == Argument::Kind::Ref ? values_.find(a.text) : values_.end();
    if (it == values_.end() || it->second.results.size() != 1) return "";
    const std::string& t = it->second.results[0].type;
    return t == "!torch.int" || t == "!torch.float" || t == "!torch.bool" ? t : "";
  }

  // getitem, and Python arithmetic on symbolic scalars as the importer maps it to aten ops.
  void python(const Node& node, const std::string& target) {
    const std::vector<Argument>& args = node.args;
    std::string fn = target.substr(target.rfind('.') + 1), module = target.substr(0, target.rfind('.') + 1);
    if (fn == "getitem") {
      std::string source = args.at(0).kind == Argument::Kind::Ref ? args[0].text : "";
      if (!values_.count(source)) throw Unsupported("getitem of a value that was not lowered");
      NodeValue& v = values_[source];
      if (v.list && !unpacked_.count(source))
        unpacked_[source] = op("torch.prim.ListUnpack", v.results, v.itemTypes, "", source);
      const std::vector<TV>& items = v.list ? unpacked_[source] : v.results;
      if (args.at(1).kind != Argument::Kind::Int) throw Unsupported("getitem with an index that is not an integer");
      int64_t i = args[1].integer;
      if (i < 0) i += static_cast<int64_t>(items.size());
      if (i < 0 || i >= static_cast<int64_t>(items.size())) throw Unsupported("getitem index out of range");
      setValue(node, {{items[static_cast<size_t>(i)]}});
      return bindShape(node);
    }
    static const std::map<std::string, std::string> kBuiltin = {
        {"truediv", "div"}, {"mul", "mul"}, {"add", "add"}, {"sub", "sub"},  {"lt", "lt"}, {"le", "le"},
        {"ge", "ge"},       {"ne", "ne"},   {"gt", "gt"},   {"mod", "fmod"}, {"eq", "eq"}, {"floordiv", "floordiv"},
        {"neg", "neg"}};
    std::string type = typeOf(node.outputs.at(0)), name;
    std::vector<TV> operands;
    if (target == "torch.sym_float") {
      operands = {arg(args.at(0), "")}, name = "aten.Float.Scalar";
    } else if ((module == "_operator." || module == "operator.") && kBuiltin.count(fn)) {
      std::vector<bool> isInt;
      for (const Argument& a : args) isInt.push_back(scalarType(a) == "!torch.int");
      bool all = std::count(isInt.begin(), isInt.end(), true) == static_cast<long>(isInt.size()),
           any = std::count(isInt.begin(), isInt.end(), true) > 0;
      bool floatInt = any && !all && std::set<std::string>{"add", "lt", "ge", "ne", "gt"}.count(fn);
      for (size_t i = 0; i < args.size(); ++i)  // mixed: ints become floats, except for the float_int overloads
        operands.push_back(!any || all || floatInt || !isInt[i] ? arg(args[i], "")
                           : args[i].isNumber() && std::isfinite(args[i].number())
                               ? constFloat(args[i].number())
                               : op("torch.aten.Float.Scalar", {arg(args[i], "")}, {"!torch.float"})[0]);
      if (floatInt && operands.size() == 2 && !isInt[1]) std::swap(operands[0], operands[1]);  // the float first
      name = "aten." + kBuiltin.at(fn) + (all ? ".int" : floatInt ? ".float_int" : ".float");
    } else {
      throw Unsupported("the Python function " + target + " is not lowered");
    }
    setValue(node, {atenOp(name, operands, {type})});
  }

  // A graph constant: its stored bytes as a literal, one element as a splat, as the importer does.
  void constant(const Node& node) {
    const std::string& target = node.target;
    auto found = ir_.constants.find(target);
    if (found == ir_.constants.end()) throw Unsupported("constant " + target + " is not in the IR");
    const Constant& c = found->second;
    if (!c.skipped.empty()) throw Unsupported("constant " + target + " was not stored: " + c.skipped);
    std::optional<DType> d = c.tensor ? parseDType(c.tensor->dtype) : std::nullopt;
    if (!d)
      throw Unsupported("dtype " + (c.tensor && !c.tensor->dtype.empty() ? c.tensor->dtype : std::string("?")) +
                        " is not lowered");
    const int bytesPer = static_cast<int>(byteSize(*d));
    std::string element = *d == DType::Bool ? "ui8" : torchElementType(*d), dims, shape,
                blobName = "torch_tensor";  // bool data as uint8
    int64_t count = 1;
    for (const Dimension& s : c.tensor->shape) {
      if (!s.isStatic()) throw Unsupported("constant " + target + " has a symbolic shape");
      std::string n = std::to_string(s.size);
      count *= s.size, dims += n + "x", shape += (shape.empty() ? "" : ",") + n, blobName += "_" + n;
    }
    std::string value;
    if (count > 0) {
      auto blob = opt_.constants.find(target);  // options.constants: the bytes read from the store
      if (blob == opt_.constants.end()) throw Unsupported("constant " + target + ": constant data not available");
      const std::string& bytes = blob->second;
      if (bytes.size() != static_cast<size_t>(count * bytesPer))
        throw Unsupported("constant data has " + std::to_string(bytes.size()) + " bytes, the tensor " +
                          std::to_string(count * bytesPer));
      if (count == 1) {
        uint64_t bits = 0;
        for (int i = bytesPer - 1; i >= 0; --i)
          bits = bits << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
        int shift = 64 - 8 * bytesPer;
        if (element[0] == 'f' || element[0] == 'b')  // floats by their bits (big-endian hex), exactly
          value = "0x" + hexBytes(std::string(bytes.rbegin(), bytes.rend()));
        else
          value =
              element[0] == 'u' ? std::to_string(bits) : std::to_string(static_cast<int64_t>(bits << shift) >> shift);
      } else {
        blobName += std::string("_torch.") + dtypeName(*d);
        for (std::string base = blobName; !blobNames_.insert(blobName).second;)
          blobName = base + "_" + std::to_string(blobNames_.size());
        value = "0x";  // a blob: its alignment (little-endian u32), then the bytes
        const char alignment[4] = {static_cast<char>(bytesPer), 0, 0, 0};  // little-endian u32
        value += hexBytes(std::string(alignment, 4)) + hexBytes(bytes);
        resources_.push_back(blobName + ": \"" + value + "\"");
      }
    }
    std::string attr = count > 1 ? "dense_resource<" + blobName + ">" : "dense<" + value + ">";
    TV literal = op("torch.vtensor.literal", {}, {"!torch.vtensor<[" + shape + "]," + element + ">"},
                    "value = " + attr + " : tensor<" + dims + element + ">", node_)[0];
    if (*d == DType::Bool)
      literal = op("torch.prims.convert_element_type", {literal, constInt(11)}, {"!torch.vtensor<[" + shape + "],i1>"},
                   "", node_)[0];
    setValue(node, {{literal}});
  }

  void returns(const Node& node) {
    std::vector<Argument> items = ir_.returned();
    std::string list, types;
    int results = 0;  // a None output is a !torch.none result too
    for (size_t i = 0; i < items.size(); ++i) {
      Port port{std::to_string(i), "", ValueMeta{}, -1};
      size_t mark = body_.size();
      try {
        TV v = arg(items[i], "");
        list += (list.empty() ? "" : ", ") + v.ssa, types += (types.empty() ? "" : ", ") + v.type;
        port.type = v.type, port.result = results++;
      } catch (const std::exception& ex) {
        body_.resize(mark);
        issue(node, ex.what());
      }
      out_.outputs.push_back(port);
    }
    return_ = "return" + (list.empty() ? std::string() : " " + list + " : " + types) + " " + loc_;  // written last
    resultTypes_ = types;
  }

  const Graph& ir_;
  const LowerOptions& opt_;
  LoweredGraph out_;
  std::vector<std::string> body_, declarations_, resources_;  // resources_: `name: "0x..."`
  std::set<std::string> used_, blobNames_;
  std::map<std::string, NodeValue> values_;
  std::map<std::string, std::vector<TV>> unpacked_;  // list results, after their ListUnpack
  std::map<std::string, std::string> symbols_;       // symbol -> its torch.symbolic_int
  std::map<std::string, TV> symValues_;              // a symbolic expression -> the value computing it
  std::string loc_, resultTypes_, return_, node_;    // node_: the node being lowered
  bool named_ = false;                               // whether node_'s value has taken its name
};

}  // namespace

LoweredGraph lowerTorchDialect(const Graph& ir, const LowerOptions& options) {
  try {
    return TorchLowering(ir, options).run();
  } catch (const std::exception& ex) {  // a malformed placeholder or output: reported, never thrown
    LoweredGraph g;
    g.event = ir.event.empty() ? "graph" : ir.event;
    g.issues.push_back({"", "", "", std::string("lowering failed: ") + ex.what(), "", ""});
    return g;
  }
}

}  // namespace dynrep::replay::lowering
