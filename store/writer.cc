// StoreWriter: a caller-side half that hashes, deduplicates and queues, and a background
// thread that compresses chunks and appends frames in queue order.
#include "dynrep/store/writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <zstd.h>

#include "format.h"
#include "posix_io.h"

#ifndef DYNREP_VERSION
#define DYNREP_VERSION "0.0.0"
#endif

namespace dynrep {

namespace {

// A file shared by the chunk jobs of one putBlobFromFile; closed when the last one is done.
struct SharedFd {
  int fd;
  explicit SharedFd(int f) : fd(f) {}
  ~SharedFd() { ::close(fd); }
};

struct Job {
  enum class Type { Chunk, Record };
  explicit Job(Type t = Type::Record) : type(t) {}
  Type type;
  // Chunk: header plus either owned bytes or a range of a file.
  format::ChunkHeader chunk;
  std::string bytes;  // chunk data (memory blobs) or record payload
  std::shared_ptr<SharedFd> file;
  uint64_t fileOffset = 0;
  // Record.
  uint16_t kind = 0;
  // Bytes this job counts against maxPendingBytes: its own memory, or for a file chunk the
  // buffer it will need, which also bounds how many descriptors the queue keeps open.
  size_t cost = 0;
};

// Creates `path` exclusively and takes its writer lock. An existing store is replaced only
// with `overwrite`, by unlinking it once its lock is ours: a reader that still maps the old
// file keeps reading it, where truncating in place would fault its mapping.
Result<int> createLocked(const std::string& path, bool overwrite) {
  int old = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (old >= 0) {
    auto done = [old](Status s) {
      ::close(old);
      return s;
    };
    struct stat st;
    if (::fstat(old, &st) != 0) return done(Status::ioError(path + ": stat failed: " + io::errnoText(errno)));
    if (!S_ISREG(st.st_mode)) return done(Status::invalidArgument(path + ": exists and is not a regular file"));
    if (::flock(old, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return done(Status::locked(path + ": store is locked by another writer"));
      return done(Status::ioError(path + ": cannot lock store: " + io::errnoText(errno)));
    }
    if (!overwrite) return done(Status::alreadyExists(path + ": store already exists (pass overwrite to replace it)"));
    if (::unlink(path.c_str()) != 0)
      return done(Status::ioError(path + ": cannot replace store: " + io::errnoText(errno)));
    ::close(old);
  } else if (errno != ENOENT) {
    return Status::ioError(path + ": cannot open: " + io::errnoText(errno));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return Status::locked(path + ": another writer created the store at the same moment");
    return Status::ioError(path + ": cannot create store: " + io::errnoText(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status::locked(path + ": store is locked by another writer");
  }
  return fd;
}

}  // namespace

struct StoreWriter::Impl {
  std::string path;
  WriterOptions options;
  int fd = -1;
  pid_t owner = ::getpid();  // a forked child inherits a copy of this object, not the thread

  std::mutex putMu;  // serializes whole puts, so a blob's chunks stay contiguous

  std::mutex mu;  // guards everything below
  std::condition_variable queueChanged;
  std::deque<Job> queue;
  size_t pendingBytes = 0;
  uint64_t enqueued = 0, completed = 0;
  std::unordered_set<BlobKey, BlobKeyHash> keys;
  Status error;  // first background failure; sticky
  bool stopping = false, closed = false;
  std::thread worker;

  // Owned by the worker thread until it is joined.
  uint64_t offset = format::kHeaderSize;
  format::Index index;
  format::BlobEntry building;
  ZSTD_CCtx* cctx = nullptr;
  std::string inBuf, outBuf;

  ~Impl() { ZSTD_freeCCtx(cctx); }

  void run();
  // In a forked child the writer thread does not exist: a put would wait forever for room in
  // a queue nobody drains, and a flush for a write that never comes. Checked before any lock
  // (one may have been held by another thread at the fork).
  Status ownerOnly() const {
    if (::getpid() == owner) return Status::ok();
    return Status::invalidArgument(path + ": store belongs to process " + std::to_string(owner));
  }
  Status writeFrame(uint16_t kind, const void* payload, size_t size);
  Status writeChunk(Job& job);
  Status enqueue(Job job, size_t bytes);
  // REQUIRES: putMu held. With `owned` (holding `data`), a one-chunk blob moves its bytes
  // into the queue instead of copying them.
  Result<BlobKey> putBytes(std::string_view data, std::string* owned = nullptr);
  // REQUIRES: putMu held. True when `key` is new and its chunks must be queued, false when
  // the store has it already.
  Result<bool> claimKey(const BlobKey& key);
  // REQUIRES: putMu held. Queues `size` bytes of blob `key` as chunks; fill(job, pos, n)
  // sets where each chunk's bytes come from.
  template <typename Fill>
  Status enqueueChunks(const BlobKey& key, uint64_t size, Fill fill);
  Status finish();
};

StoreWriter::StoreWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StoreWriter::~StoreWriter() {
  // A forked child's copy holds a thread handle that does not exist in the child: destroying
  // it would terminate the process, so the child leaks its copy instead.
  if (::getpid() != impl_->owner) {
    (void)impl_.release();
    return;
  }
  close();
}
const std::string& StoreWriter::path() const { return impl_->path; }

Result<std::unique_ptr<StoreWriter>> StoreWriter::create(const std::string& path, const WriterOptions& options) {
  if (options.level < ZSTD_minCLevel() || options.level > ZSTD_maxCLevel())
    return Status::invalidArgument(path + ": compression level " + std::to_string(options.level) + " is outside " +
                                   std::to_string(ZSTD_minCLevel()) + ".." + std::to_string(ZSTD_maxCLevel()));
  if (options.chunkSize == 0 || options.chunkSize > format::kMaxChunkRawSize)
    return Status::invalidArgument(path + ": chunk size out of range");
  Result<int> opened = createLocked(path, options.overwrite);
  if (!opened.isOk()) return opened.status();
  int fd = *opened;
  auto fail = [fd](Status s) {
    ::close(fd);
    return s;
  };

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  impl->fd = fd;
  impl->cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_compressionLevel, options.level);
  ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_checksumFlag, 0);  // the blob hash covers the bytes

  format::Header header;
  header.writerVersion = "dynamo-replay " DYNREP_VERSION;
  header.createdUnixSeconds = uint64_t(std::time(nullptr));
  uint8_t head[format::kHeaderSize];
  format::encodeHeader(header, head);
  struct iovec iov = {head, sizeof head};
  if (Status s = io::writeAll(fd, path, &iov, 1); !s.isOk()) return fail(s);

  impl->worker = std::thread([p = impl.get()] { p->run(); });
  return std::unique_ptr<StoreWriter>(new StoreWriter(std::move(impl)));
}

Status StoreWriter::Impl::enqueue(Job job, size_t bytes) {
  std::unique_lock<std::mutex> lock(mu);
  if (closed) return Status::invalidArgument(path + ": store is closed");
  // Backpressure: wait while the queue holds too many bytes, but never refuse a lone job.
  queueChanged.wait(
      lock, [&] { return pendingBytes == 0 || pendingBytes + bytes <= options.maxPendingBytes || !error.isOk(); });
  if (!error.isOk()) return error;
  pendingBytes += bytes;
  job.cost = bytes;
  ++enqueued;
  queue.push_back(std::move(job));
  queueChanged.notify_all();
  return Status::ok();
}

Result<BlobKey> StoreWriter::putBlob(std::string_view data) {
  DYNREP_RETURN_IF_ERROR(impl_->ownerOnly());
  std::lock_guard<std::mutex> put(impl_->putMu);
  return impl_->putBytes(data);
}

Result<bool> StoreWriter::Impl::claimKey(const BlobKey& key) {
  std::lock_guard<std::mutex> lock(mu);
  if (closed) return Status::invalidArgument(path + ": store is closed");
  if (!error.isOk()) return error;
  return keys.insert(key).second;
}

template <typename Fill>
Status StoreWriter::Impl::enqueueChunks(const BlobKey& key, uint64_t size, Fill fill) {
  uint64_t pos = 0;
  uint32_t seq = 0;
  do {  // an empty blob is one empty chunk
    size_t n = size_t(std::min<uint64_t>(options.chunkSize, size - pos));
    Job job(Job::Type::Chunk);
    job.chunk = format::ChunkHeader{key, seq++, uint32_t(n), pos + n == size ? format::kChunkFlagLast : 0};
    fill(job, pos, n);
    DYNREP_RETURN_IF_ERROR(enqueue(std::move(job), n));
    pos += n;
  } while (pos < size);
  return Status::ok();
}

Result<BlobKey> StoreWriter::Impl::putBytes(std::string_view data, std::string* owned) {
  BlobKey key = BlobKey::of(data);
  Result<bool> isNew = claimKey(key);
  if (!isNew.isOk()) return isNew.status();
  if (!*isNew) return key;
  DYNREP_RETURN_IF_ERROR(enqueueChunks(key, data.size(), [&](Job& job, uint64_t pos, size_t n) {
    if (owned && n == data.size())
      job.bytes = std::move(*owned);
    else
      job.bytes.assign(data.data() + pos, n);
  }));
  return key;
}

Result<BlobKey> StoreWriter::putBlobFromFile(int fd, uint64_t offset) {
  Impl& d = *impl_;
  DYNREP_RETURN_IF_ERROR(d.ownerOnly());
  std::lock_guard<std::mutex> put(d.putMu);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::ioError(d.path + ": stat of blob source failed: " + io::errnoText(errno));
  if (uint64_t(st.st_size) < offset) return Status::invalidArgument(d.path + ": blob source offset past its end");
  uint64_t size = uint64_t(st.st_size) - offset;
  if (size <= d.options.chunkSize) {
    // One chunk: read it once and queue the bytes, holding no descriptor.
    std::string data(size_t(size), '\0');
    DYNREP_RETURN_IF_ERROR(io::preadAll(fd, "blob source", offset, data.data(), data.size()));
    return d.putBytes(data, &data);
  }
  BlobHasher hasher;
  std::vector<char> buf(1u << 20);
  for (uint64_t pos = 0; pos < size;) {
    size_t n = size_t(std::min<uint64_t>(buf.size(), size - pos));
    DYNREP_RETURN_IF_ERROR(io::preadAll(fd, "blob source", offset + pos, buf.data(), n));
    hasher.update(buf.data(), n);
    pos += n;
  }
  BlobKey key = hasher.finish();
  Result<bool> isNew = d.claimKey(key);
  if (!isNew.isOk()) return isNew.status();
  if (!*isNew) return key;
  int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return Status::ioError(d.path + ": dup of blob source failed: " + io::errnoText(errno));
  auto shared = std::make_shared<SharedFd>(own);
  DYNREP_RETURN_IF_ERROR(d.enqueueChunks(key, size, [&](Job& job, uint64_t pos, size_t) {
    job.file = shared;
    job.fileOffset = offset + pos;
  }));
  return key;
}

Status StoreWriter::putRecord(uint16_t kind, std::string payload) {
  Impl& d = *impl_;
  if (kind < format::kFirstTypedKind)
    return Status::invalidArgument(d.path + ": record kind " + std::to_string(kind) + " is reserved for the container");
  if (payload.size() > format::kMaxPayload)
    return Status::invalidArgument(d.path + ": record payload larger than 1 GiB (store it as a blob)");
  DYNREP_RETURN_IF_ERROR(d.ownerOnly());
  std::lock_guard<std::mutex> put(d.putMu);
  Job job(Job::Type::Record);
  job.kind = kind;
  size_t n = payload.size();
  job.bytes = std::move(payload);
  return d.enqueue(std::move(job), n);
}

Status StoreWriter::flush() {
  Impl& d = *impl_;
  DYNREP_RETURN_IF_ERROR(d.ownerOnly());
  std::unique_lock<std::mutex> lock(d.mu);
  uint64_t target = d.enqueued;
  d.queueChanged.wait(lock, [&] { return d.completed >= target || !d.error.isOk(); });
  return d.error;
}

void StoreWriter::Impl::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu);
      queueChanged.wait(lock, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    size_t bytes = job.cost;
    Status s;
    bool failed;
    {
      std::lock_guard<std::mutex> lock(mu);
      failed = !error.isOk();
    }
    if (!failed) {
      if (job.type == Job::Type::Chunk)
        s = writeChunk(job);
      else
        s = writeFrame(job.kind, job.bytes.data(), job.bytes.size());
      if (s.isOk() && job.type == Job::Type::Record)
        index.records.push_back({offset - format::kFrameSize - job.bytes.size(), uint32_t(job.bytes.size()), job.kind});
    }
    job = Job{};  // release memory before waking producers
    std::lock_guard<std::mutex> lock(mu);
    if (!s.isOk() && error.isOk()) error = s;
    pendingBytes -= bytes;
    ++completed;
    queueChanged.notify_all();
  }
}

Status StoreWriter::Impl::writeFrame(uint16_t kind, const void* payload, size_t size) {
  format::Frame frame{uint32_t(size), kind, 0, format::frameChecksum(uint32_t(size), kind, 0, payload)};
  uint8_t head[format::kFrameSize];
  format::encodeFrame(frame, head);
  struct iovec iov[2] = {{head, sizeof head}, {const_cast<void*>(payload), size}};
  DYNREP_RETURN_IF_ERROR(io::writeAll(fd, path, iov, 2));
  offset += format::kFrameSize + size;
  return Status::ok();
}

Status StoreWriter::Impl::writeChunk(Job& job) {
  const char* src = job.bytes.data();
  size_t n = job.chunk.rawSize;
  if (job.file) {
    inBuf.resize(n);
    DYNREP_RETURN_IF_ERROR(io::preadAll(job.file->fd, "blob source", job.fileOffset, inBuf.data(), n));
    src = inBuf.data();
  }
  // Compress straight after the chunk header so the frame is written from one buffer.
  size_t bound = format::kChunkHeaderSize + ZSTD_compressBound(n);
  if (outBuf.size() < bound) outBuf.resize(bound);
  auto* out = reinterpret_cast<uint8_t*>(outBuf.data());
  format::encodeChunkHeader(job.chunk, out);
  size_t z = ZSTD_compress2(cctx, out + format::kChunkHeaderSize, bound - format::kChunkHeaderSize, src, n);
  if (ZSTD_isError(z)) return Status::ioError(path + ": zstd compression failed: " + ZSTD_getErrorName(z));
  uint64_t at = offset;
  DYNREP_RETURN_IF_ERROR(writeFrame(uint16_t(format::Kind::BlobChunk), out, format::kChunkHeaderSize + z));
  if (job.chunk.seq == 0) building = format::BlobEntry{job.chunk.key, 0, 0, uint32_t(index.chunks.size()), 0};
  index.chunks.push_back({at, uint32_t(format::kChunkHeaderSize + z), job.chunk.rawSize});
  building.rawSize += n;
  building.storedSize += z;
  building.chunkCount++;
  if (job.chunk.flags & format::kChunkFlagLast) index.blobs.push_back(building);
  return Status::ok();
}

Status StoreWriter::Impl::finish() {
  std::sort(index.blobs.begin(), index.blobs.end(),
            [](const format::BlobEntry& a, const format::BlobEntry& b) { return a.key < b.key; });
  std::string payload = format::encodeIndex(index);
  if (payload.size() > format::kMaxPayload)
    return Status::notSupported(path + ": index of " + std::to_string(index.blobs.size()) + " blobs exceeds 1 GiB");
  uint64_t at = offset;
  DYNREP_RETURN_IF_ERROR(writeFrame(uint16_t(format::Kind::Index), payload.data(), payload.size()));
  // Everything before the trailer reaches the disk first, so a valid trailer after a power
  // loss never points at pages that were lost.
  if (options.sync && ::fdatasync(fd) != 0) return Status::ioError(path + ": fsync failed: " + io::errnoText(errno));
  uint8_t trailer[format::kTrailerSize];
  format::encodeTrailer(format::Trailer{at, payload.size()}, trailer);
  struct iovec iov = {trailer, sizeof trailer};
  DYNREP_RETURN_IF_ERROR(io::writeAll(fd, path, &iov, 1));
  if (options.sync && ::fdatasync(fd) != 0) return Status::ioError(path + ": fsync failed: " + io::errnoText(errno));
  return Status::ok();
}

Status StoreWriter::close() {
  Impl& d = *impl_;
  // In a forked child (a DataLoader worker, say) the store belongs to the parent: leave it be.
  DYNREP_RETURN_IF_ERROR(d.ownerOnly());
  std::lock_guard<std::mutex> put(d.putMu);
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (d.closed) return d.error;
    d.closed = true;
    d.stopping = true;
    d.queueChanged.notify_all();
  }
  d.worker.join();
  Status s = d.error;
  if (s.isOk()) s = d.finish();
  ::close(d.fd);  // also releases the flock
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.error.isOk()) d.error = s;
  return s;
}

}  // namespace dynrep

namespace dynrep {

std::string encodeStoreHeader(uint16_t major, uint16_t minor, const std::string& writerVersion,
                              uint64_t createdUnixSeconds) {
  format::Header h{major, minor, writerVersion, createdUnixSeconds};
  uint8_t out[format::kHeaderSize];
  format::encodeHeader(h, out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

}  // namespace dynrep
