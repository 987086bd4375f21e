#include "emitter.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

namespace dynrep::replay::lowering {

Value Value::tensor(std::string ssa, TensorType type) {
  Value v;
  v.kind = Kind::Tensor;
  v.ssa = std::move(ssa);
  v.type = std::move(type);
  return v;
}
Value Value::integer(int64_t n) {
  Value v;
  v.kind = Kind::Int;
  v.number = static_cast<double>(n);
  return v;
}
Value Value::real(double n) {
  Value v;
  v.kind = Kind::Float;
  v.number = n;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.number = b;
  return v;
}
Value Value::scalar(Kind kind, std::string ssa) {
  Value v;
  v.kind = kind;
  v.ssa = std::move(ssa);
  return v;
}
Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind = Kind::List;
  v.items = std::move(items);
  return v;
}

std::string mlirString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string hexBytes(const std::string& bytes) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += kHex[b >> 4], out += kHex[b & 15];
  return out;
}

std::string mapText(size_t loops, const std::vector<std::string>& results) {
  std::string out = "affine_map<(";
  for (size_t i = 0; i < loops; ++i) out += (i ? ", d" : "d") + std::to_string(i);
  out += ") -> (";
  for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : "") + results[i];
  return out + ")>";
}

Strings loopDims(size_t n, size_t from) {
  Strings out;
  for (size_t i = 0; i < n; ++i) out.push_back("d" + std::to_string(from + i));
  return out;
}

Strings broadcastMap(const TensorType& t, const TensorType& space) {
  if (t.rank() > space.rank()) throw Unsupported("an operand of higher rank than the result");
  Strings map;
  size_t lead = space.rank() - t.rank();
  for (size_t d = 0; d < t.rank(); ++d) {
    const Dim& sd = space.dims[lead + d];
    bool broadcast = t.dims[d].isStatic() && t.dims[d].size == 1 && !(sd.isStatic() && sd.size == 1);
    map.push_back(broadcast ? "0" : "d" + std::to_string(lead + d));
  }
  return map;
}

std::string join(const Strings& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// ---- scalars -------------------------------------------------------------------------------

namespace {

// MLIR reads a float literal of any width from the hex of its bits; used for inf, nan and for
// values that must round-trip exactly.
std::string hexFloat(double v, DType t) {
  char buf[32];
  if (t == DType::F64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(bits));
    return buf;
  }
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (t == DType::F32) {
    std::snprintf(buf, sizeof buf, "0x%08X", bits);
  } else if (t == DType::BF16) {
    std::snprintf(buf, sizeof buf, "0x%04X", bits >> 16);  // inf/nan keep their top bits
  } else {  // f16: inf and nan only
    std::snprintf(buf, sizeof buf, "0x%04X", std::isnan(v) ? 0x7E00u : (v > 0 ? 0x7C00u : 0xFC00u));
  }
  return buf;
}

}  // namespace

std::string Scalars::constant(double v, DType t) {
  std::string name = e.fresh("c");
  std::string literal;
  if (t == DType::Bool) {
    literal = v != 0 ? "true" : "false";
  } else if (!isFloat(t)) {
    literal = std::to_string(static_cast<int64_t>(v)) + " : " + elementType(t);
  } else if (!std::isfinite(v)) {
    literal = hexFloat(v, t) + " : " + elementType(t);
  } else {
    std::ostringstream s;
    s.precision(17);
    s << std::scientific << v;
    literal = s.str() + " : " + elementType(t);
  }
  e.line(name + " = arith.constant " + literal);
  return name;
}

std::string Scalars::cast(const std::string& v, DType from, DType to) {
  if (from == to || (std::string(elementType(from)) == elementType(to) && from != DType::U8 && to != DType::U8)) return v;
  std::string name = e.fresh("cv");
  std::string f = elementType(from), t = elementType(to);
  if (to == DType::Bool) {
    std::string zero = constant(0, from);
    e.line(name + " = " + (isFloat(from) ? "arith.cmpf une, " : "arith.cmpi ne, ") + v + ", " + zero + " : " + f);
    return name;
  }
  if (isFloat(from) && isFloat(to)) {
    if (bitWidth(from) == bitWidth(to)) {  // f16 <-> bf16: through f32
      std::string mid = cast(v, from, DType::F32);
      return cast(mid, DType::F32, to);
    }
    e.line(name + " = " + (bitWidth(to) > bitWidth(from) ? "arith.extf " : "arith.truncf ") + v + " : " + f + " to " + t);
  } else if (isFloat(to)) {
    e.line(name + " = " + (isUnsigned(from) ? "arith.uitofp " : "arith.sitofp ") + v + " : " + f + " to " + t);
  } else if (isFloat(from)) {
    e.line(name + " = " + (isUnsigned(to) ? "arith.fptoui " : "arith.fptosi ") + v + " : " + f + " to " + t);
  } else if (bitWidth(to) > bitWidth(from)) {
    e.line(name + " = " + (isUnsigned(from) ? "arith.extui " : "arith.extsi ") + v + " : " + f + " to " + t);
  } else if (bitWidth(to) < bitWidth(from)) {
    e.line(name + " = arith.trunci " + v + " : " + f + " to " + t);
  } else {
    return v;
  }
  return name;
}

std::string Scalars::op(const std::string& name, const std::string& a, const std::string& b, DType t) {
  std::string out = e.fresh();
  e.line(out + " = " + name + " " + a + ", " + b + " : " + elementType(t));
  return out;
}

std::string Scalars::unary(const std::string& name, const std::string& a, DType t) {
  std::string out = e.fresh();
  e.line(out + " = " + name + " " + a + " : " + elementType(t));
  return out;
}

std::string Scalars::cmp(const std::string& predicate, const std::string& a, const std::string& b, DType t) {
  std::string out = e.fresh();
  e.line(out + " = " + (isFloat(t) ? "arith.cmpf " : "arith.cmpi ") + predicate + ", " + a + ", " + b + " : " + elementType(t));
  return out;
}

std::string Scalars::select(const std::string& c, const std::string& a, const std::string& b, DType t) {
  std::string out = e.fresh();
  e.line(out + " = arith.select " + c + ", " + a + ", " + b + " : " + elementType(t));
  return out;
}

std::string Scalars::of(const Value& v, DType t) {
  if (v.isConst()) return constant(v.number, t);
  DType from = v.kind == Value::Kind::Float ? DType::F64 : v.kind == Value::Kind::Bool ? DType::Bool : DType::I64;
  if (v.kind == Value::Kind::Tensor) throw Unsupported("a tensor where a scalar was expected");
  return cast(v.ssa, from, t);
}

// ---- emitter -------------------------------------------------------------------------------

std::string Emitter::fresh(const std::string& hint) { return "%" + hint + std::to_string(counter_++); }

void Emitter::line(const std::string& text) {
  text_.append(static_cast<size_t>(indent_), ' ');
  text_ += text;
  if (!loc_.empty()) text_ += " " + loc_;
  text_ += '\n';
}

void Emitter::open(const std::string& text) {
  text_.append(static_cast<size_t>(indent_), ' ');
  text_ += text + "\n";
  indent_ += 2;
  depth_++;
}

void Emitter::close(const std::string& text) {
  indent_ -= 2;
  depth_--;
  line(text);
}

void Emitter::label(const std::string& text) {
  text_.append(static_cast<size_t>(indent_ - 2), ' ');
  text_ += text + "\n";
}

std::string Emitter::assign(const std::string& hint, const std::string& rhs) {
  std::string name = fresh(hint);
  line(name + " = " + rhs);
  return name;
}

std::string Emitter::loopIndex(size_t d) { return assign("li", "linalg.index " + std::to_string(d) + " : index"); }

std::string Emitter::indexOp(const std::string& op, const std::string& a, const std::string& b) {
  return assign("ix", op + " " + a + ", " + b + " : index");
}

std::string Emitter::toIndex(const std::string& i64) { return assign("idx", "arith.index_cast " + i64 + " : i64 to index"); }

std::string Emitter::fromIndex(const std::string& index, DType to) {
  return scalars().cast(assign("n", "arith.index_cast " + index + " : index to i64"), DType::I64, to);
}

std::string Emitter::indexCmp(const std::string& predicate, const std::string& a, const std::string& b) {
  return assign("ic", "arith.cmpi " + predicate + ", " + a + ", " + b + " : index");
}

Value Emitter::copyInto(const Value& v, const TensorType& out) {
  return elementwise(out, {v}, computeType(out.dtype), [](Scalars&, Strings& a) { return a[0]; });
}

std::string Emitter::index(int64_t v) {
  if (depth_ == 0) {
    auto it = indexCache_.find(v);
    if (it != indexCache_.end()) return it->second;
  }
  std::string name = fresh("i");
  line(name + " = arith.constant " + std::to_string(v) + " : index");
  if (depth_ == 0) indexCache_[v] = name;
  return name;
}

void Emitter::bindSymbol(const std::string& symbol, const std::string& indexSsa) { symbols_[symbol] = indexSsa; }

std::string Emitter::sizeOf(const Dim& dim) { return dim.isStatic() ? index(dim.size) : symbolValue(dim.expr); }

std::string Emitter::dimSize(const TensorType& t, size_t d) { return sizeOf(t.dims.at(d)); }

namespace {

// Recursive descent over the size expressions sympy prints (+ - * // % **, Max, Min,
// FloorDiv, Mod, CeilDiv, parentheses), emitting index arithmetic.
class ExprEmitter {
 public:
  ExprEmitter(Emitter& e, const std::string& text, const std::map<std::string, std::string>& symbols)
      : e_(e), s_(text), symbols_(symbols) {}

  std::string parse() {
    std::string v = sum();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + s_.substr(pos_) + "'");
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::strlen(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    if (n == 1 && (tok[0] == '*' || tok[0] == '/') && pos_ + 1 < s_.size() && s_[pos_ + 1] == tok[0]) return false;
    pos_ += n;
    return true;
  }
  [[noreturn]] void fail(const std::string& why) { throw Unsupported("size expression '" + s_ + "': " + why); }
  std::string bin(const char* op, const std::string& a, const std::string& b) {
    std::string out = e_.fresh("sz");
    e_.line(out + " = " + op + " " + a + ", " + b + " : index");
    return out;
  }
  std::string sum() {
    std::string v = product();
    for (;;) {
      if (eat("+")) v = bin("arith.addi", v, product());
      else if (eat("-")) v = bin("arith.subi", v, product());
      else return v;
    }
  }
  std::string product() {
    std::string v = power();
    for (;;) {
      if (eat("*")) v = bin("arith.muli", v, power());
      else if (eat("//")) v = bin("arith.floordivsi", v, power());
      else if (eat("%")) v = bin("arith.remsi", v, power());
      else return v;
    }
  }
  std::string power() {
    std::string base = unary();
    if (!eat("**")) return base;
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_) fail("a power whose exponent is not a constant");
    std::string v = base;
    for (int i = 1; i < std::stoi(s_.substr(start, pos_ - start)); ++i) v = bin("arith.muli", v, base);
    return v;
  }
  std::string unary() {
    if (eat("-")) return bin("arith.subi", e_.index(0), unary());
    return atom();
  }
  std::string atom() {
    skip();
    if (eat("(")) {
      std::string v = sum();
      if (!eat(")")) fail("missing ')'");
      return v;
    }
    size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return e_.index(std::stoll(s_.substr(start, pos_ - start)));
    }
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string name = s_.substr(start, pos_ - start);
    if (name.empty()) fail("expected a symbol or a number");
    if (eat("(")) {
      std::vector<std::string> args{sum()};
      while (eat(",")) args.push_back(sum());
      if (!eat(")")) fail("missing ')'");
      const char* op = name == "Max" ? "arith.maxsi" : name == "Min" ? "arith.minsi"
                       : name == "FloorDiv" ? "arith.floordivsi" : name == "CeilDiv" ? "arith.ceildivsi"
                       : (name == "Mod" || name == "PythonMod") ? "arith.remsi" : nullptr;
      if (!op || args.size() < 2) fail("the function " + name + " is not lowered");
      std::string v = args[0];
      for (size_t i = 1; i < args.size(); ++i) v = bin(op, v, args[i]);
      return v;
    }
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail("the symbol " + name + " has no value here (not an input size)");
    return it->second;
  }

  Emitter& e_;
  const std::string& s_;
  const std::map<std::string, std::string>& symbols_;
  size_t pos_ = 0;
};

}  // namespace

std::string Emitter::symbolValue(const std::string& expr) {
  auto it = exprCache_.find(expr);
  if (it != exprCache_.end() && depth_ == 0) return it->second;
  std::string v = ExprEmitter(*this, expr, symbols_).parse();
  if (depth_ == 0) exprCache_[expr] = v;
  return v;
}

std::string Emitter::empty(const TensorType& t) {
  std::string dyn;
  for (size_t d = 0; d < t.rank(); ++d)
    if (!t.dims[d].isStatic()) dyn += (dyn.empty() ? "" : ", ") + dimSize(t, d);
  std::string name = fresh("e");
  line(name + " = tensor.empty(" + dyn + ") : " + t.str());
  return name;
}

std::string Emitter::fill(const TensorType& t, double v) {
  std::string e = empty(t);
  Scalars s = scalars();
  std::string c = s.constant(v, t.dtype);
  std::string name = fresh("f");
  line(name + " = linalg.fill ins(" + c + " : " + elementType(t.dtype) + ") outs(" + e + " : " + t.str() + ") -> " + t.str());
  return name;
}

std::string Emitter::cast(const Value& tensor, const TensorType& to) {
  if (tensor.type.str() == to.str()) return tensor.ssa;
  std::string name = fresh("tc");
  line(name + " = tensor.cast " + tensor.ssa + " : " + tensor.type.str() + " to " + to.str());
  return name;
}

std::string Emitter::generic(const TensorType& out, const std::vector<std::string>& outMap, const std::vector<GenericInput>& ins,
                             const std::vector<std::string>& iterators, const std::function<std::string(std::vector<std::string>&)>& body,
                             const std::string& init) {
  std::string dest = init.empty() ? empty(out) : init;
  std::string maps, insText, insTypes, iters;
  std::vector<const GenericInput*> tensors;
  for (const GenericInput& in : ins) tensors.push_back(&in);
  for (const GenericInput* in : tensors) {
    maps += mapText(iterators.size(), in->map) + ", ";
    insText += (insText.empty() ? "" : ", ") + in->ssa;
    insTypes += (insTypes.empty() ? "" : ", ") + in->type.str();
  }
  maps += mapText(iterators.size(), outMap);
  for (size_t i = 0; i < iterators.size(); ++i) iters += std::string(i ? ", " : "") + mlirString(iterators[i]);
  std::string name = fresh("g");
  std::string head = name + " = linalg.generic {indexing_maps = [" + maps + "], iterator_types = [" + iters + "]}";
  if (!insText.empty()) head += " ins(" + insText + " : " + insTypes + ")";
  head += " outs(" + dest + " : " + out.str() + ") {";
  open(head);
  std::vector<std::string> args;
  std::string blockArgs;
  for (size_t i = 0; i <= tensors.size(); ++i) {
    std::string a = "%b" + std::to_string(counter_++);
    DType t = i < tensors.size() ? tensors[i]->type.dtype : out.dtype;
    blockArgs += (i ? ", " : "") + a + ": " + elementType(t);
    args.push_back(a);
  }
  label("^bb0(" + blockArgs + "):");
  std::string result = body(args);
  line("linalg.yield " + result + " : " + elementType(out.dtype));
  close("} -> " + out.str());
  return name;
}

Value Emitter::elementwise(const TensorType& out, const std::vector<Value>& operands, DType compute,
                           const std::function<std::string(Scalars&, std::vector<std::string>&)>& body, bool boolResult) {
  std::vector<GenericInput> ins;
  std::vector<int> slot;  // operand -> block argument index, or -1 for a scalar
  for (const Value& v : operands) {
    if (!v.isTensor()) {
      slot.push_back(-1);
      continue;
    }
    slot.push_back(static_cast<int>(ins.size()));
    ins.push_back({v.ssa, v.type, broadcastMap(v.type, out)});
  }
  std::string ssa = generic(out, loopDims(out.rank()), ins, Strings(out.rank(), "parallel"), [&](std::vector<std::string>& args) {
    Scalars s = scalars();
    std::vector<std::string> values;
    for (size_t i = 0; i < operands.size(); ++i) {
      if (slot[i] < 0) values.push_back(s.of(operands[i], compute));
      else values.push_back(s.cast(args[slot[i]], operands[i].type.dtype, compute));
    }
    std::string r = body(s, values);
    return s.cast(r, boolResult ? DType::Bool : compute, out.dtype);
  });
  return Value::tensor(ssa, out);
}

}  // namespace dynrep::replay::lowering
