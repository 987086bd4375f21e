// Graph IR arguments resolved once to libtorch IValues: constants, node slots and lists of them.
#include "arguments.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <ATen/ScalarOps.h>

namespace dynrep::replay::run {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

c10::MemoryFormat memoryFormat(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (name == "preserve_format") return c10::MemoryFormat::Preserve;
  fail("unknown memory format " + name);
}

c10::Layout layout(const std::string& name) {
  if (name == "strided") return c10::kStrided;
  if (name == "sparse_coo") return c10::kSparse;
  if (name == "_mkldnn") return c10::kMkldnn;
  fail("unknown layout " + name);
}

c10::TypePtr element(const c10::TypePtr& type) {
  if (type && type->kind() == c10::TypeKind::ListType) return type->expectRef<c10::ListType>().getElementType();
  return nullptr;
}

c10::TypePtr unwrapOptional(const c10::TypePtr& type) {
  if (type && type->kind() == c10::TypeKind::OptionalType) return type->expectRef<c10::OptionalType>().getElementType();
  return type;
}

int64_t toInt(const c10::IValue& v) {
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool();
  if (v.isDouble()) return static_cast<int64_t>(v.toDouble());
  fail("expected an int, got " + v.tagKind());
}

// A list as the kernel expects it, from its elements' values: Tensor[], Tensor?[], int[],
// float[], bool[]; a list the schema does not type stays a tuple of the values.
c10::IValue makeList(const std::vector<c10::IValue>& items, const c10::TypePtr& type) {
  c10::TypePtr declared = element(unwrapOptional(type));
  c10::TypePtr elem = unwrapOptional(declared);
  bool optionalElem = declared && declared->kind() == c10::TypeKind::OptionalType;
  c10::TypeKind kind = elem ? elem->kind() : c10::TypeKind::AnyType;
  if (kind == c10::TypeKind::TensorType && optionalElem) {
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& v : items)
      out.push_back(v.isNone() ? std::optional<at::Tensor>() : std::optional<at::Tensor>(v.toTensor()));
    return out;
  }
  if (kind == c10::TypeKind::TensorType) {
    c10::List<at::Tensor> out;
    for (const c10::IValue& v : items) out.push_back(v.toTensor());
    return out;
  }
  if (kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType) {
    c10::List<int64_t> out;
    for (const c10::IValue& v : items) out.push_back(toInt(v));
    return out;
  }
  if (kind == c10::TypeKind::FloatType) {
    c10::List<double> out;
    for (const c10::IValue& v : items) out.push_back(v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble());
    return out;
  }
  if (kind == c10::TypeKind::BoolType) {
    c10::List<bool> out;
    for (const c10::IValue& v : items) out.push_back(v.toBool());
    return out;
  }
  return c10::ivalue::Tuple::create(items);
}

}  // namespace

c10::ScalarType scalarType(const std::string& name) {
  static const std::unordered_map<std::string, c10::ScalarType> kTypes = {
      {"float16", c10::kHalf},
      {"bfloat16", c10::kBFloat16},
      {"float32", c10::kFloat},
      {"float64", c10::kDouble},
      {"int8", c10::kChar},
      {"int16", c10::kShort},
      {"int32", c10::kInt},
      {"int64", c10::kLong},
      {"uint8", c10::kByte},
      {"bool", c10::kBool},
      {"complex64", c10::kComplexFloat},
      {"complex128", c10::kComplexDouble},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) fail("unsupported dtype " + name);
  return it->second;
}

// A Python number where the schema wants a Tensor (`aten::mul.Tensor(x, 2.0)`): PyTorch's
// argument parser passes a wrapped-number tensor, which type promotion treats as a scalar.
static at::Tensor wrappedNumber(const at::Scalar& number) {
  at::Tensor t = at::scalar_to_tensor(number);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

static at::Tensor wrappedNumber(const Argument& arg) {
  return wrappedNumber(arg.kind == Argument::Kind::Bool  ? at::Scalar(arg.boolean)
                       : arg.kind == Argument::Kind::Int ? at::Scalar(arg.integer)
                                                         : at::Scalar(arg.real));
}

Resolved resolve(const Argument& arg, const c10::TypePtr& type, const Slots& slots) {
  using K = Argument::Kind;
  c10::TypePtr inner = unwrapOptional(type);
  Resolved out;
  auto constant = [](c10::IValue value) { return constantValue(std::move(value)); };
  if (arg.kind == K::None) return constant(c10::IValue());
  bool wantsTensor = inner && inner->kind() == c10::TypeKind::TensorType;
  if (wantsTensor && (arg.isNumber() || arg.kind == K::Bool)) return constant(wrappedNumber(arg));
  if (arg.kind == K::Bool) return constant(arg.boolean);
  if (arg.kind == K::Int) {
    if (inner && inner->kind() == c10::TypeKind::FloatType) return constant(static_cast<double>(arg.integer));
    return constant(arg.integer);
  }
  if (arg.kind == K::Float) return constant(arg.real);
  if (arg.kind == K::String) return constant(arg.text);
  if (arg.isSequence()) {
    c10::TypePtr elem = element(inner);
    bool allConstant = true;
    for (const Argument& item : arg.items) {
      out.items_.push_back(resolve(item, elem, slots));
      allConstant = allConstant && out.items_.back().kind_ == Resolved::Kind::Constant;
    }
    out.kind_ = Resolved::Kind::List;
    out.listType_ = inner;
    if (allConstant) return constant(out({}));  // converted once, here
    return out;
  }
  if (arg.kind == K::Ref) {
    auto it = slots.find(arg.text);
    if (it == slots.end()) fail("uses " + arg.text + " before it is computed");
    out.kind_ = Resolved::Kind::Slot;
    out.slot_ = it->second;
    out.wrapNumber_ = wantsTensor;  // a size the graph passes to mul.Tensor: a number at run time
    return out;
  }
  if (arg.kind == K::DType) return constant(scalarType(arg.text));
  if (arg.kind == K::Layout) return constant(layout(arg.text));
  if (arg.kind == K::MemoryFormat) return constant(memoryFormat(arg.text));
  if (arg.kind == K::Device) return constant(c10::Device(arg.text));
  fail("argument " + arg.spelling() + " is not something an aten operator takes");
}

Resolved constantValue(c10::IValue value) {
  Resolved out;
  out.constant_ = std::move(value);
  return out;
}

c10::IValue Resolved::operator()(const std::vector<c10::IValue>& values) const {
  switch (kind_) {
    case Kind::Constant: return constant_;
    case Kind::Slot: {
      const c10::IValue& v = values[slot_];
      if (wrapNumber_ && (v.isInt() || v.isDouble() || v.isBool())) return wrappedNumber(v.toScalar());
      return v;
    }
    case Kind::List: break;
  }
  std::vector<c10::IValue> parts;
  parts.reserve(items_.size());
  for (const Resolved& item : items_) parts.push_back(item(values));
  return makeList(parts, listType_);
}

void Resolved::collectSlots(std::vector<int>* out) const {
  if (kind_ == Kind::Slot) out->push_back(slot_);
  for (const Resolved& item : items_) item.collectSlots(out);
}

}  // namespace dynrep::replay::run
