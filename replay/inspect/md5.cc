// MD5 as RFC 1321 specifies it: 512-bit blocks, four rounds of sixteen steps, little-endian words.
#include "md5.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace dynrep::replay {

namespace {

// The per-step constants: the integer part of 2^32 * |sin(i + 1)|, i = 0..63 (RFC 1321 §3.4).
std::array<uint32_t, 64> sineTable() {
  std::array<uint32_t, 64> t{};
  for (int i = 0; i < 64; ++i) t[i] = uint32_t(std::floor(std::fabs(std::sin(double(i + 1))) * 4294967296.0));
  return t;
}

constexpr int kShift[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

uint32_t rotateLeft(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void processBlock(const unsigned char* block, uint32_t state[4]) {
  static const std::array<uint32_t, 64> kSine = sineTable();
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(block[4 * i]) | uint32_t(block[4 * i + 1]) << 8 | uint32_t(block[4 * i + 2]) << 16 |
           uint32_t(block[4 * i + 3]) << 24;
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  for (int i = 0; i < 64; ++i) {
    int round = i / 16;
    uint32_t f;
    int word;
    if (round == 0) {
      f = (b & c) | (~b & d);
      word = i;
    } else if (round == 1) {
      f = (d & b) | (~d & c);
      word = (5 * i + 1) % 16;
    } else if (round == 2) {
      f = b ^ c ^ d;
      word = (3 * i + 5) % 16;
    } else {
      f = c ^ (b | ~d);
      word = (7 * i) % 16;
    }
    uint32_t rotated = b + rotateLeft(a + f + kSine[i] + m[word], kShift[round][i % 4]);
    a = d;
    d = c;
    c = b;
    b = rotated;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}

}  // namespace

std::string md5Hex(std::string_view bytes) {
  uint32_t state[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  size_t whole = bytes.size() / 64 * 64;
  for (size_t i = 0; i < whole; i += 64) processBlock(reinterpret_cast<const unsigned char*>(bytes.data()) + i, state);
  // The tail, a 1 bit, zeros, and the message length in bits as a 64-bit little-endian number.
  unsigned char tail[128] = {};
  size_t rest = bytes.size() - whole;
  for (size_t i = 0; i < rest; ++i) tail[i] = static_cast<unsigned char>(bytes[whole + i]);
  tail[rest] = 0x80;
  size_t tailSize = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tailSize - 8 + i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t i = 0; i < tailSize; i += 64) processBlock(tail + i, state);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint32_t word : state)
    for (int i = 0; i < 4; ++i) {
      unsigned char byte = static_cast<unsigned char>(word >> (8 * i));
      hex += kHex[byte >> 4];
      hex += kHex[byte & 15];
    }
  return hex;
}

}  // namespace dynrep::replay
