// Typed reads of the JSON a store's events carry. A store is data from elsewhere: a field that
// is missing or of another type gives the fallback instead of an exception, so one odd record
// never stops a report.
#pragma once

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace dynrep::replay {

template <typename T>
T field(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    if (it->is_string()) return it->template get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (it->is_boolean()) return it->template get<bool>();
  } else if constexpr (std::is_unsigned_v<T>) {
    if (it->is_number_unsigned()) return it->template get<T>();
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (it->is_number()) return it->template get<T>();
  }
  return fallback;
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
