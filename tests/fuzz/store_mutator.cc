// store_mutator: the reader fuzzers' mutations that know the store layout, as libFuzzer's custom
// mutator and crossover; byte-level steps go to LLVMFuzzerMutate.
//
// Most mutations rewrite a frame, the index, a chunk header, the trailer or the header and then
// re-seal every checksum with the format's own codecs, so mutants get past the checksum checks and
// reach the index, chunk, zstd and cereal decoders.
#include "tests/fuzz/store_mutator.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include <xxhash.h>

#include "dynrep/capture/records.h"
#include "dynrep/store/writer.h"
#include "store/format.h"  // the container's private layout: the mutator writes frames and indexes

namespace dynrep::fuzz {
namespace {

namespace format = dynrep::format;

constexpr uint8_t kInteresting8[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x10, 0x40};
constexpr uint16_t kInteresting16[] = {0, 1, 2, 15, 16, 17, 0x7FFF, 0x8000, 0xFFFF};
constexpr uint32_t kInteresting32[] = {
    0,          1,          2,          15,         16,        27,       28,       29,
    63,         64,         4096,       0xFFFF,     0x10000,   1u << 29, 1u << 30, (1u << 30) + 1,
    0x7FFFFFFF, 0x80000000, 0xFFFFFFF0, 0xFFFFFFFE, 0xFFFFFFFF};
constexpr uint64_t kInteresting64[] = {0,
                                       1,
                                       16,
                                       64,
                                       96,
                                       1ull << 30,
                                       1ull << 31,
                                       1ull << 32,
                                       (1ull << 32) + 1,
                                       1ull << 40,
                                       1ull << 62,
                                       0x7FFFFFFFFFFFFFFFull,
                                       0x8000000000000000ull,
                                       ~0ull - 63,
                                       ~0ull - 15,
                                       ~0ull - 1,
                                       ~0ull};

uint8_t* bytesOf(std::string& s) { return reinterpret_cast<uint8_t*>(s.data()); }
const uint8_t* bytesOf(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace

uint64_t interestingValue(Rng& rng, int width) {
  switch (width) {
    case 1: return rng.pick(kInteresting8);
    case 2: return rng.pick(kInteresting16);
    case 4: return rng.pick(kInteresting32);
  }
  return rng.pick(kInteresting64);
}

namespace {

void putLE(uint8_t* p, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) p[i] = uint8_t(v >> (8 * i));
}

// Byte-level steps go to LLVMFuzzerMutate, in place with room to grow up to maxLen.
void mutateBytes(std::string& s, size_t maxLen) {
  if (maxLen == 0) return;  // LLVMFuzzerMutate wants room for one byte
  size_t size = std::min(s.size(), maxLen);
  s.resize(maxLen);
  s.resize(LLVMFuzzerMutate(bytesOf(s), size, maxLen));
}

// ---------------------------------------------------------------------------------------
// Layout-aware mutations: the input parsed into header, frames, tail and trailer, then
// written back with fresh checksums, index offsets and trailer.

struct FramePart {
  uint16_t kind = 0;
  uint16_t flags = 0;
  std::string payload;
  uint64_t oldOffset = ~0ull;  // where the frame was in the parent, for index fix-ups
  bool staleChecksum = false;  // keep `checksum` instead of recomputing it
  uint64_t checksum = 0;
};

struct Model {
  std::string head;  // the header's bytes
  std::vector<FramePart> frames;
  std::string tail;  // bytes after the last whole frame, trailer excluded
  bool hasTrailer = false;
  bool trailerOverride = false;  // write `trailer` as is rather than pointing it at the index
  bool trailerWrap = false;      // size `trailer` so offset + frame + size wraps to the index end
  format::Trailer trailer;
  bool fixIndex = true;
  bool syncSizes = false;  // also copy chunk headers' raw sizes into the index and re-add blob sizes
};

// Donor stores, parsed: frames the Frames family imports, and starting points for inputs that
// are not stores at all.
struct Donor {
  std::string bytes;
  Model model;
};
std::vector<Donor> gDonors;
bool gDonorsSet = false;

const std::vector<Donor>& donors();

bool parse(const std::string& s, Model* m) {
  if (s.size() < format::kHeaderSize) return false;
  *m = Model{};
  m->head = s.substr(0, format::kHeaderSize);
  size_t end = s.size();
  if (s.size() >= format::kHeaderSize + format::kTrailerSize &&
      format::decodeTrailer(bytesOf(s) + s.size() - format::kTrailerSize, &m->trailer)) {
    m->hasTrailer = true;
    end -= format::kTrailerSize;
  }
  size_t off = format::kHeaderSize;
  while (end - off >= format::kFrameSize) {
    format::Frame f = format::decodeFrame(bytesOf(s) + off);
    if (f.payloadSize > end - off - format::kFrameSize) break;
    FramePart part;
    part.kind = f.kind;
    part.flags = f.flags;
    part.payload = s.substr(off + format::kFrameSize, f.payloadSize);
    part.oldOffset = off;
    part.checksum = f.checksum;
    // A frame that arrived damaged stays damaged unless a mutation rewrites it.
    part.staleChecksum = format::frameChecksum(f.payloadSize, f.kind, f.flags, part.payload.data()) != f.checksum;
    m->frames.push_back(std::move(part));
    off += format::kFrameSize + f.payloadSize;
  }
  m->tail = s.substr(off, end - off);
  return true;
}

struct Moved {
  uint64_t offset;
  uint32_t payloadSize;
  uint32_t chunkRawSize;  // from the chunk header, when the frame is a chunk
};

// Points index entries at the frames' new offsets and sizes, so an edit elsewhere does not
// make the index merely stale. With `syncSizes`, a chunk header's new raw size reaches the
// index too, so a lying size gets past decodeIndex's sums and into the blob readers.
void fixIndexPayload(std::string& payload, const std::map<uint64_t, Moved>& moved, bool syncSizes) {
  format::Index index;
  if (!format::decodeIndex(payload, ~0ull, &index).isOk()) return;
  for (format::RecordEntry& r : index.records) {
    auto it = moved.find(r.offset);
    if (it == moved.end()) continue;
    r.offset = it->second.offset;
    r.payloadSize = it->second.payloadSize;
  }
  for (format::ChunkEntry& c : index.chunks) {
    auto it = moved.find(c.offset);
    if (it == moved.end()) continue;
    c.offset = it->second.offset;
    c.payloadSize = it->second.payloadSize;
    if (syncSizes) c.rawSize = it->second.chunkRawSize;
  }
  if (syncSizes) {
    for (format::BlobEntry& b : index.blobs) {
      if (uint64_t(b.firstChunk) + b.chunkCount > index.chunks.size()) continue;
      b.rawSize = b.storedSize = 0;
      for (uint32_t i = b.firstChunk; i < b.firstChunk + b.chunkCount; ++i) {
        b.rawSize += index.chunks[i].rawSize;
        b.storedSize += index.chunks[i].payloadSize - format::kChunkHeaderSize;
      }
    }
  }
  payload = format::encodeIndex(index);
}

std::string serialize(Model& m) {
  std::vector<uint64_t> offsets;
  std::map<uint64_t, Moved> moved;
  uint64_t off = m.head.size();
  for (const FramePart& f : m.frames) {
    offsets.push_back(off);
    uint32_t raw = 0;
    if (f.kind == uint16_t(format::Kind::BlobChunk) && f.payload.size() >= format::kChunkHeaderSize)
      raw = format::decodeChunkHeader(bytesOf(f.payload)).rawSize;
    if (f.oldOffset != ~0ull) moved.emplace(f.oldOffset, Moved{off, uint32_t(f.payload.size()), raw});
    off += format::kFrameSize + f.payload.size();
  }
  if (m.fixIndex) {
    for (FramePart& f : m.frames)
      if (f.kind == uint16_t(format::Kind::Index) && !f.staleChecksum) fixIndexPayload(f.payload, moved, m.syncSizes);
  }
  std::string out = m.head;
  out.reserve(off + m.tail.size() + format::kTrailerSize);
  for (const FramePart& f : m.frames) {
    format::Frame frame{uint32_t(f.payload.size()), f.kind, f.flags, f.checksum};
    if (!f.staleChecksum) frame.checksum = format::frameChecksum(frame.payloadSize, f.kind, f.flags, f.payload.data());
    uint8_t buf[format::kFrameSize];
    format::encodeFrame(frame, buf);
    out.append(reinterpret_cast<const char*>(buf), sizeof buf);
    out += f.payload;
  }
  out += m.tail;
  if (m.hasTrailer) {
    format::Trailer t = m.trailer;
    if (!m.trailerOverride) {
      for (size_t i = m.frames.size(); i-- > 0;) {
        if (m.frames[i].kind != uint16_t(format::Kind::Index)) continue;
        t = format::Trailer{offsets[i], m.frames[i].payload.size()};
        break;
      }
    }
    if (m.trailerWrap) t.indexPayloadSize = uint64_t(out.size()) - format::kFrameSize - t.indexOffset;
    uint8_t buf[format::kTrailerSize];
    format::encodeTrailer(t, buf);
    out.append(reinterpret_cast<const char*>(buf), sizeof buf);
  }
  return out;
}

// Index of a random frame of `kind` (any kind when 0), or -1.
int pickFrame(Rng& rng, const Model& m, uint16_t kind, size_t minPayload = 0) {
  std::vector<int> fit;
  for (size_t i = 0; i < m.frames.size(); ++i)
    if ((kind == 0 || m.frames[i].kind == kind) && m.frames[i].payload.size() >= minPayload) fit.push_back(int(i));
  return fit.empty() ? -1 : fit[rng.below(fit.size())];
}

// A value for an integer field: a boundary, a small nudge, or a size that fits the file.
uint64_t fieldValue(Rng& rng, uint64_t old, int width, uint64_t fileSize) {
  uint64_t mask = width == 8 ? ~0ull : (1ull << (8 * width)) - 1;
  switch (rng.below(4)) {
    case 0: return interestingValue(rng, width) & mask;
    case 1: return (old + uint64_t(int64_t(rng.below(9)) - 4)) & mask;
    case 2: return rng.below(fileSize + 1) & mask;
  }
  return (old ^ (1ull << rng.below(8 * width))) & mask;
}

void mutateFramePayload(Rng& rng, Model& m, size_t maxLen) {
  int i = pickFrame(rng, m, 0);
  if (i < 0) return;
  FramePart& f = m.frames[i];
  mutateBytes(f.payload, maxLen);
  f.staleChecksum = false;
}

void mutateChunkHeader(Rng& rng, Model& m, uint64_t fileSize) {
  int i = pickFrame(rng, m, uint16_t(format::Kind::BlobChunk), format::kChunkHeaderSize);
  if (i < 0) return;
  FramePart& f = m.frames[i];
  format::ChunkHeader c = format::decodeChunkHeader(bytesOf(f.payload));
  switch (rng.below(4)) {
    case 0: c.key.bytes[rng.below(16)] ^= uint8_t(1u << rng.below(8)); break;
    case 1: c.seq = uint32_t(fieldValue(rng, c.seq, 4, 8)); break;
    case 2: c.rawSize = uint32_t(fieldValue(rng, c.rawSize, 4, fileSize * 4)); break;
    case 3: c.flags = uint32_t(rng.oneIn(2) ? rng.below(4) : fieldValue(rng, c.flags, 4, 4)); break;
  }
  format::encodeChunkHeader(c, bytesOf(f.payload));
  f.staleChecksum = false;
}

// The zstd frame behind a chunk header: its frame and block headers sit in the first bytes.
void mutateZstd(Rng& rng, Model& m, size_t maxLen) {
  int i = pickFrame(rng, m, uint16_t(format::Kind::BlobChunk), format::kChunkHeaderSize + 1);
  if (i < 0) return;
  FramePart& f = m.frames[i];
  std::string z = f.payload.substr(format::kChunkHeaderSize);
  if (rng.oneIn(2) && !z.empty()) {
    size_t at = rng.below(std::min<size_t>(z.size(), 24));
    if (rng.oneIn(2))
      z[at] = char(rng.pick(kInteresting8));
    else
      z[at] ^= char(1u << rng.below(8));
  } else {
    mutateBytes(z, maxLen);
  }
  f.payload.resize(format::kChunkHeaderSize);
  f.payload += z;
  f.staleChecksum = false;
}

void mutateIndex(Rng& rng, Model& m, uint64_t fileSize) {
  int i = pickFrame(rng, m, uint16_t(format::Kind::Index));
  if (i < 0) return;
  FramePart& f = m.frames[i];
  format::Index index;
  if (!format::decodeIndex(f.payload, ~0ull, &index).isOk()) {
    // Not decodable any more: damage the tables' head so the size checks get exercised.
    if (f.payload.size() >= 16) putLE(bytesOf(f.payload) + 4 * rng.below(4), interestingValue(rng, 4), 4);
    f.staleChecksum = false;
    return;
  }
  size_t nr = index.records.size(), nb = index.blobs.size(), nc = index.chunks.size();
  switch (rng.below(12)) {
    case 0:
      if (nr) {
        format::RecordEntry& r = index.records[rng.below(nr)];
        r.offset = fieldValue(rng, r.offset, 8, fileSize);
      }
      break;
    case 1:
      if (nr) {
        format::RecordEntry& r = index.records[rng.below(nr)];
        if (rng.oneIn(2))
          r.payloadSize = uint32_t(fieldValue(rng, r.payloadSize, 4, fileSize));
        else
          r.kind = uint16_t(fieldValue(rng, r.kind, 2, 20));
      }
      break;
    case 2:  // offsets that pass `offset + 16 + size <= limit` only by wrapping around
      if (nr && rng.oneIn(2)) {
        format::RecordEntry& r = index.records[rng.below(nr)];
        r.offset = 0 - format::kFrameSize - r.payloadSize + rng.below(format::kHeaderSize + 1);
      } else if (nc) {
        format::ChunkEntry& c = index.chunks[rng.below(nc)];
        c.offset = 0 - format::kFrameSize - c.payloadSize + rng.below(format::kHeaderSize + 1);
      }
      break;
    case 3:
      if (nb) {
        format::BlobEntry& b = index.blobs[rng.below(nb)];
        b.rawSize = fieldValue(rng, b.rawSize, 8, fileSize * 4);
      }
      break;
    case 4:
      if (nb) {
        format::BlobEntry& b = index.blobs[rng.below(nb)];
        b.storedSize = fieldValue(rng, b.storedSize, 8, fileSize);
      }
      break;
    case 5:
      if (nb) {
        format::BlobEntry& b = index.blobs[rng.below(nb)];
        if (rng.oneIn(2))
          b.firstChunk = uint32_t(fieldValue(rng, b.firstChunk, 4, nc));
        else
          b.chunkCount = uint32_t(fieldValue(rng, b.chunkCount, 4, nc));
      }
      break;
    case 6:
      if (nb) {
        format::BlobEntry& b = index.blobs[rng.below(nb)];
        b.key.bytes[rng.below(16)] ^= uint8_t(1u << rng.below(8));
      }
      break;
    case 7:
      if (nc) {
        format::ChunkEntry& c = index.chunks[rng.below(nc)];
        c.offset = fieldValue(rng, c.offset, 8, fileSize);
      }
      break;
    case 8:
      if (nc) {
        format::ChunkEntry& c = index.chunks[rng.below(nc)];
        if (rng.oneIn(2))
          c.payloadSize = uint32_t(fieldValue(rng, c.payloadSize, 4, fileSize));
        else
          c.rawSize = uint32_t(fieldValue(rng, c.rawSize, 4, fileSize * 4));
      }
      break;
    case 9:  // point one entry at another's frame
      if (nc >= 2) {
        index.chunks[rng.below(nc)] = index.chunks[rng.below(nc)];
      } else if (nr >= 2) {
        index.records[rng.below(nr)] = index.records[rng.below(nr)];
      }
      break;
    case 10:  // drop or duplicate table rows
      if (rng.oneIn(2)) {
        if (nb && rng.oneIn(2))
          index.blobs.erase(index.blobs.begin() + rng.below(nb));
        else if (nc && rng.oneIn(2))
          index.chunks.erase(index.chunks.begin() + rng.below(nc));
        else if (nr)
          index.records.erase(index.records.begin() + rng.below(nr));
      } else {
        if (nb && rng.oneIn(2))
          index.blobs.insert(index.blobs.begin() + rng.below(nb), index.blobs[rng.below(nb)]);
        else if (nc && rng.oneIn(2))
          index.chunks.push_back(index.chunks[rng.below(nc)]);
        else if (nr)
          index.records.push_back(index.records[rng.below(nr)]);
      }
      break;
    case 11:  // blobs whose chunk ranges overlap or reorder
      if (nb >= 2)
        std::swap(index.blobs[rng.below(nb)].firstChunk, index.blobs[rng.below(nb)].firstChunk);
      else if (nc >= 2)
        std::swap(index.chunks[rng.below(nc)], index.chunks[rng.below(nc)]);
      break;
  }
  f.payload = format::encodeIndex(index);
  f.staleChecksum = false;
  // The edit is the point; keep the fix-up from undoing offsets it chose.
  m.fixIndex = false;
}

// cereal's portable binary archive: one endianness byte, then u64 sizes before each
// string, vector and map. Boundary sizes there test the decoder's allocation.
void mutateTypedRecord(Rng& rng, Model& m) {
  std::vector<int> typed;
  for (size_t i = 0; i < m.frames.size(); ++i)
    if (m.frames[i].kind >= format::kFirstTypedKind) typed.push_back(int(i));
  if (typed.empty()) return;
  FramePart& f = m.frames[typed[rng.below(typed.size())]];
  std::string& p = f.payload;
  switch (rng.below(4)) {
    case 0:
    case 1:
      if (p.size() >= 9) {
        uint64_t sizes[] = {0,          1,          255,        p.size(),   1ull << 20,
                            1ull << 28, 1ull << 31, 1ull << 32, 1ull << 40, 0x7FFFFFFFFFFFFFFFull,
                            ~0ull};
        putLE(bytesOf(p) + 1 + rng.below(p.size() - 8), rng.pick(sizes), 8);
      }
      break;
    case 2:
      if (!p.empty()) p[0] = char(rng.below(3));  // the archive's endianness flag
      break;
    case 3: p.resize(rng.below(p.size() + 1)); break;
  }
  f.staleChecksum = false;
}

void mutateFrames(Rng& rng, Model& m, const std::vector<Donor>& donors) {
  size_t n = m.frames.size();
  switch (rng.below(8)) {
    case 0:
      if (n) m.frames.insert(m.frames.begin() + rng.below(n + 1), m.frames[rng.below(n)]);
      break;
    case 1:
      if (n) m.frames.erase(m.frames.begin() + rng.below(n));
      break;
    case 2:
      if (n >= 2) std::swap(m.frames[rng.below(n)], m.frames[rng.below(n)]);
      break;
    case 3:
      if (n) {
        uint16_t kinds[] = {0, 1, 2, 3, 15, 16, 17, 18, 99, 0xFFFF};
        m.frames[rng.below(n)].kind = rng.pick(kinds);
      }
      break;
    case 4:
      if (n) m.frames[rng.below(n)].flags = uint16_t(1u << rng.below(16));
      break;
    case 5:  // a frame whose checksum no longer matches
      if (n) {
        FramePart& f = m.frames[rng.below(n)];
        f.checksum = format::frameChecksum(uint32_t(f.payload.size()), f.kind, f.flags, f.payload.data()) ^ 1;
        f.staleChecksum = true;
      }
      break;
    case 6: {  // a frame from a donor store, e.g. a chunk of a blob this store lacks
      if (donors.empty()) break;
      const Model& other = donors[rng.below(donors.size())].model;
      if (other.frames.empty()) break;
      FramePart f = other.frames[rng.below(other.frames.size())];
      f.oldOffset = ~0ull;
      m.frames.insert(m.frames.begin() + rng.below(n + 1), std::move(f));
      break;
    }
    case 7:  // torn write: part of a frame at the end
      if (n) {
        const FramePart& f = m.frames[rng.below(n)];
        uint8_t buf[format::kFrameSize];
        format::encodeFrame(format::Frame{uint32_t(f.payload.size()), f.kind, f.flags, f.checksum}, buf);
        std::string whole(reinterpret_cast<const char*>(buf), sizeof buf);
        whole += f.payload;
        m.tail += whole.substr(0, rng.below(whole.size()));
      }
      break;
  }
}

void mutateTrailer(Rng& rng, Model& m, uint64_t fileSize) {
  switch (rng.below(4)) {
    case 0: m.hasTrailer = !m.hasTrailer; return;
    case 1: {  // a trailer that points at another frame, e.g. a record
      int i = pickFrame(rng, m, 0);
      if (i < 0) return;
      uint64_t off = m.head.size();
      for (int j = 0; j < i; ++j) off += format::kFrameSize + m.frames[j].payload.size();
      m.hasTrailer = m.trailerOverride = true;
      m.trailer = format::Trailer{off, m.frames[i].payload.size()};
      return;
    }
    case 2:  // boundary values in either field
      m.hasTrailer = m.trailerOverride = true;
      if (rng.oneIn(2))
        m.trailer.indexOffset = fieldValue(rng, m.trailer.indexOffset, 8, fileSize);
      else
        m.trailer.indexPayloadSize = fieldValue(rng, m.trailer.indexPayloadSize, 8, fileSize);
      return;
    case 3:  // fields whose sum reaches the index's end only by wrapping around
      m.hasTrailer = m.trailerOverride = m.trailerWrap = true;
      m.trailer.indexOffset = rng.oneIn(2) ? ~0ull - rng.below(format::kFrameSize + 1) : interestingValue(rng, 8);
      return;
  }
}

void mutateHeader(Rng& rng, Model& m) {
  if (m.head.size() < format::kHeaderSize) return;
  uint8_t* h = bytesOf(m.head);
  switch (rng.below(5)) {
    case 0: format::putU16(h + 8, uint16_t(fieldValue(rng, format::getU16(h + 8), 2, 4))); break;    // major
    case 1: format::putU16(h + 10, uint16_t(fieldValue(rng, format::getU16(h + 10), 2, 4))); break;  // minor
    case 2: format::putU32(h + 12, uint32_t(1u << rng.below(32))); break;                            // reserved flags
    case 3:  // writer version: full 32 bytes, no terminator, or odd bytes
      for (size_t i = 16; i < 48; ++i) h[i] = rng.oneIn(2) ? uint8_t(rng.next()) : uint8_t('v');
      break;
    case 4: h[rng.below(8)] ^= uint8_t(1u << rng.below(8)); break;  // magic
  }
  // Re-seal, so the header checks behind the checksum are the ones that run.
  if (!rng.oneIn(8)) format::putU64(h + 56, XXH3_64bits(h, 56));
}

// How often each family runs in a mixed mutation: payload bytes, zstd and the index most.
constexpr Mutation kWeighted[] = {
    Mutation::FramePayload, Mutation::FramePayload, Mutation::FramePayload, Mutation::ChunkHeader,
    Mutation::ChunkHeader,  Mutation::Zstd,         Mutation::Zstd,         Mutation::Zstd,
    Mutation::Index,        Mutation::Index,        Mutation::Index,        Mutation::TypedRecord,
    Mutation::TypedRecord,  Mutation::Frames,       Mutation::Trailer,      Mutation::Header};

void applyMutation(Mutation kind, Rng& rng, Model& m, size_t maxLen, uint64_t fileSize) {
  switch (kind) {
    case Mutation::FramePayload: mutateFramePayload(rng, m, maxLen); return;
    case Mutation::ChunkHeader: mutateChunkHeader(rng, m, fileSize); return;
    case Mutation::Zstd: mutateZstd(rng, m, maxLen); return;
    case Mutation::Index: mutateIndex(rng, m, fileSize); return;
    case Mutation::TypedRecord: mutateTypedRecord(rng, m); return;
    case Mutation::Frames: mutateFrames(rng, m, donors()); return;
    case Mutation::Trailer: mutateTrailer(rng, m, fileSize); return;
    case Mutation::Header: mutateHeader(rng, m); return;
  }
}

// Writes the model back; now and then with the index left as the mutations made it.
std::string finish(Rng& rng, Model& m, size_t maxLen) {
  if (rng.oneIn(10)) m.fixIndex = false;
  m.syncSizes = rng.oneIn(2);
  std::string out = serialize(m);
  if (out.size() > maxLen) out.resize(maxLen);
  return out;
}

// ---------------------------------------------------------------------------------------
// Seeds: valid stores written by StoreWriter, so neither fuzzer needs files to start.

bool readFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// The writer stamps the creation time; pin it so a seed gives the same inputs every run.
void pinHeaderTime(std::string& store) {
  if (store.size() < format::kHeaderSize) return;
  format::Header h;
  if (!format::decodeHeader(bytesOf(store), "seed", &h).isOk()) return;
  h.createdUnixSeconds = 1700000000;
  format::encodeHeader(h, bytesOf(store));
}

struct SeedWriter {
  std::string dir;
  int counter = 0;
  std::vector<std::pair<std::string, std::string>> seeds;  // name, bytes

  std::string nextPath() { return dir + "/seed" + std::to_string(counter++) + ".dynrep"; }
  void add(const std::string& name, std::string bytes) {
    pinHeaderTime(bytes);
    seeds.emplace_back(name, std::move(bytes));
  }
};

void fail(const std::string& what, const dynrep::Status& s) {
  std::fprintf(stderr, "store_mutator: cannot write seed store: %s: %s\n", what.c_str(), s.toString().c_str());
  std::exit(2);
}

// Puts a manifest, artifacts for each blob and a record of an unknown kind.
void fill(dynrep::StoreWriter& w, Rng& rng, bool manyBlobs) {
  dynrep::capture::Manifest manifest;
  manifest.tool = "dynamo-replay fuzz";
  manifest.createdAt = "2024-01-01T00:00:00Z";
  manifest.commandLine = {"python", "train.py", "--epochs", "1"};
  manifest.environment = {{"python.version", "3.11.9"}, {"torch.version", "2.5.0"}};
  if (dynrep::Status s = w.putRecord(uint16_t(manifest.kKind), dynrep::capture::encode(manifest)); !s.isOk())
    fail("manifest", s);

  std::vector<std::pair<std::string, std::string>> blobs;  // name, bytes
  std::string code;
  for (int i = 0; code.size() < 1500; ++i)
    code += "def kernel_" + std::to_string(i) + "(x): return x * " + std::to_string(i) + "\n";
  blobs.emplace_back("inductor/kernels.py", code);
  blobs.emplace_back("cache/small.bin", "hello");
  if (manyBlobs) {
    std::string noise(700, '\0');
    for (char& c : noise) c = char(rng.next());
    blobs.emplace_back("cache/noise.bin", noise);  // incompressible: zstd stores raw blocks
    blobs.emplace_back("cache/empty.bin", "");
    blobs.emplace_back("inductor/kernels_again.py", code);  // deduplicated: no second blob
  }
  for (const auto& [name, bytes] : blobs) {
    dynrep::Result<dynrep::BlobKey> key = w.putBlob(bytes);
    if (!key.isOk()) fail(name, key.status());
    dynrep::capture::Artifact a;
    a.name = name;
    a.mediaType = "application/octet-stream";
    a.blobKey = key->hex();
    a.size = bytes.size();
    a.attributes = {{"origin", "fuzz seed"}};
    if (dynrep::Status s = w.putRecord(uint16_t(a.kKind), dynrep::capture::encode(a)); !s.isOk()) fail(name, s);
  }
  if (dynrep::Status s = w.putRecord(99, std::string("\x01\x02\x03 unknown kind", 17)); !s.isOk()) fail("kind 99", s);
}

// Writes each store under `dir` (StoreWriter only writes files) and returns the bytes.
std::vector<std::pair<std::string, std::string>> generateSeeds(const std::string& dir, Rng& rng) {
  SeedWriter sw;
  sw.dir = dir;
  dynrep::WriterOptions small;
  small.chunkSize = 512;  // the 1.5 KiB code blob spans several chunks
  small.sync = false;

  auto create = [&](const dynrep::WriterOptions& opts) {
    std::string path = sw.nextPath();
    auto w = dynrep::StoreWriter::create(path, opts);
    if (!w.isOk()) fail(path, w.status());
    return std::make_pair(path, std::move(*w));
  };
  auto slurp = [](const std::string& path) {
    std::string bytes;
    if (!readFile(path, &bytes)) {
      std::fprintf(stderr, "store_mutator: cannot read seed store %s\n", path.c_str());
      std::exit(2);
    }
    return bytes;
  };

  {  // finished, multi-chunk blobs; also the source of the unclosed and torn variants
    auto [path, w] = create(small);
    fill(*w, rng, true);
    if (dynrep::Status s = w->flush(); !s.isOk()) fail(path, s);
    sw.add("unclosed", slurp(path));  // what a reader sees while the writer still runs
    if (dynrep::Status s = w->close(); !s.isOk()) fail(path, s);
    std::string closed = slurp(path);
    sw.add("finished", closed);
    sw.add("no-trailer", closed.substr(0, closed.size() - format::kTrailerSize));
    // Cut inside the second chunk of the multi-chunk blob, as a writer killed mid-blob leaves it.
    Model m;
    parse(closed, &m);
    size_t off = format::kHeaderSize;
    for (size_t i = 0, chunks = 0; i < m.frames.size(); ++i) {
      if (m.frames[i].kind == uint16_t(format::Kind::BlobChunk) && ++chunks == 2) {
        sw.add("torn", closed.substr(0, off + format::kFrameSize + 5));
        break;
      }
      off += format::kFrameSize + m.frames[i].payload.size();
    }
  }
  {  // finished with default (single) chunks
    dynrep::WriterOptions opts;
    opts.sync = false;
    auto [path, w] = create(opts);
    fill(*w, rng, false);
    if (dynrep::Status s = w->close(); !s.isOk()) fail(path, s);
    sw.add("single-chunk", slurp(path));
  }
  {  // empty: header, an empty index and the trailer
    auto [path, w] = create(small);
    if (dynrep::Status s = w->close(); !s.isOk()) fail(path, s);
    sw.add("empty", slurp(path));
  }
  for (int i = 0; i < sw.counter; ++i) ::unlink((dir + "/seed" + std::to_string(i) + ".dynrep").c_str());
  return sw.seeds;
}

const std::vector<Donor>& donors() {
  if (!gDonorsSet) {
    std::vector<std::string> stores;
    for (auto& [name, bytes] : makeSeedStores(1)) stores.push_back(std::move(bytes));
    setDonorStores(stores);
  }
  return gDonors;
}

}  // namespace

const char* mutationName(Mutation kind) {
  switch (kind) {
    case Mutation::FramePayload: return "frame-payload";
    case Mutation::ChunkHeader: return "chunk-header";
    case Mutation::Zstd: return "zstd";
    case Mutation::Index: return "index";
    case Mutation::TypedRecord: return "typed-record";
    case Mutation::Frames: return "frames";
    case Mutation::Trailer: return "trailer";
    case Mutation::Header: return "header";
  }
  return "unknown";
}

std::vector<std::pair<std::string, std::string>> makeSeedStores(uint64_t seed) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/dynrep-seeds-XXXXXX";
  if (!::mkdtemp(dir.data())) {
    std::perror("store_mutator: mkdtemp for seed stores");
    std::exit(2);
  }
  Rng rng(seed);
  std::vector<std::pair<std::string, std::string>> seeds = generateSeeds(dir, rng);
  ::rmdir(dir.c_str());
  return seeds;
}

void setDonorStores(const std::vector<std::string>& stores) {
  gDonorsSet = true;
  gDonors.clear();
  for (const std::string& bytes : stores) {
    Donor d;
    d.bytes = bytes;
    if (parse(bytes, &d.model)) gDonors.push_back(std::move(d));
  }
}

std::string mutateStore(Mutation kind, const std::string& store, size_t maxSize, uint64_t seed) {
  Rng rng(seed);
  Model m;
  if (!parse(store, &m)) return store.substr(0, maxSize);
  applyMutation(kind, rng, m, maxSize, store.size());
  return finish(rng, m, maxSize);
}

namespace {

size_t customMutate(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  Rng rng(seed);
  std::string input(reinterpret_cast<const char*>(data), size);
  Model m;
  bool parsed = parse(input, &m);
  // Without a corpus libFuzzer starts from an empty input, which no layout-aware step can use.
  if (!parsed && !donors().empty() && rng.oneIn(2)) {
    const Donor& d = donors()[rng.below(donors().size())];
    input = d.bytes;
    m = d.model;
    parsed = true;
  }
  std::string out;
  if (parsed && !rng.oneIn(4)) {
    for (int rounds = 1 + int(rng.below(3)); rounds > 0; --rounds)
      applyMutation(rng.pick(kWeighted), rng, m, maxSize, input.size());
    out = finish(rng, m, maxSize);
    if (rng.oneIn(4)) mutateBytes(out, maxSize);
  } else {
    out = input;
    for (int n = 1 + int(rng.below(6)); n > 0; --n) mutateBytes(out, maxSize);
  }
  if (out.size() > maxSize) out.resize(maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

size_t customCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2, uint8_t* out,
                       size_t maxOutSize, unsigned int seed) {
  Rng rng(seed);
  std::string first(reinterpret_cast<const char*>(data1), size1);
  std::string second(reinterpret_cast<const char*>(data2), size2);
  Model m, other;
  std::string result;
  if (parse(first, &m) && parse(second, &other) && !other.frames.empty() && !rng.oneIn(4)) {
    for (int n = 1 + int(rng.below(3)); n > 0; --n) {
      FramePart f = other.frames[rng.below(other.frames.size())];
      int same = rng.oneIn(2) ? pickFrame(rng, m, f.kind) : -1;
      if (same >= 0) {
        // Takes the place of a frame of its kind: the index now points at the stranger.
        f.oldOffset = m.frames[same].oldOffset;
        m.frames[same] = std::move(f);
        continue;
      }
      f.oldOffset = ~0ull;  // an extra frame: no index entry follows it
      m.frames.insert(m.frames.begin() + rng.below(m.frames.size() + 1), std::move(f));
    }
    result = finish(rng, m, maxOutSize);
  } else if (rng.oneIn(2)) {  // splice: the first input's prefix, the second's suffix
    size_t cut = rng.below(first.size() + 1), from = rng.below(second.size() + 1);
    result = first.substr(0, cut) + second.substr(from);
  } else {  // overwrite a range with bytes from the same place in the second input
    result = first;
    size_t n = std::min(first.size(), second.size());
    if (n > 0) {
      size_t at = rng.below(n);
      size_t len = 1 + rng.below(std::min<size_t>(n - at, 256));
      std::memcpy(&result[at], &second[at], len);
    }
  }
  if (result.size() > maxOutSize) result.resize(maxOutSize);
  std::memcpy(out, result.data(), result.size());
  return result.size();
}

}  // namespace
}  // namespace dynrep::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return dynrep::fuzz::customMutate(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                                            uint8_t* out, size_t max_out_size, unsigned int seed) {
  return dynrep::fuzz::customCrossOver(data1, size1, data2, size2, out, max_out_size, seed);
}
