// The on-disk layout of a store file: constants, fixed-size structures and their codecs.
// Private to store/ (as leveldb keeps db/log_format.h): readers use StoreReader's listings.
// docs/store-format.md is normative; each constant names the section that specifies it.
// Thread-safety: pure functions and values only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dynrep/store/blob_key.h"
#include "dynrep/store/limits.h"
#include "dynrep/store/status.h"

namespace dynrep::format {

// §2 File header. PNG-style magic: the high byte catches 7-bit transfers, CR LF catches
// line-ending conversion, 0x1A stops `type` on DOS, the last LF catches LF -> CR LF.
inline constexpr std::array<uint8_t, 8> kMagic = {0x89, 'D', 'R', 'P', '\r', '\n', 0x1A, '\n'};
inline constexpr uint16_t kMajorVersion = 1;  // §1 Versions: a reader refuses another major
inline constexpr uint16_t kMinorVersion = 0;  // §1 Versions: newer minors only add kinds
inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kWriterVersionSize = 32;

// §3 Record frame.
inline constexpr size_t kFrameSize = 16;
inline constexpr uint32_t kMaxPayload = 1u << 30;  // 1 GiB; larger lengths are corruption

// §4 Record kinds. Only ever added; a retired kind stays listed here as a comment.
// 0 is never a valid kind. 1-15 belong to the container, 16 and up to typed records.
enum class Kind : uint16_t {
  BlobChunk = 1,
  Index = 2,
  // 16 and up: typed records, listed in capture/include/dynrep/capture/record_kinds.def
};
inline constexpr uint16_t kFirstTypedKind = kFirstRecordKind;

// §5 Blob chunks.
inline constexpr size_t kChunkHeaderSize = 28;
inline constexpr uint32_t kChunkFlagLast = 1u << 0;
inline constexpr uint32_t kChunkReservedMask = ~kChunkFlagLast;
inline constexpr size_t kDefaultChunkSize = dynrep::kDefaultChunkSize;
// A chunk's raw size is at most this, so a reader never allocates more for one chunk.
inline constexpr uint32_t kMaxChunkRawSize = 256u << 20;

// §7 Trailer.
inline constexpr std::array<uint8_t, 8> kEndMagic = {0x89, 'D', 'R', 'P', 'E', 'N', 'D', '\n'};
inline constexpr size_t kTrailerSize = 32;

struct Header {
  uint16_t major = kMajorVersion;
  uint16_t minor = kMinorVersion;
  std::string writerVersion;  // at most kWriterVersionSize bytes of UTF-8
  uint64_t createdUnixSeconds = 0;
};

struct Frame {
  uint32_t payloadSize = 0;
  uint16_t kind = 0;
  uint16_t flags = 0;  // reserved, zero
  uint64_t checksum = 0;
};

struct ChunkHeader {
  BlobKey key;
  uint32_t seq = 0;
  uint32_t rawSize = 0;
  uint32_t flags = 0;
};

// §6 Index tables.
struct RecordEntry {
  uint64_t offset = 0;  // of the frame
  uint32_t payloadSize = 0;
  uint16_t kind = 0;
};
struct ChunkEntry {
  uint64_t offset = 0;  // of the frame
  uint32_t payloadSize = 0;
  uint32_t rawSize = 0;
};
struct BlobEntry {
  BlobKey key;
  uint64_t rawSize = 0;
  uint64_t storedSize = 0;  // compressed bytes, chunk headers excluded
  uint32_t firstChunk = 0;  // into Index::chunks
  uint32_t chunkCount = 0;
};
struct Index {
  std::vector<RecordEntry> records;  // typed records, in file order
  std::vector<BlobEntry> blobs;      // sorted by key
  std::vector<ChunkEntry> chunks;    // grouped by blob, in sequence order
};

struct Trailer {
  uint64_t indexOffset = 0;  // of the index record's frame
  uint64_t indexPayloadSize = 0;
};

void encodeHeader(const Header& h, uint8_t out[kHeaderSize]);
// `what` names the file in messages.
Status decodeHeader(const uint8_t in[kHeaderSize], std::string_view what, Header* h);

uint64_t frameChecksum(uint32_t payloadSize, uint16_t kind, uint16_t flags, const void* payload);
void encodeFrame(const Frame& f, uint8_t out[kFrameSize]);
Frame decodeFrame(const uint8_t in[kFrameSize]);

void encodeChunkHeader(const ChunkHeader& c, uint8_t out[kChunkHeaderSize]);
ChunkHeader decodeChunkHeader(const uint8_t in[kChunkHeaderSize]);

std::string encodeIndex(const Index& index);
// Validates table sizes and that every offset lies before `limit` (the index's own offset).
Status decodeIndex(std::string_view payload, uint64_t limit, Index* index);

void encodeTrailer(const Trailer& t, uint8_t out[kTrailerSize]);
// False when the bytes are not a valid trailer (a store that was not closed).
bool decodeTrailer(const uint8_t in[kTrailerSize], Trailer* t);

// True when a frame of `payloadSize` at `offset` ends at or before `limit`; written so that no
// sum can wrap around, whatever a damaged file says.
inline bool frameFits(uint64_t offset, uint64_t payloadSize, uint64_t limit) {
  return offset <= limit && limit - offset >= kFrameSize && limit - offset - kFrameSize >= payloadSize;
}

// Little-endian helpers shared by the codecs.
inline void putU16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
inline void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t getU16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace dynrep::format
