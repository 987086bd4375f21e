// The torch dialect form of a graph IR: the module torch-mlir's FX importer
// (python/torch_mlir/extras/fx_importer.py, import_stateless_graph with
// import_symbolic_shape_expressions) writes for an aten graph, printed in MLIR's generic op syntax
// so that plain MLIR tools parse it (mlir-opt --allow-unregistered-dialect) and torch-mlir-opt
// reads it as the ops themselves.
//
// The importer's conventions, kept here (checked against its source and torch-mlir's TorchOps.td
// and GeneratedTorchOps.td):
//  - `ns::name.overload` is the op `torch.ns.name.overload`, `.default` dropped; an op torch-mlir
//    does not define is `torch.operator` with `name = "torch.ns.name..."`. The importer asks the
//    MLIR context; here the registry is approximated: aten ops are defined except kAtenMissing,
//    prims only kPrimsDefined, other namespaces never.
//  - Operands in schema order, absent ones from the schema's default text. Scalars are
//    torch.constant.{int,float,bool,str,none,device}; dtype, layout and memory format their enum
//    numbers; lists torch.prim.ListConstruct; a number for a Tensor torch.prim.NumToTensor.Scalar;
//    a bool for an int/float torch.aten.Int.bool/Float.bool; {add,sub,mul,div}.Tensor with a
//    scalar `other` its .Scalar overload; lift_fresh_copy clone, sym_size.int size.int.
//  - Tuple results are op results (getitem picks one); a Tensor[] result is one
//    !torch.list<vtensor> that the first getitem unpacks with torch.prim.ListUnpack.
//  - Python arithmetic on SymInts is torch.aten.<op>.{int,float,float_int}, as the importer's
//    PY_BUILTIN_TO_TORCH_OP and its int-to-float promotion (torch.aten.Float.Scalar) make it.
//  - Element types f32 f16 bf16 f64 si64 si32 si16 si8 ui8 i1; a None output is a !torch.none result.
//  - One torch.symbolic_int per symbol (range from options.ranges, else [2, int64 max] as
//    int_oo imports), torch.bind_symbolic_shape after every tensor with symbolic sizes or strides,
//    its symbols sorted by name; an expression that is not (semi-)affine (Max, ...) gets no bind.
//  - Graph constants are torch.vtensor.literal: one element as dense<...>, more as
//    dense_resource<torch_tensor_SHAPE_torch.DTYPE> with the bytes in dialect_resources; bool
//    data as ui8 then torch.prims.convert_element_type, as the importer does.
// Where it differs: locations are lowering.cc's (node name fused with file:line and module scope,
// not the importer's call-site stack); zero-element constants are dense<> (no bytes needed); a
// node that cannot be lowered is reported and stood in for by a call to an external function.
// Checked: every aot_* graph of the corpus stores (mlp, gpt, convnet, hf_gpt2_train, hf_bert,
// graph_break, inductor) parses with mlir-opt-19 --allow-unregistered-dialect.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "torch_dialect.h"

namespace dynrep::replay::lowering {

// With the graph's constant data (blob key -> bytes), constants become literals.
LoweredGraph lowerTorchDialect(const nlohmann::json& ir, const LowerOptions& options,
                               const std::map<std::string, std::string>* blobs);

namespace {

using nlohmann::json;

struct Unsupported : std::runtime_error {  // what a node holds that is not lowered
  using std::runtime_error::runtime_error;
};

std::string mlirString(const std::string& s) {  // an MLIR string literal
  std::string out = "\"";
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : c == '\n' ? "\\n" : std::string(1, static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  return out + "\"";
}

// Ops AOTAutograd emits that torch-mlir (2026-08) does not define: they import as torch.operator.
const std::set<std::string> kAtenMissing = {
    "_native_batch_norm_legit", "_native_batch_norm_legit.no_stats", "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention_for_cpu_backward", "slice_backward", "select_backward", "_unsafe_index",
    "squeeze.dims", "fmod.int", "stride", "stride.int", "sym_storage_offset", "_cdist_forward", "_pdist_forward",
    "_fft_r2c", "_fft_c2r", "grid_sampler_2d", "randperm", "bitwise_or.Scalar", "bitwise_xor.Scalar"};
const std::set<std::string> kPrimsDefined = {"collapse", "convert_element_type", "iota", "prod", "split_dim",
                                             "sqrt", "squeeze", "sum", "var", "view_of"};

struct DType {
  const char *torch, *element;
  int scalarType, bytes;  // c10::ScalarType, as torch-mlir's TORCH_DTYPE_TO_INT
};
constexpr DType kDTypes[] = {{"float32", "f32", 6, 4}, {"float64", "f64", 7, 8}, {"float16", "f16", 5, 2},
                             {"bfloat16", "bf16", 15, 2}, {"int64", "si64", 4, 8}, {"int32", "si32", 3, 4},
                             {"int16", "si16", 2, 2}, {"int8", "si8", 1, 1}, {"uint8", "ui8", 0, 1}, {"bool", "i1", 11, 1}};

const DType* dtypeOf(std::string name) {
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  for (const DType& d : kDTypes)
    if (name == d.torch) return &d;
  return nullptr;
}

bool registered(const std::string& name) {  // "aten.add.Tensor"
  std::string ns = name.substr(0, name.find('.')), rest = name.substr(name.find('.') + 1);
  return ns == "aten" ? !kAtenMissing.count(rest) : ns == "prims" && kPrimsDefined.count(rest);
}

// MLIR's float literal needs a '.'; non-finite values are spelled by their bits.
std::string floatAttr(double v) {
  if (std::isnan(v)) return "0x7FF8000000000000";
  if (std::isinf(v)) return v > 0 ? "0x7FF0000000000000" : "0xFFF0000000000000";
  char buf[40];
  for (int p = 1; p <= 17; ++p)
    if (std::snprintf(buf, sizeof buf, "%.*g", p, v), std::strtod(buf, nullptr) == v) break;
  std::string s = buf;
  if (s.find('.') == std::string::npos) s.insert(s.find('e') == std::string::npos ? s.size() : s.find('e'), ".0");
  return s;
}

// The symbols an expression mentions (identifiers that are not function names), in order.
void freeSymbols(const std::string& e, std::vector<std::string>& out) {
  for (size_t i = 0; i < e.size();) {
    if (!std::isalnum(static_cast<unsigned char>(e[i])) && e[i] != '_') { ++i; continue; }
    size_t j = i;
    while (j < e.size() && (std::isalnum(static_cast<unsigned char>(e[j])) || e[j] == '_')) ++j;
    size_t k = e.find_first_not_of(' ', j);
    std::string id = e.substr(i, j - i);
    if (!std::isdigit(static_cast<unsigned char>(e[i])) && (k == std::string::npos || e[k] != '(') &&
        std::find(out.begin(), out.end(), id) == out.end())
      out.push_back(id);
    i = j;
  }
}

// Sympy's printed size expression (`2*s0`, `s0 + 1`, `(s0//2)`, `Mod(s0, 2)`, `s0**2`) as an MLIR
// affine expression over the bind's local symbols; throws for one that is not (semi-)affine.
class Affine {
 public:
  Affine(const std::string& s, const std::map<std::string, std::string>& symbols) : s_(s), symbols_(symbols) {}
  std::string parse() {
    Term t = sum();
    if (skip(), i_ != s_.size()) throw std::runtime_error("trailing text");
    return t.text;
  }

 private:
  struct Term {
    std::string text;
    int prec;  // 0 sum, 1 product, 2 atom
    bool constant;
  };
  static std::string wrap(const Term& t, int prec) { return t.prec < prec ? "(" + t.text + ")" : t.text; }
  static Term binary(Term l, const std::string& op, Term r) {
    if (op == " * " && l.constant && !r.constant) std::swap(l, r);  // MLIR writes the factor last
    return {wrap(l, 1) + op + wrap(r, 2), 1, l.constant && r.constant};
  }
  void skip() { while (i_ < s_.size() && s_[i_] == ' ') ++i_; }
  bool eat(const char* tok) {
    skip();
    if (s_.compare(i_, std::strlen(tok), tok) != 0) return false;
    i_ += std::strlen(tok);
    return true;
  }
  Term sum() {
    for (Term t = product();;) {
      if (eat("+")) t = {t.text + " + " + product().text, 0, false};
      else if (eat("-")) t = {t.text + " - " + wrap(product(), 1), 0, false};
      else return t;
    }
  }
  Term product() {
    for (Term t = unary();;) {
      const char* op = eat("//") ? " floordiv " : eat("**") ? nullptr : eat("*") ? " * " : eat("%") ? " mod " : nullptr;
      if (!op) return t;
      t = binary(t, op, unary());
    }
  }
  Term unary() {
    if (!eat("-")) return power();
    Term t = unary();
    return {"-" + wrap(t, 2), 1, t.constant};
  }
  Term power() {
    Term base = atom(), t = base;
    if (!eat("**")) return t;
    Term n = atom();
    if (!n.constant || std::stoll(n.text) < 1) throw std::runtime_error("power");
    for (long long k = 1; k < std::stoll(n.text); ++k) t = binary(t, " * ", base);
    return t;
  }
  Term atom() {
    skip();
    size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
    std::string id = s_.substr(i_, j - i_);
    i_ = j;
    if (id.empty()) {
      if (!eat("(")) throw std::runtime_error("token");
      Term t = sum();
      if (!eat(")")) throw std::runtime_error("parenthesis");
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(id[0]))) return {std::to_string(std::stoll(id)), 2, true};
    if (eat("(")) {  // Mod(a, b), FloorDiv(a, b); Max, CeilToInt and the rest are not affine
      Term a = sum();
      if (!eat(",")) throw std::runtime_error(id);
      Term b = sum();
      if (!eat(")") || (id != "Mod" && id != "PythonMod" && id != "FloorDiv")) throw std::runtime_error(id);
      return binary(a, id == "FloorDiv" ? " floordiv " : " mod ", b);
    }
    auto it = symbols_.find(id);
    if (it == symbols_.end()) throw std::runtime_error(id);
    return {it->second, 2, false};
  }
  const std::string& s_;
  const std::map<std::string, std::string>& symbols_;
  size_t i_ = 0;
};

struct TV {  // an SSA value and its torch type
  std::string ssa, type;
};
struct NodeValue {
  std::vector<TV> results;
  bool list = false;  // results[0] is a !torch.list the first getitem unpacks into itemTypes
  std::vector<std::string> itemTypes;
};

class TorchLowering {
 public:
  TorchLowering(const json& ir, const LowerOptions& options, const std::map<std::string, std::string>* blobs)
      : ir_(ir), opt_(options), blobs_(blobs) {}

  LoweredGraph run() {
    out_.event = ir_.value("graph", "graph");
    out_.function = out_.event.rfind("aot_", 0) == 0 ? out_.event.substr(4, out_.event.rfind("_graph") - 4) : "graph";
    std::string signature = arguments();
    for (const json& node : ir_["nodes"]) used_.insert("%" + node.value("name", ""));
    for (const json& node : ir_["nodes"]) {
      std::string op = node.value("op", "");
      loc_ = location(node), node_ = node.value("name", ""), named_ = false;
      if (op == "call_function") out_.nodes++, guarded(node, [&] { callFunction(node); });
      else if (op == "get_attr") guarded(node, [&] { constant(node); });
      else if (op == "output") returns(node);
      else if (op != "placeholder") issue(node, "a " + op + " node: only aten graphs (AOTAutograd's) are lowered");
    }
    std::string module = "module attributes {dynrep.graph = " + mlirString(out_.event) +
                         (opt_.compileId.empty() ? "" : ", dynrep.compile = " + mlirString(opt_.compileId)) + "} {\n";
    module += "  func.func @" + out_.function + "(" + signature + ") -> (" + resultTypes_ + ") {\n";
    for (const std::string& l : body_) module += "    " + l + "\n";
    module += "  }\n";
    for (const std::string& decl : declarations_) module += "  " + decl + "\n";
    module += "}\n";
    if (!resources_.empty()) {
      module += "{-#\n  dialect_resources: {\n    builtin: {\n";
      for (size_t i = 0; i < resources_.size(); ++i)
        module += "      " + resources_[i].first + ": \"" + resources_[i].second + (i + 1 < resources_.size() ? "\",\n" : "\"\n");
      module += "    }\n  }\n#-}\n";
    }
    out_.text = module;
    return out_;
  }

 private:
  static std::string location(const json& node) {  // as lowering.cc writes it
    std::string name = mlirString(node.value("name", ""));
    std::vector<std::string> parts;
    if (node.contains("location")) {
      const json& l = node["location"];
      parts.push_back(mlirString(l.value("file", "?")) + ":" + std::to_string(l.value("line", 0)) + ":0");
    }
    if (node.contains("scope") && node["scope"].is_array() && !node["scope"].empty()) {
      const json& inner = node["scope"].back();
      parts.push_back(mlirString(inner.value("path", "") + " (" + inner.value("class", "") + ")"));
    }
    if (parts.empty()) return "loc(" + name + ")";
    std::string out = "loc(fused<" + name + ">[";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    return out + "])";
  }

  void issue(const json& node, const std::string& message) {
    NodeIssue i;
    i.node = node.value("name", "");
    i.op = node.value("target", node.value("op", ""));
    const json& schemas = ir_.value("schemas", json::object());
    if (schemas.contains(i.op)) i.schema = schemas[i.op].value("text", "");
    if (node.contains("location")) {
      const json& l = node["location"];
      i.line = l.value("file", "") + ":" + std::to_string(l.value("line", 0)) + "  " + l.value("code", "");
    }
    if (node.contains("scope") && node["scope"].is_array() && !node["scope"].empty())
      i.scope = node["scope"].back().value("path", "") + " (" + node["scope"].back().value("class", "") + ")";
    i.message = message;
    out_.issues.push_back(std::move(i));
  }

  // A node's ops are all or nothing: on failure its partial text is dropped, the node reported
  // and stood in for by a call to an external function of its types, so its users still lower.
  template <typename F>
  void guarded(const json& node, F lower) {
    size_t mark = body_.size();
    try {
      lower();
      return;
    } catch (const Unsupported& u) {
      issue(node, u.what());
    } catch (const std::exception& ex) {
      issue(node, std::string("lowering failed: ") + ex.what());
    }
    body_.resize(mark);
    std::vector<std::string> types;
    try {
      for (const json& meta : node.value("outputs", json::array())) types.push_back(typeOf(meta));
    } catch (const std::exception&) {
      return;  // its users are reported in turn
    }
    std::string fn = mlirString("unsupported." + node.value("name", "")), list;
    for (size_t i = 0; i < types.size(); ++i) list += (i ? ", " : "") + types[i];
    declarations_.push_back("func.func private @" + fn + "() -> (" + list + ") attributes {dynrep.op = " +
                            mlirString(node.value("target", "")) + "}");
    std::string base = fresh("u");
    line((types.empty() ? "" : base + (types.size() > 1 ? ":" + std::to_string(types.size()) : "") + " = ") +
         "func.call @" + fn + "() : () -> (" + list + ")");
    values_[node.value("name", "")] = {results(base, types)};
  }

  // SSA names read like the IR: a node's value is named after the node, other values after
  // what they are (%int1, %none), made unique with a `.n` suffix FX names never have.
  std::string fresh(std::string hint) {
    for (char& c : hint)
      if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_.$-", c)) c = '_';
    if (hint.empty() || std::isdigit(static_cast<unsigned char>(hint[0]))) hint = "v" + hint;
    if (hint == node_ && !named_) return named_ = true, "%" + hint;
    std::string name = "%" + hint;
    for (int n = 1; !used_.insert(name).second; ++n) name = "%" + hint + "." + std::to_string(n);
    return name;
  }
  void line(const std::string& text) { body_.push_back(text + " " + loc_); }
  static std::vector<TV> results(const std::string& base, const std::vector<std::string>& types) {
    std::vector<TV> out;
    for (size_t i = 0; i < types.size(); ++i) out.push_back({types.size() > 1 ? base + "#" + std::to_string(i) : base, types[i]});
    return out;
  }

  // One op in generic form: %r = "name"(operands) {attrs} : (types) -> results.
  std::vector<TV> op(const std::string& name, const std::vector<TV>& operands, const std::vector<std::string>& types,
                     const std::string& attrs = "", const std::string& hint = "v") {
    std::string base = types.empty() ? "" : fresh(hint), args, argTypes, resultList;
    for (size_t i = 0; i < operands.size(); ++i) args += (i ? ", " : "") + operands[i].ssa, argTypes += (i ? ", " : "") + operands[i].type;
    for (size_t i = 0; i < types.size(); ++i) resultList += (i ? ", " : "") + types[i];
    line((types.empty() ? "" : base + (types.size() > 1 ? ":" + std::to_string(types.size()) : "") + " = ") + mlirString(name) +
         "(" + args + ") " + (attrs.empty() ? "" : "{" + attrs + "} ") + ": (" + argTypes + ") -> " +
         (types.size() == 1 ? resultList : "(" + resultList + ")"));
    return results(base, types);
  }
  std::vector<TV> atenOp(const std::string& name, const std::vector<TV>& operands, const std::vector<std::string>& types,
                         const std::string& hint) {  // name: "aten.add.Tensor"
    if (registered(name)) return op("torch." + name, operands, types, "", hint);
    return op("torch.operator", operands, types, "name = " + mlirString("torch." + name), hint);
  }
  TV constant(const std::string& kind, const std::string& value, const std::string& type, const std::string& hint) {
    return op("torch.constant." + kind, {}, {type}, value.empty() ? "" : "value = " + value, hint)[0];
  }
  TV constInt(int64_t v) { return constant("int", std::to_string(v) + " : i64", "!torch.int", "int" + std::to_string(v)); }
  TV constFloat(double v) { return constant("float", floatAttr(v) + " : f64", "!torch.float", "float"); }
  TV constNone() { return constant("none", "", "!torch.none", "none"); }

  static std::string typeOf(const json& meta) {
    if (meta.contains("dtype")) {
      const DType* d = dtypeOf(meta["dtype"].get<std::string>());
      if (!d) throw Unsupported("dtype " + meta["dtype"].get<std::string>() + " is not lowered");
      std::string shape;
      for (const json& s : meta.value("shape", json::array())) shape += (shape.empty() ? "" : ",") + (s.is_number_integer() ? s.dump() : "?");
      return "!torch.vtensor<[" + shape + "]," + d->element + ">";
    }
    if (meta.contains("sym")) return "!torch." + std::string(meta.value("type", "int") == "float" ? "float" : meta.value("type", "int") == "bool" ? "bool" : "int");
    if (meta.contains("value")) {
      const json& v = meta["value"];
      return v.is_boolean() ? "!torch.bool" : v.is_number_integer() ? "!torch.int" : v.is_number() ? "!torch.float" : v.is_null() ? "!torch.none" : "!torch.str";
    }
    throw Unsupported("a value of type " + meta.value("unsupported", meta.dump()) + " is not lowered");
  }

  // Placeholders are the function's arguments; then the symbols, then the arguments' binds.
  std::string arguments() {
    std::string signature;
    std::vector<const json*> placeholders;
    std::vector<std::string> symbols;
    std::map<std::string, std::string> sources;
    for (const json& node : ir_["nodes"]) {
      for (const json& meta : node.value("outputs", json::array())) {
        for (const char* key : {"shape", "stride"})
          for (const json& d : meta.value(key, json::array()))
            if (d.is_string()) freeSymbols(d.get<std::string>(), symbols);
        if (meta.contains("sym") && meta["sym"].is_string()) freeSymbols(meta["sym"].get<std::string>(), symbols);
      }
      if (node.value("op", "") != "placeholder") continue;
      placeholders.push_back(&node);
      const json& in = node.value("input", json::object());
      if (in.value("role", "") == "symbol") sources[in.value("symbol", "")] = in.value("source", "");
      const json& meta = node.value("outputs", json::array()).empty() ? json::object() : node["outputs"][0];
      Port port{node.value("name", ""), "", meta, -1};
      std::string arg = "%arg" + std::to_string(out_.inputs.size());
      used_.insert(arg);
      try {
        port.type = typeOf(meta);
      } catch (const std::exception& ex) {
        issue(node, ex.what());
        port.type = "!torch.none";
      }
      setValue(node, {{{arg, port.type}}});
      signature += (signature.empty() ? "" : ", ") + arg + ": " + port.type;
      out_.inputs.push_back(port);
    }
    for (const std::string& s : symbols) {
      auto range = opt_.ranges.count(s) ? opt_.ranges.at(s) : std::pair<int64_t, int64_t>{2, INT64_MAX};
      if (range.second >= (int64_t{1} << 62)) range.second = INT64_MAX;  // int_oo, as the importer writes it
      loc_ = "loc(" + mlirString(sources.count(s) ? sources[s] : s) + ")";
      symbols_[s] = op("torch.symbolic_int", {}, {"!torch.int"}, "symbol_name = " + mlirString(s) + ", min_val = " +
                       std::to_string(range.first) + " : i64, max_val = " + std::to_string(range.second) + " : i64", s)[0].ssa;
    }
    for (const json* node : placeholders) loc_ = location(*node), bindShape(*node);
    return signature;
  }

  void setValue(const json& node, NodeValue v) {
    const json& metas = node.value("outputs", json::array());
    if (v.results.size() == 1 && !v.list && metas.size() == 1 && metas[0].contains("sym") && metas[0]["sym"].is_string())
      symValues_.emplace(metas[0]["sym"].get<std::string>(), v.results[0]);  // for {"sym": expr} arguments
    values_[node.value("name", "")] = std::move(v);
  }

  // torch.bind_symbolic_shape for a node whose one value is a tensor with symbolic sizes or strides.
  void bindShape(const json& node) {
    const json& metas = node.value("outputs", json::array());
    auto it = values_.find(node.value("name", ""));
    if (metas.size() != 1 || it == values_.end() || it->second.results.size() != 1 || it->second.list) return;
    const json& shape = metas[0].value("shape", json::array());
    std::vector<std::string> names;
    bool symbolic = false;
    for (const char* key : {"shape", "stride"})
      for (const json& d : metas[0].value(key, json::array())) symbolic |= d.is_string();
    if (!symbolic) return;
    for (const json& d : shape)
      if (d.is_string()) freeSymbols(d.get<std::string>(), names);
    std::sort(names.begin(), names.end());
    std::map<std::string, std::string> local;
    std::vector<TV> operands{it->second.results[0]};
    std::string symbolList, exprs;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!symbols_.count(names[i])) return;
      local[names[i]] = "s" + std::to_string(i);
      symbolList += (i ? ", s" : "s") + std::to_string(i);
      operands.push_back({symbols_[names[i]], "!torch.int"});
    }
    try {
      for (const json& d : shape) exprs += (exprs.empty() ? "" : ", ") + (d.is_string() ? Affine(d.get<std::string>(), local).parse() : d.dump());
    } catch (const std::exception&) {
      return;  // not affine: torch-mlir has no bind for it either
    }
    op("torch.bind_symbolic_shape", operands, {}, "shape_expressions = affine_map<()" +
       (names.empty() ? "" : "[" + symbolList + "]") + " -> (" + exprs + ")>");
  }

  // The text of a schema default as the IR argument it stands for.
  static json defaultValue(const std::string& text, const std::string& type) {
    if (text == "None") return nullptr;
    if (text == "True" || text == "False") return text == "True";
    if (text.front() == '[') return json::parse(text);
    if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'')) return text.substr(1, text.size() - 2);
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    if (*end == '\0') return text.find_first_of(".eEni") != std::string::npos ? json(number) : json(std::stoll(text));
    std::string base = type.substr(0, type.find('?'));
    if (base == "ScalarType") return {{"dtype", text}};
    if (base == "Layout" || base == "MemoryFormat" || base == "Device") return {{base == "Layout" ? "layout" : base == "Device" ? "device" : "memory_format", text}};
    if (text == "Mean" || text == "Sum") return text == "Mean" ? 1 : 2;  // at::Reduction
    throw Unsupported("the default '" + text + "' of a " + type + " argument");
  }

  // One IR argument as an SSA value of the torch type the schema's type asks for.
  TV arg(const json& a, const std::string& schemaType) {
    std::string type = schemaType.substr(0, schemaType.find('?') == schemaType.size() - 1 ? schemaType.size() - 1 : std::string::npos);
    std::string base = type.substr(0, type.find('['));
    if (a.is_object() && a.contains("tuple")) return arg(a["tuple"], schemaType);
    if (a.is_array()) return list(a, type.find('[') == std::string::npos ? "" : base);
    if (a.is_null()) return constNone();
    if (a.is_boolean()) return convertBool(constant("bool", a.get<bool>() ? "true" : "false", "!torch.bool", a.dump()), base);
    if (a.is_number() && base == "Tensor") {  // a wrapped scalar, as torch.tensor(a) would make it
      TV n = a.is_number_float() ? constFloat(a.get<double>()) : constInt(a.get<int64_t>());
      return op("torch.prim.NumToTensor.Scalar", {n}, {a.is_number_float() ? "!torch.vtensor<[],f32>" : "!torch.vtensor<[],si64>"})[0];
    }
    if (a.is_number()) return base == "float" || a.is_number_float() ? constFloat(a.get<double>()) : constInt(a.get<int64_t>());
    if (a.is_string()) return constant("str", mlirString(a.get<std::string>()), "!torch.str", "str");
    if (!a.is_object() || a.size() != 1) throw Unsupported("an argument of unknown form: " + a.dump());
    const std::string& key = a.begin().key();
    const json& v = a.begin().value();
    std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text.rfind("torch.", 0) == 0) text = text.substr(6);
    if (key == "ref") {
      auto it = values_.find(text);
      if (it == values_.end()) throw Unsupported("uses " + text + ", which was not lowered");
      if (it->second.results.size() != 1 || it->second.list) throw Unsupported("uses " + text + ", a tuple, as one value");
      return convertBool(it->second.results[0], base);
    }
    if (key == "float") return constFloat(text == "nan" ? NAN : text == "-inf" ? -INFINITY : INFINITY);
    if (key == "dtype") {
      if (!dtypeOf(text)) throw Unsupported("dtype " + text + " is not lowered");
      return constInt(dtypeOf(text)->scalarType);
    }
    static const std::map<std::string, int> kEnums = {
        {"strided", 0}, {"sparse_coo", 1}, {"sparse_csr", 2}, {"sparse_csc", 3}, {"sparse_bsr", 4}, {"sparse_bsc", 5},
        {"contiguous_format", 0}, {"preserve_format", 1}, {"channels_last", 2}, {"channels_last_3d", 3}};
    if ((key == "layout" || key == "memory_format") && kEnums.count(text)) return constInt(kEnums.at(text));
    if (key == "device") return constant("device", mlirString(text), "!torch.Device", text);
    if (key == "sym" && symValues_.count(text)) return symValues_.at(text);
    throw Unsupported("a " + key + " argument (" + text + ") is not lowered");
  }

  TV convertBool(const TV& v, const std::string& base) {  // the importer's _convert_type
    if (v.type != "!torch.bool") return v;
    if (base == "float") return op("torch.aten.Float.bool", {v}, {"!torch.float"})[0];
    if (base == "int" || base == "SymInt" || base == "Scalar") return op("torch.aten.Int.bool", {v}, {"!torch.int"})[0];
    return v;
  }

  TV list(const json& items, std::string element) {
    bool optional = !element.empty() && element.back() == '?';
    if (optional) element.pop_back();
    std::vector<TV> values;
    for (const json& item : items) values.push_back(arg(item, element));
    std::string kind = element == "Tensor" ? "vtensor" : element == "SymInt" ? "int" : element;
    for (const TV& v : values)  // no schema type: the elements say
      if (kind.empty() && v.type != "!torch.none") kind = v.type.rfind("!torch.vtensor", 0) == 0 ? "vtensor" : v.type.substr(7);
    if (kind.empty()) kind = "int";
    return op("torch.prim.ListConstruct", values, {"!torch.list<" + (optional ? "optional<" + kind + ">" : kind) + ">"}, "", "list")[0];
  }

  void callFunction(const json& node) {
    std::string target = node.value("target", "");
    if (target.find("::") == std::string::npos) return python(node, target);
    if (target.rfind("higher_order::", 0) == 0) throw Unsupported("the higher-order operator " + target + " is not lowered");
    if (target == "aten::_assert_async.msg") return setValue(node, {});  // the importer drops it
    const json& schemas = ir_.value("schemas", json::object());
    if (!schemas.contains(target) || !schemas[target].contains("arguments")) throw Unsupported("the IR has no schema for " + target);
    const json& schema = schemas[target];
    const json& args = node.value("args", json::array());
    const json& kwargs = node.value("kwargs", json::object());
    // The importer's renames: symbolic size ops, its canonicalizations, and the Scalar overloads
    // AOTAutograd should have used for a scalar `other`.
    static const std::map<std::string, std::string> kRenamed = {
        {"aten::sym_size.int", "aten.size.int"}, {"aten::sym_size.default", "aten.size"},
        {"aten::sym_stride.int", "aten.stride.int"}, {"aten::sym_stride.default", "aten.stride"},
        {"aten::sym_numel.default", "aten.numel"}, {"aten::lift_fresh_copy.default", "aten.clone"},
        {"aten::_unsafe_index_put.default", "aten._unsafe_index_put.hacked_twin"}};
    std::string ns = target.substr(0, target.find("::")), rest = target.substr(target.find("::") + 2);
    std::string name = ns + "." + (rest.size() > 8 && rest.compare(rest.size() - 8, 8, ".default") == 0 ? rest.substr(0, rest.size() - 8) : rest);
    if (kRenamed.count(target)) name = kRenamed.at(target);
    bool scalarOther = false;
    if ((target == "aten::add.Tensor" || target == "aten::sub.Tensor" || target == "aten::mul.Tensor" || target == "aten::div.Tensor") &&
        args.size() > 1 && (args[1].is_number() || args[1].is_boolean() || isScalarRef(args[1])))
      name = name.substr(0, name.size() - 6) + "Scalar", scalarOther = true;
    std::vector<TV> operands;
    const json& params = schema["arguments"];
    for (size_t i = 0; i < params.size(); ++i) {
      std::string pname = params[i].value("name", ""), type = scalarOther && i == 1 ? "Scalar" : params[i].value("type", "");
      if (i < args.size()) operands.push_back(arg(args[i], type));
      else if (kwargs.contains(pname)) operands.push_back(arg(kwargs[pname], type));
      else if (params[i].contains("default")) operands.push_back(arg(defaultValue(params[i]["default"].is_string() ? params[i]["default"].get<std::string>() : params[i]["default"].dump(), type), type));
      else throw Unsupported("argument '" + pname + "' has no value and no default");
    }
    if (target == "aten::lift_fresh_copy.default") operands.push_back(constNone());  // clone's memory_format
    if (target == "aten::_local_scalar_dense.default" && !operands.empty())
      name = operands[0].type.find(",f") != std::string::npos || operands[0].type.find(",bf") != std::string::npos ? "aten.Float.Tensor" : "aten.Int.Tensor";
    const json& outs = node.value("outputs", json::array());
    const json& returns = schema.value("returns", json::array());
    NodeValue v;
    std::vector<std::string> types;
    for (const json& meta : outs) v.itemTypes.push_back(typeOf(meta));
    std::string returnType = returns.size() == 1 ? returns[0].value("type", "") : "";
    if (returnType.find('[') != std::string::npos) {  // Tensor[], int[]: one list value
      std::string element = returnType.substr(0, returnType.find('['));
      types = {"!torch.list<" + std::string(element == "Tensor" ? "vtensor" : element == "SymInt" ? "int" : element) + ">"};
      v.list = true;
    } else if (returns.size() == 1) {
      if (outs.empty()) throw Unsupported("the node records no output");
      types = {v.itemTypes[0]};
    } else if (!returns.empty()) {
      types = v.itemTypes;
    }
    v.results = atenOp(name, operands, types, node.value("name", ""));
    setValue(node, v);
    bindShape(node);
  }

  bool isScalarRef(const json& a) const {
    if (!a.is_object() || !a.contains("ref") || !values_.count(a["ref"].get<std::string>())) return false;
    const NodeValue& v = values_.at(a["ref"].get<std::string>());
    return v.results.size() == 1 && (v.results[0].type == "!torch.int" || v.results[0].type == "!torch.float" || v.results[0].type == "!torch.bool");
  }

  // getitem, and Python arithmetic on symbolic scalars as the importer maps it to aten ops.
  void python(const json& node, const std::string& target) {
    const json& args = node.value("args", json::array());
    std::string fn = target.substr(target.rfind('.') + 1), module = target.substr(0, target.rfind('.') + 1);
    std::string name = node.value("name", "");
    if (fn == "getitem") {
      std::string source = args.at(0).is_object() ? args[0].value("ref", "") : "";
      if (!values_.count(source)) throw Unsupported("getitem of a value that was not lowered");
      NodeValue& v = values_[source];
      if (v.list && !unpacked_.count(source)) unpacked_[source] = op("torch.prim.ListUnpack", v.results, v.itemTypes, "", source);
      const std::vector<TV>& items = v.list ? unpacked_[source] : v.results;
      int64_t i = args.at(1).get<int64_t>();
      if (i < 0) i += static_cast<int64_t>(items.size());
      if (i < 0 || i >= static_cast<int64_t>(items.size())) throw Unsupported("getitem index out of range");
      setValue(node, {{items[static_cast<size_t>(i)]}});
      return bindShape(node);
    }
    static const std::map<std::string, std::string> kBuiltin = {
        {"truediv", "div"}, {"mul", "mul"}, {"add", "add"}, {"sub", "sub"}, {"lt", "lt"}, {"le", "le"}, {"ge", "ge"},
        {"ne", "ne"}, {"gt", "gt"}, {"mod", "fmod"}, {"eq", "eq"}, {"floordiv", "floordiv"}, {"neg", "neg"}};
    std::string type = typeOf(node.value("outputs", json::array()).at(0)), aten;
    std::vector<TV> operands;
    if (target == "torch.sym_float") {
      operands = {arg(args.at(0), "")};
      aten = "aten.Float.Scalar";
    } else if ((module == "_operator." || module == "operator.") && kBuiltin.count(fn)) {
      std::vector<bool> isInt;
      for (const json& a : args)
        isInt.push_back(a.is_number_integer() || (a.is_object() && a.contains("ref") && values_.count(a["ref"].get<std::string>()) &&
                                                   !values_[a["ref"].get<std::string>()].results.empty() &&
                                                   values_[a["ref"].get<std::string>()].results[0].type == "!torch.int"));
      bool all = std::all_of(isInt.begin(), isInt.end(), [](bool b) { return b; });
      bool any = std::any_of(isInt.begin(), isInt.end(), [](bool b) { return b; });
      bool floatInt = any && !all && (fn == "add" || fn == "lt" || fn == "ge" || fn == "ne" || fn == "gt");
      for (size_t i = 0; i < args.size(); ++i) {
        if (!any || all || floatInt || !isInt[i]) operands.push_back(arg(args[i], ""));
        else if (args[i].is_number()) operands.push_back(constFloat(args[i].get<double>()));  // promoted to float
        else operands.push_back(op("torch.aten.Float.Scalar", {arg(args[i], "")}, {"!torch.float"})[0]);
      }
      if (floatInt && operands.size() == 2 && !isInt[1]) std::swap(operands[0], operands[1]);  // the float first
      aten = "aten." + kBuiltin.at(fn) + (all ? ".int" : floatInt ? ".float_int" : ".float");
    } else {
      throw Unsupported("the Python function " + target + " is not lowered");
    }
    setValue(node, {atenOp(aten, operands, {type}, name)});
  }

  // A graph constant: its stored bytes as a literal.
  void constant(const json& node) {
    std::string target = node.value("target", "");
    const json& constants = ir_.value("constants", json::object());
    if (!constants.contains(target)) throw Unsupported("constant " + target + " is not in the IR");
    const json& c = constants[target];
    if (c.contains("skipped")) throw Unsupported("constant " + target + " was not stored: " + c["skipped"].dump());
    const DType* d = dtypeOf(c.value("dtype", ""));
    if (!d) throw Unsupported("dtype " + c.value("dtype", "?") + " is not lowered");
    bool isBool = d->scalarType == 11;  // imported as uint8, then converted
    std::string element = isBool ? "ui8" : d->element, dims, shape, blobName = "torch_tensor";
    int64_t count = 1;
    for (const json& s : c.value("shape", json::array())) {
      if (!s.is_number_integer()) throw Unsupported("constant " + target + " has a symbolic shape");
      count *= s.get<int64_t>();
      dims += s.dump() + "x", shape += (shape.empty() ? "" : ",") + s.dump(), blobName += "_" + s.dump();
    }
    std::string attr = "dense<> : tensor<" + dims + element + ">";
    if (count > 0) {
      auto blob = blobs_ ? blobs_->find(c.value("blob", "")) : std::map<std::string, std::string>::const_iterator();
      if (!blobs_ || blob == blobs_->end()) throw Unsupported("constant data not available");
      const std::string& bytes = blob->second;
      if (bytes.size() != static_cast<size_t>(count * d->bytes))
        throw Unsupported("constant data has " + std::to_string(bytes.size()) + " bytes, the tensor " + std::to_string(count * d->bytes));
      static const char* hex = "0123456789ABCDEF";
      if (count == 1) {  // a splat, as the importer makes one-element constants
        uint64_t bits = 0;
        for (int i = d->bytes - 1; i >= 0; --i) bits = bits << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
        std::string value;
        if (d->element[0] == 'f' || d->element[0] == 'b') {
          for (int i = d->bytes * 2 - 1; i >= 0; --i) value += hex[(bits >> (4 * i)) & 15];
          value = "0x" + value;
        } else {
          int shift = 64 - 8 * d->bytes;
          value = element[0] == 'u' ? std::to_string(bits) : std::to_string(static_cast<int64_t>(bits << shift) >> shift);
        }
        attr = "dense<" + value + "> : tensor<" + dims + element + ">";
      } else {
        blobName += std::string("_torch.") + d->torch;
        for (int n = 1; !blobNames_.insert(blobName).second; ++n) blobName += "_" + std::to_string(n);
        std::string data = "0x";
        for (int shift = 0; shift < 32; shift += 8) data += hex[(d->bytes >> (shift + 4)) & 15], data += hex[(d->bytes >> shift) & 15];
        for (char b : bytes) data += hex[static_cast<unsigned char>(b) >> 4], data += hex[b & 15];
        resources_.emplace_back(blobName, data);
        attr = "dense_resource<" + blobName + "> : tensor<" + dims + element + ">";
      }
    }
    std::string name = node.value("name", "");
    TV literal = op("torch.vtensor.literal", {}, {"!torch.vtensor<[" + shape + "]," + element + ">"}, "value = " + attr, name)[0];
    if (isBool) literal = op("torch.prims.convert_element_type", {literal, constInt(11)}, {"!torch.vtensor<[" + shape + "],i1>"}, "", name)[0];
    setValue(node, {{literal}});
  }

  void returns(const json& node) {
    const json& args = node.value("args", json::array());
    json items = args.empty() ? json::array() : args[0];
    if (items.is_object() && items.contains("tuple")) items = items["tuple"];
    if (!items.is_array()) items = json::array({items});
    std::vector<TV> values;
    for (size_t i = 0; i < items.size(); ++i) {
      Port port{std::to_string(i), "", json(), -1};
      size_t mark = body_.size();
      try {
        values.push_back(arg(items[i], ""));
        port.type = values.back().type;
        port.result = static_cast<int>(values.size()) - 1;  // a None output is a !torch.none result here
      } catch (const std::exception& ex) {
        body_.resize(mark);
        issue(node, ex.what());
      }
      out_.outputs.push_back(port);
    }
    std::string list, types;
    for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + values[i].ssa, types += (i ? ", " : "") + values[i].type;
    line("return" + (values.empty() ? std::string() : " " + list + " : " + types));
    resultTypes_ = types;
  }

  const json& ir_;
  const LowerOptions& opt_;
  const std::map<std::string, std::string>* blobs_;
  LoweredGraph out_;
  std::vector<std::string> body_, declarations_;
  std::vector<std::pair<std::string, std::string>> resources_;  // dialect_resources: name -> hex
  std::set<std::string> used_, blobNames_;
  std::map<std::string, NodeValue> values_;
  std::map<std::string, std::vector<TV>> unpacked_;  // list results, after their ListUnpack
  std::map<std::string, std::string> symbols_;       // symbol -> its torch.symbolic_int
  std::map<std::string, TV> symValues_;              // a symbolic expression -> the value computing it
  std::string loc_, resultTypes_, node_;  // node_: the node being lowered
  bool named_ = false;                     // whether its value has taken its name
};

}  // namespace

LoweredGraph lowerTorchDialect(const nlohmann::json& ir, const LowerOptions& options,
                               const std::map<std::string, std::string>* blobs) {
  return TorchLowering(ir, options, blobs).run();
}

LoweredGraph lowerTorchDialect(const nlohmann::json& ir, const LowerOptions& options) {
  return lowerTorchDialect(ir, options, nullptr);
}

}  // namespace dynrep::replay::lowering
