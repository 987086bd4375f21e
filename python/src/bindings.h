// Private to the extension: the registration functions module.cc calls, and the one place
// that turns a Status into a Python exception.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "dynrep/store/status.h"

namespace dynrep::python {

namespace py = pybind11;

void registerStore(py::module_& m);
void registerRecords(py::module_& m);

// What the failing call was doing, so a NotFound becomes FileNotFoundError or MissingKeyError.
enum class Doing { Creating, Opening, Reading, Writing };
// Raises the Python exception for a failed status (dynamo_replay.errors). REQUIRES: !s.isOk()
[[noreturn]] void raise(const Status& s, Doing doing);
// Typed records <-> Python objects (record_bindings.cc).
struct EncodedRecord {
  uint16_t kind;
  std::string payload;
};
EncodedRecord encodeRecord(py::handle record);
py::object decodeRecord(uint16_t kind, std::string_view payload);
// The record kind a Python class (Manifest, Artifact) or int names.
uint16_t recordKindOf(py::handle kind);

inline void check(const Status& s, Doing doing) {
  if (!s.isOk()) raise(s, doing);
}

}  // namespace dynrep::python
