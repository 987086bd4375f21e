// BlobKey: the content address of a blob, the XXH3-128 digest of its uncompressed bytes.
// Thread-safety: a value type; Hasher objects are not shared between threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynrep {

struct BlobKey {
  // Big-endian digest bytes (XXH128_canonical_t), so the hex form reads like xxhsum's output.
  std::array<uint8_t, 16> bytes{};

  static BlobKey of(std::string_view data);
  std::string hex() const;
  static std::optional<BlobKey> fromHex(std::string_view hex);

  bool operator==(const BlobKey& o) const { return bytes == o.bytes; }
  bool operator!=(const BlobKey& o) const { return bytes != o.bytes; }
  bool operator<(const BlobKey& o) const { return bytes < o.bytes; }
};

struct BlobKeyHash {
  size_t operator()(const BlobKey& k) const;
};

// Incremental XXH3-128 over a blob that arrives in pieces.
class BlobHasher {
 public:
  BlobHasher();
  ~BlobHasher();
  BlobHasher(const BlobHasher&) = delete;
  BlobHasher& operator=(const BlobHasher&) = delete;
  void update(const void* data, size_t size);
  BlobKey finish() const;

 private:
  void* state_;  // XXH3_state_t, kept opaque so xxhash.h stays out of public headers
};

}  // namespace dynrep
