// Metadata: one trace event's metadata JSON, read field by field, remembering whether any field
// was of another type than PyTorch and capture write. Private to replay/query.
// Thread-safety: one per event, used by one thread.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay {

// A field of another type than PyTorch and capture write (or any field of metadata that is no
// object) reads as its fallback and marks the event odd, so the report says the event was
// unreadable instead of showing the fallback as if it had been recorded. Null reads as
// missing: PyTorch writes it for fields it has no value for.
class Metadata {
 public:
  explicit Metadata(const std::string& text) : j_(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false)) {}

  const nlohmann::json& raw() const { return j_; }
  bool odd() const { return odd_; }
  // Whether the metadata is an object, as every event the report reads has it.
  bool object() {
    odd_ |= !j_.is_object();
    return j_.is_object();
  }
  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }

  template <typename T>
  T get(const char* key, T fallback) {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    std::optional<T> typed = as<T>(*v);
    odd_ |= !typed;
    return typed.value_or(fallback);
  }
  // A text field; a number or boolean prints as JSON (PyTorch writes a symbol's value as a number).
  std::string text(const char* key) {
    const nlohmann::json* v = find(key);
    if (!v) return "";
    if (v->is_string()) return v->get<std::string>();
    odd_ |= v->is_structured();
    return dumpJson(*v);
  }
  // An array field (a stack), or an empty array.
  nlohmann::json array(const char* key) {
    const nlohmann::json* v = find(key);
    if (!v) return nlohmann::json::array();
    odd_ |= !v->is_array();
    return v->is_array() ? *v : nlohmann::json::array();
  }

 private:
  const nlohmann::json* find(const char* key) {
    if (!object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  nlohmann::json j_;  // discarded (no object) when the text does not parse
  bool odd_ = false;
};

}  // namespace dynrep::replay
