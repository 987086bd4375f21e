// The emitter's spelling of values, types, constants, symbolic sizes and locations as MLIR text.
#include "emitter.h"
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

#include "dynrep/replay/query/size_expr.h"

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
Value Value::complex(double re, double im) {
  Value v;
  v.kind = Kind::Complex;
  v.number = re;
  v.imag = im;
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
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
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
  } else {                                                 // f16: inf and nan only
    std::snprintf(buf, sizeof buf, "0x%04X", std::isnan(v) ? 0x7E00u : (v > 0 ? 0x7C00u : 0xFC00u));
  }
  return buf;
}

}  // namespace

std::string Scalars::constant(double v, DType t) {
  if (isComplex(t)) {  // v + 0i
    DType part = componentType(t);
    std::string name = e.fresh("c");
    std::string re = constant(v, part), im = constant(0, part);
    e.line(name + " = complex.create " + re + ", " + im + " : " + elementType(t));
    return name;
  }
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

// Complex to complex converts both parts; real to complex has imaginary part 0; complex to a
// real dtype keeps the real part (PyTorch warns and does the same), to bool tests both parts.
std::string Scalars::castComplex(const std::string& v, DType from, DType to) {
  if (!isComplex(from)) {
    DType part = componentType(to);
    std::string re = cast(v, from, part), name = e.fresh("cx");
    e.line(name + " = complex.create " + re + ", " + constant(0, part) + " : " + elementType(to));
    return name;
  }
  DType part = componentType(from);
  std::string re = unary("complex.re", v, from);
  if (to == DType::Bool) {
    std::string im = unary("complex.im", v, from);
    return op("arith.ori", cast(re, part, DType::Bool), cast(im, part, DType::Bool), DType::Bool);
  }
  if (!isComplex(to)) return cast(re, part, to);
  std::string im = unary("complex.im", v, from);
  DType toPart = componentType(to);
  std::string name = e.fresh("cx");
  e.line(name + " = complex.create " + cast(re, part, toPart) + ", " + cast(im, part, toPart) + " : " +
         elementType(to));
  return name;
}

std::string Scalars::cast(const std::string& v, DType from, DType to) {
  if (from != to && (isComplex(from) || isComplex(to))) return castComplex(v, from, to);
  if (from == to || (std::string(elementType(from)) == elementType(to) && from != DType::U8 && to != DType::U8))
    return v;
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
    e.line(name + " = " + (bitWidth(to) > bitWidth(from) ? "arith.extf " : "arith.truncf ") + v + " : " + f + " to " +
           t);
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

// An arith or math op spelled over complex values would not verify, or worse: refused by name.
static void requireReal(const std::string& name, DType t) {
  if (isComplex(t) && name.rfind("complex.", 0) != 0) throw Unsupported(name + " on complex values is not lowered");
}

std::string Scalars::op(const std::string& name, const std::string& a, const std::string& b, DType t) {
  requireReal(name, t);
  std::string out = e.fresh();
  e.line(out + " = " + name + " " + a + ", " + b + " : " + elementType(t));
  return out;
}

std::string Scalars::unary(const std::string& name, const std::string& a, DType t) {
  requireReal(name, t);
  std::string out = e.fresh();
  e.line(out + " = " + name + " " + a + " : " + elementType(t));
  return out;
}

std::string Scalars::cmp(const std::string& predicate, const std::string& a, const std::string& b, DType t) {
  std::string out = e.fresh();
  if (isComplex(t)) {  // complex numbers are not ordered: equality only
    bool eq = predicate == "eq" || predicate == "oeq", ne = predicate == "ne" || predicate == "une";
    if (!eq && !ne) throw Unsupported("the comparison " + predicate + " of complex values");
    e.line(out + " = " + (eq ? "complex.eq " : "complex.neq ") + a + ", " + b + " : " + elementType(t));
    return out;
  }
  e.line(out + " = " + (isFloat(t) ? "arith.cmpf " : "arith.cmpi ") + predicate + ", " + a + ", " + b + " : " +
         elementType(t));
  return out;
}

std::string Scalars::select(const std::string& c, const std::string& a, const std::string& b, DType t) {
  std::string out = e.fresh();
  e.line(out + " = arith.select " + c + ", " + a + ", " + b + " : " + elementType(t));
  return out;
}

std::string Scalars::of(const Value& v, DType t) {
  if (v.kind == Value::Kind::Complex) {
    if (!isComplex(t)) throw Unsupported("a complex scalar in arithmetic of dtype " + std::string(dtypeName(t)));
    std::string name = e.fresh("c");
    std::string re = constant(v.number, componentType(t)), im = constant(v.imag, componentType(t));
    e.line(name + " = complex.create " + re + ", " + im + " : " + elementType(t));
    return name;
  }
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

std::string Emitter::toIndex(const std::string& i64) {
  return assign("idx", "arith.index_cast " + i64 + " : i64 to index");
}

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

bool Emitter::plainSymbol(const std::string& expr) {
  if (expr.empty() || !std::isalpha(static_cast<unsigned char>(expr[0]))) return false;
  for (char c : expr)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string Emitter::sizeOf(const Dim& dim) { return dim.isStatic() ? index(dim.size) : symbolValue(dim.expr); }

std::string Emitter::dimSize(const TensorType& t, size_t d) { return sizeOf(t.dims.at(d)); }

namespace {

using SizeKind = SizeExpr::Kind;

// One size-expression node as index arithmetic, its operands already emitted.
class SizeOps {
 public:
  SizeOps(Emitter& e, const std::map<std::string, std::string>& symbols) : e_(e), symbols_(symbols) {}

  std::string spell(const SizeExpr& n, const Strings& a) {
    switch (n.kind) {
      case SizeKind::Integer: return e_.index(n.value);
      case SizeKind::Symbol: {
        auto it = symbols_.find(n.name);
        if (it == symbols_.end()) throw Unsupported("the symbol " + n.name + " has no value here (not an input size)");
        return it->second;
      }
      case SizeKind::Add: return bin("arith.addi", a[0], a[1]);
      case SizeKind::Sub: return bin("arith.subi", a[0], a[1]);
      case SizeKind::Mul: return bin("arith.muli", a[0], a[1]);
      case SizeKind::Neg: return bin("arith.subi", e_.index(0), a[0]);
      case SizeKind::FloorDiv: return bin("arith.floordivsi", a[0], a[1]);
      case SizeKind::CeilDiv: return bin("arith.ceildivsi", a[0], a[1]);
      case SizeKind::TruncDiv: return bin("arith.divsi", a[0], a[1]);
      case SizeKind::Mod:  // floor modulo, a - (a // b) * b: remsi would keep a's sign
        return bin("arith.subi", a[0], bin("arith.muli", bin("arith.floordivsi", a[0], a[1]), a[1]));
      case SizeKind::Pow: return power(n, a[0]);
      case SizeKind::Max:
      case SizeKind::Min: {
        std::string v = a[0];
        for (size_t i = 1; i < a.size(); ++i) v = bin(n.kind == SizeKind::Max ? "arith.maxsi" : "arith.minsi", v, a[i]);
        return v;
      }
      case SizeKind::Eq:
      case SizeKind::Ne:
      case SizeKind::Lt:
      case SizeKind::Le:
      case SizeKind::Gt:
      case SizeKind::Ge:
      case SizeKind::Where: throw Unsupported("a comparison in a size is not lowered");
    }
    throw Unsupported("a size expression node of unknown kind");
  }

 private:
  std::string bin(const char* op, const std::string& a, const std::string& b) {
    std::string out = e_.fresh("sz");
    e_.line(out + " = " + op + " " + a + ", " + b + " : index");
    return out;
  }
  // x**n for a constant n, as n - 1 products.
  std::string power(const SizeExpr& n, const std::string& base) {
    const SizeExpr& exponent = n.args[1];
    if (exponent.kind != SizeKind::Integer) throw Unsupported("a power whose exponent is not a constant");
    if (exponent.value == 0) return e_.index(1);
    if (exponent.value > 64) throw Unsupported("a power of exponent " + std::to_string(exponent.value));
    std::string v = base;
    for (int64_t i = 1; i < exponent.value; ++i) v = bin("arith.muli", v, base);
    return v;
  }

  Emitter& e_;
  const std::map<std::string, std::string>& symbols_;
};

}  // namespace

std::string Emitter::symbolValue(const std::string& expr) {
  auto it = exprCache_.find(expr);
  if (it != exprCache_.end() && depth_ == 0) return it->second;
  Result<SizeExpr> tree = parseSizeExpr(expr);
  if (!tree.isOk()) throw Unsupported(tree.status().message());
  SizeOps ops(*this, symbols_);
  std::string v = spellSize(*tree, [&](const SizeExpr& n, const Strings& a) { return ops.spell(n, a); });
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
  line(name + " = linalg.fill ins(" + c + " : " + elementType(t.dtype) + ") outs(" + e + " : " + t.str() + ") -> " +
       t.str());
  return name;
}

std::string Emitter::cast(const Value& tensor, const TensorType& to) {
  if (tensor.type.str() == to.str()) return tensor.ssa;
  std::string name = fresh("tc");
  line(name + " = tensor.cast " + tensor.ssa + " : " + tensor.type.str() + " to " + to.str());
  return name;
}

std::string Emitter::generic(const TensorType& out, const std::vector<std::string>& outMap,
                             const std::vector<GenericInput>& ins, const std::vector<std::string>& iterators,
                             const std::function<std::string(std::vector<std::string>&)>& body,
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
                           const std::function<std::string(Scalars&, std::vector<std::string>&)>& body,
                           bool boolResult) {
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
  std::string ssa =
      generic(out, loopDims(out.rank()), ins, Strings(out.rank(), "parallel"), [&](std::vector<std::string>& args) {
        Scalars s = scalars();
        std::vector<std::string> values;
        for (size_t i = 0; i < operands.size(); ++i) {
          if (slot[i] < 0)
            values.push_back(s.of(operands[i], compute));
          else
            values.push_back(s.cast(args[slot[i]], operands[i].type.dtype, compute));
        }
        std::string r = body(s, values);
        return s.cast(r, boolResult ? DType::Bool : compute, out.dtype);
      });
  return Value::tensor(ssa, out);
}

}  // namespace dynrep::replay::lowering
