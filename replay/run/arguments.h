// Graph IR arguments -> libtorch IValues, guided by the operator's schema (the IR's JSON says
// what a value is; the schema says which list or optional type the kernel expects).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <nlohmann/json.hpp>

namespace dynrep::replay::run {

using Env = std::unordered_map<std::string, c10::IValue>;  // node name -> its value

c10::ScalarType scalarType(const std::string& name);  // "float32" -> Float; throws on others

// The boxed stack for one call: positional and keyword arguments in schema order, defaults
// from the schema where the graph left them out. Throws std::runtime_error naming the argument.
std::vector<c10::IValue> buildStack(const c10::FunctionSchema& schema, const nlohmann::json& args,
                                    const nlohmann::json& kwargs, const Env& env);

// One argument as an IValue, for the calls that are not operators (getitem, symbolic ints).
c10::IValue toIValue(const nlohmann::json& arg, const c10::TypePtr& type, const Env& env);

}  // namespace dynrep::replay::run
