// BlobKey and BlobHasher over xxhash's XXH3-128.
#include "dynrep/store/blob_key.h"

#include <cassert>
#include <cstring>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace dynrep {

namespace {
BlobKey fromHash(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  BlobKey key;
  std::memcpy(key.bytes.data(), c.digest, 16);
  return key;
}
}  // namespace

BlobKey BlobKey::of(std::string_view data) { return fromHash(XXH3_128bits(data.data(), data.size())); }

std::string BlobKey::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

std::optional<BlobKey> BlobKey::fromHex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  BlobKey key;
  for (size_t i = 0; i < 16; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key.bytes[i] = uint8_t(hi << 4 | lo);
  }
  return key;
}

size_t BlobKeyHash::operator()(const BlobKey& k) const {
  size_t h;
  std::memcpy(&h, k.bytes.data(), sizeof h);  // already a uniform hash
  return h;
}

BlobHasher::BlobHasher() : state_(XXH3_createState()) {
  assert(state_ && "XXH3_createState failed: out of memory");
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}
BlobHasher::~BlobHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void BlobHasher::update(const void* data, size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
BlobKey BlobHasher::finish() const { return fromHash(XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_))); }

}  // namespace dynrep
