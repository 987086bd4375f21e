// StoreReader: memory-maps the file, trusts the index of a finished store and rebuilds one
// by a forward scan otherwise; every payload is checked against its frame checksum on read.
#include "dynrep/store/reader.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <zstd.h>

#include "format.h"
#include "posix_io.h"

namespace dynrep {

namespace {

std::string at(uint64_t offset) { return "record at offset " + std::to_string(offset); }

// One decompression context per thread: readers are shared, contexts are not.
ZSTD_DCtx* threadDctx() {
  struct Holder {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    ~Holder() { ZSTD_freeDCtx(ctx); }
  };
  thread_local Holder holder;
  return holder.ctx;
}

}  // namespace

const char* stateName(StoreState state) {
  switch (state) {
    case StoreState::Finished: return "finished";
    case StoreState::InProgress: return "in progress";
    case StoreState::Recovered: return "recovered";
  }
  return "?";
}

StoreReader::~StoreReader() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<StoreReader>> StoreReader::open(const std::string& path) {
  std::unique_ptr<StoreReader> r(new StoreReader());
  r->path_ = path;
  DYNREP_RETURN_IF_ERROR(r->load());
  return r;
}

Status StoreReader::load() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT) return Status::notFound(path_ + ": no such file");
    return Status::ioError(path_ + ": cannot open: " + io::errnoText(errno));
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::ioError(path_ + ": stat failed: " + io::errnoText(errno));
  if (S_ISDIR(st.st_mode)) return Status::invalidArgument(path_ + ": is a directory, not a store file");
  if (!S_ISREG(st.st_mode)) return Status::invalidArgument(path_ + ": not a regular file");
  size_ = uint64_t(st.st_size);
  if (size_ < format::kHeaderSize) {
    if (::flock(fd_, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
      return Status::locked(path_ + ": a writer is creating this store and has not written its header yet");
    if (size_ == 0) return Status::corruption(path_ + ": empty file (not a dynamo-replay store)");
    return Status::corruption(path_ + ": file is " + std::to_string(size_) +
                              " bytes, shorter than a store header (truncated?)");
  }
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED) return Status::ioError(path_ + ": mmap failed: " + io::errnoText(errno));
  map_ = static_cast<const uint8_t*>(m);
  ::madvise(m, size_, MADV_RANDOM);  // open touches only the ends; blob reads advise their own ranges
  format::Header header;
  DYNREP_RETURN_IF_ERROR(format::decodeHeader(map_, path_, &header));
  header_ = {header.major, header.minor, header.writerVersion, header.createdUnixSeconds};

  format::Trailer trailer;
  if (size_ >= format::kHeaderSize + format::kTrailerSize &&
      format::decodeTrailer(map_ + size_ - format::kTrailerSize, &trailer)) {
    Status s = loadIndex(trailer);
    if (s.isOk()) return s;
    *index_ = format::Index{};
    state_ = StoreState::Recovered;
    recoveryNote_ = "index damaged (" + s.message() + "); recovered by a scan: " + scan();
    return Status::ok();
  }
  // No trailer: a writer is still appending (it holds the lock) or it died before close.
  bool writerActive = ::flock(fd_, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (!writerActive) ::flock(fd_, LOCK_UN);
  state_ = writerActive ? StoreState::InProgress : StoreState::Recovered;
  recoveryNote_ = scan();
  return Status::ok();
}

Status StoreReader::loadIndex(const format::Trailer& trailer) {
  uint64_t indexEnd = size_ - format::kTrailerSize;
  if (trailer.indexOffset < format::kHeaderSize ||
      !format::frameFits(trailer.indexOffset, trailer.indexPayloadSize, indexEnd) ||
      indexEnd - trailer.indexOffset - format::kFrameSize != trailer.indexPayloadSize)
    return Status::corruption("trailer points outside the file");
  Result<std::string_view> payload = framePayload(trailer.indexOffset, uint16_t(format::Kind::Index));
  if (!payload.isOk()) return payload.status();
  if (payload->size() != trailer.indexPayloadSize) return Status::corruption("index length differs from the trailer's");
  return format::decodeIndex(*payload, trailer.indexOffset, index_.get());
}

std::string StoreReader::scan() {
  uint64_t off = format::kHeaderSize;
  format::BlobEntry building;
  bool inBlob = false;
  std::string stop;  // where and why the scan ended early
  while (off < size_) {
    format::Frame f;
    if (const char* why = frameProblem(off, size_, &f)) {
      stop = at(off) + ": " + why + "; " + std::to_string(size_ - off) + " trailing bytes ignored";
      break;
    }
    const uint8_t* payload = map_ + off + format::kFrameSize;
    if (f.kind == uint16_t(format::Kind::BlobChunk) && f.payloadSize >= format::kChunkHeaderSize) {
      format::ChunkHeader c = format::decodeChunkHeader(payload);
      bool continues = inBlob && c.seq == building.chunkCount && c.key == building.key;
      if (c.seq == 0) {
        building = format::BlobEntry{c.key, 0, 0, uint32_t(index_->chunks.size()), 0};
        inBlob = true;
      } else if (!continues) {
        inBlob = false;  // an orphan chunk: its blob's start was lost
      }
      if (inBlob && (c.flags & format::kChunkReservedMask) == 0 && c.rawSize <= format::kMaxChunkRawSize) {
        index_->chunks.push_back({off, f.payloadSize, c.rawSize});
        building.rawSize += c.rawSize;
        building.storedSize += f.payloadSize - format::kChunkHeaderSize;
        building.chunkCount++;
        if (c.flags & format::kChunkFlagLast) {
          index_->blobs.push_back(building);
          inBlob = false;
        }
      }
    } else if (f.kind >= format::kFirstTypedKind) {
      index_->records.push_back({off, f.payloadSize, f.kind});
    }  // the index of an unfinished close, and container kinds from newer minors, are skipped
    off += format::kFrameSize + f.payloadSize;
  }
  std::stable_sort(index_->blobs.begin(), index_->blobs.end(),
                   [](const format::BlobEntry& a, const format::BlobEntry& b) { return a.key < b.key; });
  // Duplicate keys cannot come from our writer; keep the first if a damaged file has them.
  index_->blobs.erase(
      std::unique(index_->blobs.begin(), index_->blobs.end(),
                  [](const format::BlobEntry& a, const format::BlobEntry& b) { return a.key == b.key; }),
      index_->blobs.end());
  if (!stop.empty()) return stop;
  return "no index: the writer did not close the store; all " + std::to_string(size_) + " bytes scanned";
}

StoreStats StoreReader::stats() const {
  StoreStats s;
  s.fileBytes = size_;
  s.blobCount = index_->blobs.size();
  for (const auto& b : index_->blobs) {
    s.rawBlobBytes += b.rawSize;
    s.storedBlobBytes += b.storedSize;
  }
  for (const auto& r : index_->records) s.recordsByKind[r.kind]++;
  return s;
}

const char* StoreReader::frameProblem(uint64_t offset, uint64_t end, format::Frame* f) const {
  if (offset > end || end - offset < format::kFrameSize) return "truncated frame header";
  *f = format::decodeFrame(map_ + offset);
  if (f->flags != 0 || f->kind == 0 || f->payloadSize > format::kMaxPayload) return "damaged frame header";
  if (end - offset - format::kFrameSize < f->payloadSize) return "truncated";
  if (format::frameChecksum(f->payloadSize, f->kind, f->flags, map_ + offset + format::kFrameSize) != f->checksum)
    return "checksum mismatch";
  return nullptr;
}

Result<std::string_view> StoreReader::framePayload(uint64_t offset, uint16_t expectKind) const {
  format::Frame f;
  if (const char* why = frameProblem(offset, size_, &f))
    return Status::corruption(path_ + ": " + at(offset) + ": " + why);
  if (f.kind != expectKind)
    return Status::corruption(path_ + ": " + at(offset) + ": kind is " + std::to_string(f.kind) + ", expected " +
                              std::to_string(expectKind));
  return std::string_view(reinterpret_cast<const char*>(map_ + offset + format::kFrameSize), f.payloadSize);
}
Result<std::string_view> StoreReader::recordPayload(size_t i) const {
  if (i >= index_->records.size()) return Status::invalidArgument(path_ + ": no record " + std::to_string(i));
  const format::RecordEntry& r = index_->records[i];
  Result<std::string_view> p = framePayload(r.offset, r.kind);
  if (p.isOk() && p->size() != r.payloadSize)
    return Status::corruption(path_ + ": " + at(r.offset) + ": length differs from the index");
  return p;
}

StoreReader::StoreReader() : index_(std::make_unique<format::Index>()) {}

size_t StoreReader::recordCount() const { return index_->records.size(); }

RecordInfo StoreReader::record(size_t i) const {
  const format::RecordEntry& r = index_->records[i];
  return {r.kind, r.offset, r.payloadSize};
}

namespace {
BlobInfo infoOf(const format::BlobEntry& b, const format::Index& index) {
  return {b.key, b.rawSize, b.storedSize, b.chunkCount, b.chunkCount ? index.chunks[b.firstChunk].offset : 0};
}
}  // namespace

std::vector<BlobInfo> StoreReader::blobs() const {
  std::vector<BlobInfo> out;
  out.reserve(index_->blobs.size());
  for (const format::BlobEntry& b : index_->blobs) out.push_back(infoOf(b, *index_));
  return out;
}

std::optional<BlobInfo> StoreReader::findBlob(const BlobKey& key) const {
  const format::BlobEntry* e = findEntry(key);
  if (!e) return std::nullopt;
  return infoOf(*e, *index_);
}

const format::BlobEntry* StoreReader::findEntry(const BlobKey& key) const {
  auto it = std::lower_bound(index_->blobs.begin(), index_->blobs.end(), key,
                             [](const format::BlobEntry& b, const BlobKey& k) { return b.key < k; });
  if (it == index_->blobs.end() || it->key != key) return nullptr;
  return &*it;
}

Result<std::string_view> StoreReader::chunkData(const format::BlobEntry& blob, uint32_t seq) const {
  const format::ChunkEntry& c = index_->chunks[blob.firstChunk + seq];
  Result<std::string_view> p = framePayload(c.offset, uint16_t(format::Kind::BlobChunk));
  if (!p.isOk()) return p.status();
  std::string where = path_ + ": " + at(c.offset) + ": blob " + blob.key.hex() + " chunk " + std::to_string(seq);
  if (p->size() != c.payloadSize) return Status::corruption(where + ": length differs from the index");
  if (p->size() < format::kChunkHeaderSize) return Status::corruption(where + ": shorter than a chunk header");
  format::ChunkHeader h = format::decodeChunkHeader(reinterpret_cast<const uint8_t*>(p->data()));
  bool last = seq + 1 == blob.chunkCount;
  if (h.key != blob.key || h.seq != seq || h.rawSize != c.rawSize || (h.flags & format::kChunkReservedMask) ||
      bool(h.flags & format::kChunkFlagLast) != last)
    return Status::corruption(where + ": chunk header disagrees with the index");
  const char* z = p->data() + format::kChunkHeaderSize;
  size_t zSize = p->size() - format::kChunkHeaderSize;
  // Exactly one zstd frame: trailing frames (skippable or not) would be silently accepted.
  if (ZSTD_findFrameCompressedSize(z, zSize) != zSize)
    return Status::corruption(where + ": payload is not exactly one zstd frame");
  if (ZSTD_getFrameContentSize(z, zSize) != h.rawSize)
    return Status::corruption(where + ": zstd frame declares another size than the chunk header");
  return std::string_view(z, zSize);
}

Status StoreReader::decompressChunk(const format::BlobEntry& blob, uint32_t seq, std::string_view zstd,
                                    char* out) const {
  const format::ChunkEntry& c = index_->chunks[blob.firstChunk + seq];
  size_t n = ZSTD_decompressDCtx(threadDctx(), out, c.rawSize, zstd.data(), zstd.size());
  if (!ZSTD_isError(n) && n == c.rawSize) return Status::ok();
  return Status::corruption(
      path_ + ": " + at(c.offset) + ": blob " + blob.key.hex() + " chunk " + std::to_string(seq) + ": " +
      (ZSTD_isError(n) ? std::string("zstd: ") + ZSTD_getErrorName(n)
                       : "decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(c.rawSize)));
}
Result<CheckedBlob> StoreReader::checkBlob(const BlobKey& key) const {
  const format::BlobEntry* e = findEntry(key);
  if (!e) return Status::notFound(path_ + ": no blob " + key.hex());
  const format::BlobEntry& entry = *e;
  CheckedBlob checked{infoOf(entry, *index_), {}};
  checked.frames.reserve(entry.chunkCount);
  for (uint32_t seq = 0; seq < entry.chunkCount; ++seq) {
    Result<std::string_view> z = chunkData(entry, seq);
    if (!z.isOk()) return z.status();
    checked.frames.push_back(*z);
  }
  return checked;
}
Status StoreReader::readBlobInto(const CheckedBlob& blob, char* out) const {
  const format::BlobEntry* e = findEntry(blob.info.key);
  if (!e || blob.frames.size() != e->chunkCount)
    return Status::invalidArgument(path_ + ": blob " + blob.info.key.hex() + " was not checked here");
  const format::BlobEntry& entry = *e;
  const format::ChunkEntry& first = index_->chunks[entry.firstChunk];
  const format::ChunkEntry& lastc = index_->chunks[entry.firstChunk + entry.chunkCount - 1];
  ::madvise(const_cast<uint8_t*>(map_) + (first.offset & ~uint64_t(4095)),
            lastc.offset + format::kFrameSize + lastc.payloadSize - (first.offset & ~uint64_t(4095)), MADV_SEQUENTIAL);
  // The index guarantees the chunks' raw sizes add up to entry.rawSize (docs/store-format.md §6).
  BlobHasher hasher;
  for (uint32_t seq = 0; seq < entry.chunkCount; ++seq) {
    DYNREP_RETURN_IF_ERROR(decompressChunk(entry, seq, blob.frames[seq], out));
    uint32_t n = index_->chunks[entry.firstChunk + seq].rawSize;
    hasher.update(out, n);
    out += n;
  }
  if (hasher.finish() != entry.key)
    return Status::corruption(path_ + ": blob " + entry.key.hex() + ": content hash mismatch");
  return Status::ok();
}
Result<std::string> StoreReader::readBlob(const BlobKey& key) const {
  const format::BlobEntry* e = findEntry(key);
  if (!e) return Status::notFound(path_ + ": no blob " + key.hex());
  Result<CheckedBlob> checked = checkBlob(key);
  if (!checked.isOk()) return checked.status();
  std::string out;
  try {
    out.resize(e->rawSize);
  } catch (const std::bad_alloc&) {
    return Status::ioError(path_ + ": blob " + key.hex() + ": cannot allocate " + std::to_string(e->rawSize) +
                           " bytes; read it as a stream");
  }
  DYNREP_RETURN_IF_ERROR(readBlobInto(*checked, out.data()));
  return out;
}

Result<std::unique_ptr<BlobStream>> StoreReader::openBlob(const BlobKey& key) const {
  const format::BlobEntry* e = findEntry(key);
  if (!e) return Status::notFound(path_ + ": no blob " + key.hex());
  return std::unique_ptr<BlobStream>(new BlobStream(this, e, infoOf(*e, *index_)));
}

BlobStream::BlobStream(const StoreReader* reader, const format::BlobEntry* entry, BlobInfo info)
    : reader_(reader), entry_(entry), info_(std::move(info)) {}

Result<size_t> BlobStream::read(char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (chunkPos_ == chunk_.size()) {
      if (nextSeq_ == entry_->chunkCount) break;
      // Checked before the buffer grows, so a damaged size never becomes an allocation.
      Result<std::string_view> z = reader_->chunkData(*entry_, nextSeq_);
      if (!z.isOk()) return z.status();
      chunk_.resize(reader_->index_->chunks[entry_->firstChunk + nextSeq_].rawSize);
      DYNREP_RETURN_IF_ERROR(reader_->decompressChunk(*entry_, nextSeq_, *z, chunk_.data()));
      hasher_.update(chunk_.data(), chunk_.size());
      chunkPos_ = 0;
      if (++nextSeq_ == entry_->chunkCount && hasher_.finish() != entry_->key)
        return Status::corruption(reader_->path_ + ": blob " + entry_->key.hex() + ": content hash mismatch");
    }
    size_t n = std::min(size - done, chunk_.size() - chunkPos_);
    std::memcpy(out + done, chunk_.data() + chunkPos_, n);
    chunkPos_ += n;
    done += n;
  }
  return done;
}

std::vector<Status> StoreReader::verify() const {
  std::vector<Status> problems;
  if (state_ != StoreState::Finished)
    problems.push_back(Status::corruption(path_ + ": " + stateName(state_) + " store: " + recoveryNote_));
  // Walk every frame, whether the index names it or not. A scanned store had this done by
  // its scan, which stopped at the first bad frame and said so in the recovery note.
  uint64_t end = state_ == StoreState::Finished ? size_ - format::kTrailerSize : format::kHeaderSize;
  for (uint64_t off = format::kHeaderSize; off < end;) {
    format::Frame f;
    const char* why = frameProblem(off, end, &f);
    if (why) problems.push_back(Status::corruption(path_ + ": " + at(off) + ": " + why));
    // A bad checksum or header field leaves the length usable; a truncation ends the walk.
    if (why && (end - off < format::kFrameSize || f.payloadSize > end - off - format::kFrameSize)) break;
    off += format::kFrameSize + f.payloadSize;
  }
  size_t walked = problems.size();
  std::string scratch;
  for (const format::BlobEntry& b : index_->blobs) {
    // Stream chunk by chunk so verifying a huge blob needs one chunk of memory.
    auto stream = std::unique_ptr<BlobStream>(new BlobStream(this, &b, infoOf(b, *index_)));
    scratch.resize(256 * 1024);
    for (;;) {
      Result<size_t> n = stream->read(scratch.data(), scratch.size());
      if (!n.isOk()) {
        // A damaged chunk was already named by the walk; add only what it could not see.
        auto sameMessage = [&](const Status& p) { return p.message() == n.status().message(); };
        if (std::none_of(problems.begin(), problems.begin() + walked, sameMessage)) problems.push_back(n.status());
        break;
      }
      if (*n == 0) break;
    }
  }
  return problems;
}

}  // namespace dynrep
