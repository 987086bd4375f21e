// Private: cereal save/load for std::string, std::vector and std::map that write the same
// bytes as cereal's own (size tag, then elements) but refuse, on load, a size larger than
// the bytes left in the payload. cereal trusts size tags and would allocate whatever a
// damaged record claims; records.cc includes this instead of cereal/types/{string,vector,map}.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cereal/cereal.hpp>

namespace dynrep::capture::detail {
// Bytes of payload not yet consumed by decode() on this thread, an upper bound on any size tag.
inline thread_local uint64_t decodeBudget = 0;

inline void checkSize(cereal::size_type size) {
  if (size > decodeBudget) throw cereal::Exception("size " + std::to_string(size) + " exceeds the record's length");
}
}  // namespace dynrep::capture::detail

namespace cereal {

template <class Archive>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const std::string& s) {
  ar(make_size_tag(static_cast<size_type>(s.size())));
  ar(binary_data(s.data(), s.size()));
}

template <class Archive>
void CEREAL_LOAD_FUNCTION_NAME(Archive& ar, std::string& s) {
  size_type size;
  ar(make_size_tag(size));
  dynrep::capture::detail::checkSize(size);
  s.resize(static_cast<std::size_t>(size));
  ar(binary_data(s.data(), static_cast<std::size_t>(size)));
}

template <class Archive, class T>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const std::vector<T>& v) {
  ar(make_size_tag(static_cast<size_type>(v.size())));
  for (const T& x : v) ar(x);
}

template <class Archive, class T>
void CEREAL_LOAD_FUNCTION_NAME(Archive& ar, std::vector<T>& v) {
  size_type size;
  ar(make_size_tag(size));
  dynrep::capture::detail::checkSize(size);  // every element takes at least one byte
  v.resize(static_cast<std::size_t>(size));
  for (T& x : v) ar(x);
}

template <class Archive, class K, class V>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const std::map<K, V>& m) {
  ar(make_size_tag(static_cast<size_type>(m.size())));
  for (const auto& [k, v] : m) ar(make_map_item(k, v));
}

template <class Archive, class K, class V>
void CEREAL_LOAD_FUNCTION_NAME(Archive& ar, std::map<K, V>& m) {
  size_type size;
  ar(make_size_tag(size));
  dynrep::capture::detail::checkSize(size);
  m.clear();
  for (size_type i = 0; i < size; ++i) {
    K k;
    V v;
    ar(make_map_item(k, v));
    m.emplace_hint(m.end(), std::move(k), std::move(v));
  }
}

}  // namespace cereal
