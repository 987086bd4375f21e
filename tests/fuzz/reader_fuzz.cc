// Fuzz target for StoreReader: opens each input as a store file and reads everything in it.
// Any Status is fine; a crash, hang, sanitizer report or escaping exception is a bug.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dynrep/capture/records.h"
#include "dynrep/store/reader.h"

namespace {

// The reader only opens paths (it mmaps), so every input goes through one file per process.
class InputFile {
 public:
  InputFile() {
    const char* tmp = std::getenv("TMPDIR");
    // The pid in the name tells a crashed run's leftover directory from a live one.
    std::string templ =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/dynrep-fuzz-" + std::to_string(::getpid()) + "-XXXXXX";
    if (!::mkdtemp(templ.data())) {
      std::perror("reader_fuzz: mkdtemp");
      std::abort();
    }
    dir = templ;
    path = dir + "/input.dynrep";
  }
  ~InputFile() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }

  void write(const uint8_t* data, size_t size) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      std::perror("reader_fuzz: open input file");
      std::abort();
    }
    while (size > 0) {
      ssize_t n = ::write(fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        std::perror("reader_fuzz: write input file");
        std::abort();
      }
      data += n;
      size -= size_t(n);
    }
    ::close(fd);
  }

  std::string dir, path;
};

// Invariants a successful read promises; a violation is a reader bug, so fail loudly.
void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "reader_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void readRecords(const dynrep::StoreReader& reader) {
  for (size_t i = 0; i < reader.recordCount(); ++i) {
    dynrep::Result<std::string_view> payload = reader.recordPayload(i);
    if (!payload.isOk()) continue;
    check(payload->size() == reader.record(i).payloadSize, "record payload size differs from the index");
    std::string line = dynrep::capture::describe(reader.recordKind(i), *payload);
    (void)line;
  }
  check(!reader.recordPayload(reader.recordCount()).isOk(), "record past the end reads ok");
}

// Odd read sizes make BlobStream cross chunk boundaries in the middle of a read.
constexpr size_t kReadSizes[] = {1, 7, 64, 509, 4096};

void readBlobs(const dynrep::StoreReader& reader) {
  for (const dynrep::BlobInfo& entry : reader.blobs()) {
    check(reader.findBlob(entry.key).has_value(), "an indexed blob is not found");
    dynrep::Result<std::string> whole = reader.readBlob(entry.key);
    if (whole.isOk()) {
      check(whole->size() == entry.rawSize, "readBlob size differs from the index");
      check(dynrep::BlobKey::of(*whole) == entry.key, "readBlob bytes do not hash to their key");
    }

    dynrep::Result<std::unique_ptr<dynrep::BlobStream>> stream = reader.openBlob(entry.key);
    if (!stream.isOk()) continue;
    std::string streamed;
    char buf[4096];
    bool failed = false;
    for (size_t step = 0;; ++step) {
      size_t want = kReadSizes[step % (sizeof kReadSizes / sizeof kReadSizes[0])];
      dynrep::Result<size_t> n = (*stream)->read(buf, want);
      if (!n.isOk()) {
        failed = true;
        break;
      }
      check(*n <= want, "BlobStream::read returned more than asked");
      if (*n == 0) break;
      streamed.append(buf, *n);
    }
    // Both paths passed the content hash, so they must agree byte for byte.
    if (!failed && whole.isOk()) check(streamed == *whole, "streamed blob differs from readBlob");
  }
  dynrep::BlobKey absent;
  absent.bytes.fill(0x5a);
  if (!reader.findBlob(absent)) check(!reader.readBlob(absent).isOk(), "an absent blob reads ok");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static InputFile file;
  file.write(data, size);
  dynrep::Result<std::unique_ptr<dynrep::StoreReader>> opened = dynrep::StoreReader::open(file.path);
  if (!opened.isOk()) return 0;
  const dynrep::StoreReader& reader = **opened;
  dynrep::StoreStats stats = reader.stats();
  check(stats.fileBytes == size, "stats().fileBytes differs from the file size");
  (void)dynrep::stateName(reader.state());
  readRecords(reader);
  readBlobs(reader);
  std::vector<dynrep::Status> problems = reader.verify();
  for (const dynrep::Status& p : problems)
    check(!p.isOk() && !p.message().empty(), "verify() gave an ok or empty problem");
  return 0;
}
