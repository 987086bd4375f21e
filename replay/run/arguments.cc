#include "arguments.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <ATen/ScalarOps.h>

namespace dynrep::replay::run {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

double special(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::stod(text);
}

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

c10::IValue list(const json& items, const c10::TypePtr& type, const Env& env) {
  c10::TypePtr elem = unwrapOptional(element(unwrapOptional(type)));
  bool optionalElem = element(unwrapOptional(type)) && element(unwrapOptional(type))->kind() == c10::TypeKind::OptionalType;
  c10::TypeKind kind = elem ? elem->kind() : c10::TypeKind::AnyType;
  if (kind == c10::TypeKind::TensorType && optionalElem) {
    c10::List<std::optional<at::Tensor>> out;
    for (const json& item : items) {
      c10::IValue v = toIValue(item, elem, env);
      out.push_back(v.isNone() ? std::optional<at::Tensor>() : std::optional<at::Tensor>(v.toTensor()));
    }
    return out;
  }
  if (kind == c10::TypeKind::TensorType) {
    c10::List<at::Tensor> out;
    for (const json& item : items) out.push_back(toIValue(item, elem, env).toTensor());
    return out;
  }
  if (kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType) {
    c10::List<int64_t> out;
    for (const json& item : items) out.push_back(toInt(toIValue(item, elem, env)));
    return out;
  }
  if (kind == c10::TypeKind::FloatType) {
    c10::List<double> out;
    for (const json& item : items) out.push_back(toIValue(item, elem, env).toDouble());
    return out;
  }
  if (kind == c10::TypeKind::BoolType) {
    c10::List<bool> out;
    for (const json& item : items) out.push_back(toIValue(item, elem, env).toBool());
    return out;
  }
  std::vector<c10::IValue> values;  // a list the schema does not type: keep each value as is
  for (const json& item : items) values.push_back(toIValue(item, elem, env));
  return c10::ivalue::Tuple::create(std::move(values));
}

}  // namespace

c10::ScalarType scalarType(const std::string& name) {
  static const std::unordered_map<std::string, c10::ScalarType> kTypes = {
      {"float16", c10::kHalf},  {"bfloat16", c10::kBFloat16}, {"float32", c10::kFloat},
      {"float64", c10::kDouble}, {"int8", c10::kChar},        {"int16", c10::kShort},
      {"int32", c10::kInt},     {"int64", c10::kLong},        {"uint8", c10::kByte},
      {"bool", c10::kBool},     {"complex64", c10::kComplexFloat}, {"complex128", c10::kComplexDouble},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) fail("unsupported dtype " + name);
  return it->second;
}

// A Python number where the schema wants a Tensor (`aten::mul.Tensor(x, 2.0)`): PyTorch's
// argument parser passes a wrapped-number tensor, which type promotion treats as a scalar.
at::Tensor wrappedNumber(const json& arg) {
  at::Tensor t = arg.is_boolean()           ? at::scalar_to_tensor(arg.get<bool>())
                 : arg.is_number_integer() ? at::scalar_to_tensor(arg.get<int64_t>())
                                           : at::scalar_to_tensor(arg.is_number() ? arg.get<double>()
                                                                                   : special(arg["float"].get<std::string>()));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

c10::IValue toIValue(const json& arg, const c10::TypePtr& type, const Env& env) {
  c10::TypePtr inner = unwrapOptional(type);
  if (arg.is_null()) return c10::IValue();
  bool wantsTensor = inner && inner->kind() == c10::TypeKind::TensorType;
  if (wantsTensor && (arg.is_number() || arg.is_boolean() || (arg.is_object() && arg.contains("float"))))
    return wrappedNumber(arg);
  if (arg.is_boolean()) return arg.get<bool>();
  if (arg.is_number_integer()) {
    if (inner && inner->kind() == c10::TypeKind::FloatType) return static_cast<double>(arg.get<int64_t>());
    return arg.get<int64_t>();
  }
  if (arg.is_number_float()) return arg.get<double>();
  if (arg.is_string()) return arg.get<std::string>();
  if (arg.is_array()) return list(arg, inner, env);
  if (!arg.is_object() || arg.size() != 1) fail("unreadable argument " + arg.dump());
  const auto& [kind, value] = *arg.items().begin();
  if (kind == "ref") {
    auto it = env.find(value.get<std::string>());
    if (it == env.end()) fail("uses " + value.get<std::string>() + " before it is computed");
    return it->second;
  }
  if (kind == "float") return special(value.get<std::string>());
  if (kind == "dtype") return scalarType(value.get<std::string>());
  if (kind == "layout") return layout(value.get<std::string>());
  if (kind == "memory_format") return memoryFormat(value.get<std::string>());
  if (kind == "device") return c10::Device(value.get<std::string>());
  if (kind == "tuple") return list(value, inner, env);
  fail("argument " + arg.dump() + " is not something an aten operator takes");
}

std::vector<c10::IValue> buildStack(const c10::FunctionSchema& schema, const json& args, const json& kwargs,
                                    const Env& env) {
  std::vector<c10::IValue> stack;
  const std::vector<c10::Argument>& params = schema.arguments();
  if (args.size() > params.size()) fail("more arguments than " + schema.name() + " takes");
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument& p = params[i];
    try {
      if (i < args.size() && !p.kwarg_only()) {
        stack.push_back(toIValue(args[i], p.type(), env));
      } else if (kwargs.is_object() && kwargs.contains(p.name())) {
        stack.push_back(toIValue(kwargs[p.name()], p.type(), env));
      } else if (p.default_value()) {
        stack.push_back(*p.default_value());
      } else {
        fail("no value given and no default");
      }
    } catch (const std::exception& e) {
      fail("argument '" + p.name() + "': " + e.what());
    }
  }
  return stack;
}

}  // namespace dynrep::replay::run
