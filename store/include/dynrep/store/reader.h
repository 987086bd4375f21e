// StoreReader: opens a store file read-only, finished or not, and reads its records and blobs.
// Thread-safety: after open() every const method may be called from any number of threads.
// Opening reads only the header, the trailer and the index; a store without a valid
// trailer (its writer is still running, or was killed) is opened by a recovery scan
// that keeps every complete record and blob.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dynrep/store/blob_key.h"
#include "dynrep/store/status.h"

namespace dynrep {

// The on-disk layout (store/format.h) is private to store/: readers see it through these.
namespace format {
struct Header;
struct Index;
struct Frame;
struct BlobEntry;
struct Trailer;
}  // namespace format

// What a store's header says (docs/store-format.md §2).
struct StoreHeader {
  uint16_t major = 0;
  uint16_t minor = 0;
  std::string writerVersion;
  uint64_t createdUnixSeconds = 0;
};

// One typed record as the index lists it, in file order.
struct RecordInfo {
  uint16_t kind = 0;
  uint64_t offset = 0;  // of its frame
  uint32_t payloadSize = 0;
};

// One blob as the index lists it.
struct BlobInfo {
  BlobKey key;
  uint64_t rawSize = 0;
  uint64_t storedSize = 0;  // compressed bytes, chunk headers excluded
  uint32_t chunks = 0;
  uint64_t offset = 0;  // of its first chunk's frame
};

enum class StoreState {
  Finished,    // closed by its writer: trailer and index are sound
  InProgress,  // a writer holds the lock and is still appending; read by a scan
  Recovered,   // never closed (writer killed) or index damaged; read by a scan
};
const char* stateName(StoreState state);

struct StoreStats {
  uint64_t fileBytes = 0;
  uint64_t blobCount = 0;
  uint64_t rawBlobBytes = 0;     // uncompressed
  uint64_t storedBlobBytes = 0;  // compressed
  std::map<uint16_t, uint64_t> recordsByKind;
};

class BlobStream;

// A blob whose chunks passed StoreReader::checkBlob: their zstd frames, in order. The views
// point into the reader's mapping and live as long as the reader.
struct CheckedBlob {
  BlobInfo info;
  std::vector<std::string_view> frames;
};

class StoreReader {
 public:
  static Result<std::unique_ptr<StoreReader>> open(const std::string& path);
  ~StoreReader();
  StoreReader(const StoreReader&) = delete;
  StoreReader& operator=(const StoreReader&) = delete;

  const std::string& path() const { return path_; }
  const StoreHeader& header() const { return header_; }
  StoreState state() const { return state_; }
  // Why a scan stopped where it did, e.g. "record at offset 4242: truncated"; empty when finished.
  const std::string& recoveryNote() const { return recoveryNote_; }
  StoreStats stats() const;

  // Typed records in file order; the view lives as long as the reader.
  size_t recordCount() const;
  RecordInfo record(size_t i) const;  // REQUIRES: i < recordCount()
  uint16_t recordKind(size_t i) const { return record(i).kind; }
  Result<std::string_view> recordPayload(size_t i) const;

  // Every blob, sorted by key.
  std::vector<BlobInfo> blobs() const;
  std::optional<BlobInfo> findBlob(const BlobKey& key) const;
  // Checks every chunk of a blob (frame, header against the index, one zstd frame declaring
  // its raw size) without decompressing. Call it before allocating info.rawSize bytes, so a
  // damaged size is an error rather than an allocation.
  Result<CheckedBlob> checkBlob(const BlobKey& key) const;
  // Decompresses a checked blob into `out`, which must hold exactly info.rawSize bytes, and
  // checks its content hash.
  Status readBlobInto(const CheckedBlob& blob, char* out) const;
  Result<std::string> readBlob(const BlobKey& key) const;
  // Streams a blob chunk by chunk; the hash is checked when the last byte is read.
  Result<std::unique_ptr<BlobStream>> openBlob(const BlobKey& key) const;

  // Checks every frame checksum, chunk header and blob hash: each problem found, a Corruption
  // whose message names the file and where ("PATH: record at offset N: ..."), in file order;
  // none for a sound store.
  std::vector<Status> verify() const;

 private:
  friend class BlobStream;

  StoreReader();
  const format::BlobEntry* findEntry(const BlobKey& key) const;
  Status load();
  Status loadIndex(const format::Trailer& trailer);
  // Rebuilds the index from the frames; returns where and why it stopped.
  std::string scan();
  // Why the frame at `offset`, which must end by `end`, is unusable (truncated, damaged
  // header, checksum mismatch), or nullptr; fills *f once the header is readable.
  const char* frameProblem(uint64_t offset, uint64_t end, format::Frame* f) const;
  // Checks the frame at `offset` (kind and checksum) and returns its payload.
  Result<std::string_view> framePayload(uint64_t offset, uint16_t expectKind) const;
  // Checks chunk `seq` of `blob` (frame, header against the index, one zstd frame declaring
  // the raw size) and returns its zstd bytes.
  Result<std::string_view> chunkData(const format::BlobEntry& blob, uint32_t seq) const;
  // Decompresses chunk `seq`, whose zstd frame chunkData() returned, into `out`.
  Status decompressChunk(const format::BlobEntry& blob, uint32_t seq, std::string_view zstd, char* out) const;

  std::string path_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  StoreHeader header_;
  StoreState state_ = StoreState::Finished;
  std::string recoveryNote_;
  std::unique_ptr<format::Index> index_;
};

class BlobStream {
 public:
  // Reads up to `size` bytes; returns 0 at the end. A damaged chunk or hash mismatch is an error.
  Result<size_t> read(char* out, size_t size);
  uint64_t size() const { return info_.rawSize; }

 private:
  friend class StoreReader;
  BlobStream(const StoreReader* reader, const format::BlobEntry* entry, BlobInfo info);
  const StoreReader* reader_;
  const format::BlobEntry* entry_;  // in the reader's index
  BlobInfo info_;
  uint32_t nextSeq_ = 0;
  std::string chunk_;
  size_t chunkPos_ = 0;
  BlobHasher hasher_;
};

}  // namespace dynrep
