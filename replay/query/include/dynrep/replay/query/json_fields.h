// Typed reads of the JSON a store's events carry. A store is data from elsewhere: a field that
// is missing or of another type gives the fallback instead of an exception, so one odd record
// never stops a report.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace dynrep::replay {

// `j` as a T, or nullopt when it holds another type. An integer T takes only integers it can
// hold (a negative number is no unsigned; 1e300 is no int: converting it would be undefined).
template <typename T>
std::optional<T> as(const nlohmann::json& j) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (j.is_string()) return j.template get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (j.is_boolean()) return j.template get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (j.is_number_unsigned() && j.template get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max()))
      return T(j.template get<uint64_t>());
    if constexpr (std::is_signed_v<T>) {
      if (j.is_number_integer() && !j.is_number_unsigned() &&
          j.template get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
          j.template get<int64_t>() <= int64_t(std::numeric_limits<T>::max()))
        return T(j.template get<int64_t>());
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (j.is_number()) return j.template get<T>();
  }
  return std::nullopt;
}

// j[key] as a T, or `fallback` when j is no object, the key is missing or holds another type.
template <typename T>
T field(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it == j.end() ? fallback : as<T>(*it).value_or(fallback);
}

// j[key] when it is an array, else an empty one: a count or a loop over it never throws.
inline nlohmann::json arrayField(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nlohmann::json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : nlohmann::json::array();
}

inline std::string field(const nlohmann::json& j, const char* key, const char* fallback) {
  return field<std::string>(j, key, fallback);
}

// A JSON document from a store, or, when it does not parse, a note saying so (a discarded
// value would print as invalid JSON).
inline nlohmann::json parseOrNote(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json("(unreadable JSON: " + std::to_string(text.size()) + " bytes)") : j;
}

// JSON text of a value whose strings may come from a store: invalid UTF-8 is replaced, not thrown.
inline std::string dumpJson(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dynrep::replay
