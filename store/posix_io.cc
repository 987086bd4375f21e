// POSIX I/O helpers used by both the reader and the writer.
#include "posix_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dynrep::io {

std::string errnoText(int err) { return std::strerror(err); }

Status writeAll(int fd, const std::string& path, struct iovec* iov, int iovcnt) {
  while (iovcnt > 0) {
    ssize_t n = ::writev(fd, iov, iovcnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::ioError(path + ": write failed: " + errnoText(errno));
    }
    // Advance past what was written; a short write leaves the rest for the next call.
    while (iovcnt > 0 && size_t(n) >= iov->iov_len) {
      n -= ssize_t(iov->iov_len);
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + n;
      iov->iov_len -= size_t(n);
    }
  }
  return Status::ok();
}

Status preadAll(int fd, const std::string& path, uint64_t offset, void* buf, size_t size) {
  auto* p = static_cast<char*>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, off_t(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::ioError(path + ": read at offset " + std::to_string(offset) + " failed: " + errnoText(errno));
    }
    if (n == 0)
      return Status::ioError(path + ": file ended at offset " + std::to_string(offset) +
                             " while reading (it changed while being stored?)");
    p += n;
    offset += uint64_t(n);
    size -= size_t(n);
  }
  return Status::ok();
}

}  // namespace dynrep::io
