// Private: thin wrappers over POSIX I/O that retry on EINTR and short counts and
// return Status with the path and offset in the message.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>

#include "dynrep/store/status.h"

namespace dynrep::io {

std::string errnoText(int err);
// Writes every byte of the iovecs at the file's current position.
Status writeAll(int fd, const std::string& path, struct iovec* iov, int iovcnt);
// Reads exactly `size` bytes at `offset`; a short file is an IOError naming both.
Status preadAll(int fd, const std::string& path, uint64_t offset, void* buf, size_t size);

}  // namespace dynrep::io
