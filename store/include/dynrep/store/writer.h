// StoreWriter: appends blobs and records to a new store file and seals it with an index.
// Thread-safety: every public method may be called from any thread; puts are serialized.
// After fork() only the parent may use the writer: in the child, puts, flush() and close()
// return InvalidArgument at once (never wait) and the destructor does nothing to the file.
// Compression and file writes run on one background thread, so puts return once their
// bytes are queued (they wait only when more than WriterOptions::maxPendingBytes are queued).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dynrep/store/blob_key.h"
#include "dynrep/store/limits.h"
#include "dynrep/store/status.h"

namespace dynrep {

// The 64 header bytes of a store file (docs/store-format.md §2): for tests that need a store
// written by another version.
std::string encodeStoreHeader(uint16_t major, uint16_t minor, const std::string& writerVersion,
                              uint64_t createdUnixSeconds);

struct WriterOptions {
  int level = 3;           // zstd level
  bool overwrite = false;  // replace an existing, unlocked store at the path
  bool sync = true;        // fsync at close, so a closed store survives power loss
  size_t chunkSize = kDefaultChunkSize;
  size_t maxPendingBytes = 64u << 20;  // bounds the writer's memory
};

class StoreWriter {
 public:
  // Creates the file, takes its writer lock and writes the header.
  static Result<std::unique_ptr<StoreWriter>> create(const std::string& path, const WriterOptions& options = {});
  // Closes the store if close() was not called; an error there is lost.
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Stores `data` once; a second put of the same bytes returns the same key and writes nothing.
  Result<BlobKey> putBlob(std::string_view data);
  // Stores the bytes of an open file from `offset` to its end. The file is read twice
  // (hash, then compress) and must not change until close().
  Result<BlobKey> putBlobFromFile(int fd, uint64_t offset = 0);
  // REQUIRES: kind >= kFirstRecordKind
  Status putRecord(uint16_t kind, std::string payload);
  // Waits until everything put so far is written to the file.
  Status flush();
  // Writes the index and trailer, syncs and releases the lock. Idempotent.
  Status close();

  const std::string& path() const;

 private:
  struct Impl;
  explicit StoreWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynrep
