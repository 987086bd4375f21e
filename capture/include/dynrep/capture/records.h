// Typed records: what capture writes into a store, as plain structs with versioned cereal
// serialize functions (portable binary archive). Kinds are only added, never reused.
// Thread-safety: values and pure functions only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <cereal/cereal.hpp>

#include "dynrep/store/status.h"

namespace dynrep::capture {

// docs/format.md §8 Typed records.
enum class RecordKind : uint16_t {
  Manifest = 16,
  Artifact = 17,
};

// One per store: who wrote it, for which job, on which machine.
struct Manifest {
  static constexpr RecordKind kKind = RecordKind::Manifest;
  std::string tool;                                 // "dynamo-replay 0.1.0"
  std::string createdAt;                            // ISO 8601, UTC
  std::vector<std::string> commandLine;
  std::map<std::string, std::string> environment;  // fingerprint entries, e.g. "torch.version"

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(tool, createdAt, commandLine, environment);
  }
};

// A named file-like artifact whose bytes live in a blob (generated code, a kernel library,
// PyTorch cache bytes).
struct Artifact {
  static constexpr RecordKind kKind = RecordKind::Artifact;
  std::string name;       // "inductor/kernel_3f2a.cpp"
  std::string mediaType;  // "text/x-c++src"
  std::string blobKey;    // hex XXH3-128 of the bytes
  uint64_t size = 0;      // uncompressed bytes
  std::map<std::string, std::string> attributes;

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(name, mediaType, blobKey, size, attributes);
  }
};

// "manifest", "artifact", or "kind N" for a kind this build does not know.
std::string kindName(uint16_t kind);

template <typename T>
std::string encode(const T& record);
template <typename T>
Status decode(std::string_view payload, T* record);

// One readable line for `replay-inspect ls`; unknown kinds describe their size.
std::string describe(uint16_t kind, std::string_view payload);

}  // namespace dynrep::capture

CEREAL_CLASS_VERSION(dynrep::capture::Manifest, 1);
CEREAL_CLASS_VERSION(dynrep::capture::Artifact, 1);
