// Codecs for the fixed-size parts of a store file (docs/store-format.md §2-§7).
#include "format.h"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

namespace dynrep::format {

namespace {
constexpr size_t kIndexHead = 16, kRecordEntry = 16, kBlobEntry = 40, kChunkEntry = 16;
}

void encodeHeader(const Header& h, uint8_t out[kHeaderSize]) {
  std::memset(out, 0, kHeaderSize);
  std::memcpy(out, kMagic.data(), 8);
  putU16(out + 8, h.major);
  putU16(out + 10, h.minor);
  // out[12..16): flags, reserved zero
  std::memcpy(out + 16, h.writerVersion.data(), std::min(h.writerVersion.size(), kWriterVersionSize));
  putU64(out + 48, h.createdUnixSeconds);
  putU64(out + 56, XXH3_64bits(out, 56));
}

Status decodeHeader(const uint8_t in[kHeaderSize], std::string_view what, Header* h) {
  std::string where(what);
  if (std::memcmp(in, kMagic.data(), 8) != 0)
    return Status::corruption(where + ": not a dynamo-replay store (bad magic number)");
  // The version comes before the checksum: only magic and version are promised to stay put
  // in later majors (docs/store-format.md §1).
  h->major = getU16(in + 8);
  h->minor = getU16(in + 10);
  if (h->major != kMajorVersion) {
    return Status::notSupported(where + ": format version " + std::to_string(h->major) + "." +
                                std::to_string(h->minor) + " is not supported (this reader reads " +
                                std::to_string(kMajorVersion) + ".x)");
  }
  if (getU64(in + 56) != XXH3_64bits(in, 56)) return Status::corruption(where + ": file header: checksum mismatch");
  if (getU32(in + 12) != 0) return Status::corruption(where + ": file header: reserved flags are not zero");
  const char* wv = reinterpret_cast<const char*>(in + 16);
  h->writerVersion.assign(wv, strnlen(wv, kWriterVersionSize));
  h->createdUnixSeconds = getU64(in + 48);
  return Status::ok();
}

uint64_t frameChecksum(uint32_t payloadSize, uint16_t kind, uint16_t flags, const void* payload) {
  // Seeding with the frame fields makes the checksum cover them without a second pass.
  uint64_t seed = uint64_t(payloadSize) | uint64_t(kind) << 32 | uint64_t(flags) << 48;
  return XXH3_64bits_withSeed(payload, payloadSize, seed);
}

void encodeFrame(const Frame& f, uint8_t out[kFrameSize]) {
  putU32(out, f.payloadSize);
  putU16(out + 4, f.kind);
  putU16(out + 6, f.flags);
  putU64(out + 8, f.checksum);
}

Frame decodeFrame(const uint8_t in[kFrameSize]) {
  return Frame{getU32(in), getU16(in + 4), getU16(in + 6), getU64(in + 8)};
}

void encodeChunkHeader(const ChunkHeader& c, uint8_t out[kChunkHeaderSize]) {
  std::memcpy(out, c.key.bytes.data(), 16);
  putU32(out + 16, c.seq);
  putU32(out + 20, c.rawSize);
  putU32(out + 24, c.flags);
}

ChunkHeader decodeChunkHeader(const uint8_t in[kChunkHeaderSize]) {
  ChunkHeader c;
  std::memcpy(c.key.bytes.data(), in, 16);
  c.seq = getU32(in + 16);
  c.rawSize = getU32(in + 20);
  c.flags = getU32(in + 24);
  return c;
}

std::string encodeIndex(const Index& index) {
  std::string out(kIndexHead + kRecordEntry * index.records.size() + kBlobEntry * index.blobs.size() +
                      kChunkEntry * index.chunks.size(),
                  '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  putU32(p, uint32_t(index.records.size()));
  putU32(p + 4, uint32_t(index.blobs.size()));
  putU32(p + 8, uint32_t(index.chunks.size()));
  p += kIndexHead;
  for (const RecordEntry& r : index.records) {
    putU64(p, r.offset);
    putU32(p + 8, r.payloadSize);
    putU16(p + 12, r.kind);
    p += kRecordEntry;
  }
  for (const BlobEntry& b : index.blobs) {
    std::memcpy(p, b.key.bytes.data(), 16);
    putU64(p + 16, b.rawSize);
    putU64(p + 24, b.storedSize);
    putU32(p + 32, b.firstChunk);
    putU32(p + 36, b.chunkCount);
    p += kBlobEntry;
  }
  for (const ChunkEntry& c : index.chunks) {
    putU64(p, c.offset);
    putU32(p + 8, c.payloadSize);
    putU32(p + 12, c.rawSize);
    p += kChunkEntry;
  }
  return out;
}

Status decodeIndex(std::string_view payload, uint64_t limit, Index* index) {
  auto bad = [](const std::string& why) { return Status::corruption("index: " + why); };
  if (payload.size() < kIndexHead) return bad("shorter than its header");
  auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  uint64_t nRecords = getU32(p), nBlobs = getU32(p + 4), nChunks = getU32(p + 8);
  if (getU32(p + 12) != 0) return bad("reserved field is not zero");
  uint64_t expected = kIndexHead + kRecordEntry * nRecords + kBlobEntry * nBlobs + kChunkEntry * nChunks;
  if (expected != payload.size()) return bad("table sizes do not match its length");
  p += kIndexHead;
  index->records.resize(nRecords);
  for (RecordEntry& r : index->records) {
    r = RecordEntry{getU64(p), getU32(p + 8), getU16(p + 12)};
    if (getU16(p + 14) != 0) return bad("reserved field is not zero");
    if (r.kind < kFirstTypedKind) return bad("record table lists a container record");
    if (r.offset < kHeaderSize || !frameFits(r.offset, r.payloadSize, limit))
      return bad("record at offset " + std::to_string(r.offset) + " lies outside the file");
    p += kRecordEntry;
  }
  index->blobs.resize(nBlobs);
  for (size_t i = 0; i < nBlobs; ++i) {
    BlobEntry& b = index->blobs[i];
    std::memcpy(b.key.bytes.data(), p, 16);
    b.rawSize = getU64(p + 16);
    b.storedSize = getU64(p + 24);
    b.firstChunk = getU32(p + 32);
    b.chunkCount = getU32(p + 36);
    if (uint64_t(b.firstChunk) + b.chunkCount > nChunks || b.chunkCount == 0)
      return bad("blob " + b.key.hex() + " names chunks outside the chunk table");
    if (i > 0 && !(index->blobs[i - 1].key < b.key)) return bad("blob table is not sorted by key");
    p += kBlobEntry;
  }
  index->chunks.resize(nChunks);
  for (ChunkEntry& c : index->chunks) {
    c = ChunkEntry{getU64(p), getU32(p + 8), getU32(p + 12)};
    if (c.offset < kHeaderSize || !frameFits(c.offset, c.payloadSize, limit) || c.payloadSize < kChunkHeaderSize ||
        c.rawSize > kMaxChunkRawSize)
      return bad("chunk at offset " + std::to_string(c.offset) + " lies outside the file");
    p += kChunkEntry;
  }
  // Chunk ranges may not overlap (it would make this check quadratic), and sizes must add
  // up, so a reader can trust rawSize once each chunk's frame agrees.
  uint64_t named = 0;
  for (const BlobEntry& b : index->blobs) named += b.chunkCount;
  if (named > nChunks) return bad("blobs name more chunks than the chunk table holds");
  for (const BlobEntry& b : index->blobs) {
    uint64_t raw = 0, stored = 0;
    for (uint32_t i = b.firstChunk; i < b.firstChunk + b.chunkCount; ++i) {
      raw += index->chunks[i].rawSize;
      stored += index->chunks[i].payloadSize - kChunkHeaderSize;
    }
    if (raw != b.rawSize || stored != b.storedSize)
      return bad("blob " + b.key.hex() + ": sizes differ from the sum of its chunks");
  }
  return Status::ok();
}

void encodeTrailer(const Trailer& t, uint8_t out[kTrailerSize]) {
  putU64(out, t.indexOffset);
  putU64(out + 8, t.indexPayloadSize);
  putU64(out + 16, XXH3_64bits(out, 16));
  std::memcpy(out + 24, kEndMagic.data(), 8);
}

bool decodeTrailer(const uint8_t in[kTrailerSize], Trailer* t) {
  if (std::memcmp(in + 24, kEndMagic.data(), 8) != 0) return false;
  if (getU64(in + 16) != XXH3_64bits(in, 16)) return false;
  t->indexOffset = getU64(in);
  t->indexPayloadSize = getU64(in + 8);
  return true;
}

}  // namespace dynrep::format
