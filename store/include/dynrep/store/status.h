// Status: the error value every store, capture and replay function returns.
// Modelled on leveldb's Status: cheap when ok, carries a code and a message otherwise.
// Thread-safety: a Status is a value; distinct objects may be used from distinct threads.
//
// The error rule at library boundaries: a function declared in a public header
// (*/include/dynrep/...) returns a Status or a Result<T> and never throws. A library may throw
// inside its own .cc files, and catches at its public entry points, turning the exception into
// a Status that carries its message. Binding code (python/src) and tools/ turn a failed Status
// into a Python exception or an exit code.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace dynrep {

class Status {
 public:
  enum class Code { Ok, NotFound, Corruption, NotSupported, InvalidArgument, IOError, Locked, AlreadyExists };

  Status() = default;
  static Status ok() { return Status(); }
  static Status notFound(std::string msg) { return Status(Code::NotFound, std::move(msg)); }
  static Status corruption(std::string msg) { return Status(Code::Corruption, std::move(msg)); }
  static Status notSupported(std::string msg) { return Status(Code::NotSupported, std::move(msg)); }
  static Status invalidArgument(std::string msg) { return Status(Code::InvalidArgument, std::move(msg)); }
  static Status ioError(std::string msg) { return Status(Code::IOError, std::move(msg)); }
  static Status locked(std::string msg) { return Status(Code::Locked, std::move(msg)); }
  static Status alreadyExists(std::string msg) { return Status(Code::AlreadyExists, std::move(msg)); }

  bool isOk() const { return code_ == Code::Ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corruption: job.dynrep: record at offset 64: checksum mismatch"
  std::string toString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::Ok;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  bool isOk() const { return status_.isOk(); }
  const Status& status() const { return status_; }
  // REQUIRES: isOk()
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace dynrep

// Early return of a failed Status from a function that returns Status or Result<T>.
#define DYNREP_RETURN_IF_ERROR(expr)                   \
  do {                                                 \
    ::dynrep::Status dynrep_status_ = (expr);          \
    if (!dynrep_status_.isOk()) return dynrep_status_; \
  } while (0)
