// Encoding, decoding and one-line descriptions of typed records.
#include "dynrep/capture/records.h"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>

#include "bounded_cereal.h"

namespace dynrep::capture {

std::string kindName(uint16_t kind) {
  switch (static_cast<RecordKind>(kind)) {
#define DYNREP_RECORD_KIND(Struct, number, name, version) \
  case RecordKind::Struct: return name;
#include "dynrep/capture/record_kinds.def"
  }
  return "kind " + std::to_string(kind);
}

template <typename T>
std::string encode(const T& record) {
  std::ostringstream out;
  {
    // Little-endian on every host (cereal's default is the host's order).
    cereal::PortableBinaryOutputArchive ar(out, cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    ar(record);
  }
  return std::move(out).str();
}

template <typename T>
Status decode(std::string_view payload, T* record) {
  // cereal reports malformed input by throwing; the C++ API does not, so catch it here.
  try {
    detail::decodeBudget = payload.size();
    std::istringstream in{std::string(payload)};
    cereal::PortableBinaryInputArchive ar(in);
    ar(*record);
  } catch (const std::exception& e) {
    return Status::corruption(kindName(uint16_t(T::kKind)) + " record does not decode: " + e.what());
  }
  return Status::ok();
}

#define DYNREP_RECORD_KIND(Struct, number, name, version) \
  template std::string encode(const Struct&);             \
  template Status decode(std::string_view, Struct*);
#include "dynrep/capture/record_kinds.def"

std::string CompileId::str() const {
  if (!valid()) return "-";
  std::string s = std::to_string(frame) + "/" + std::to_string(compile);
  if (attempt > 0) s += "_" + std::to_string(attempt);
  return s;
}

namespace {

// The part of describe() after the kind: one overload per record struct, so a kind added to
// record_kinds.def without one does not compile.
std::string summary(const Manifest& m) { return m.tool + ", created " + m.createdAt; }

std::string summary(const Artifact& a) {
  return a.name + " (" + a.mediaType + ", " + std::to_string(a.size) + " bytes, blob " + a.blobKey.substr(0, 12) + ")";
}

std::string summary(const TraceEvent& t) {
  return t.name + " " + t.compileId.str() +
         (t.payloadKey.empty() ? "" : " (" + std::to_string(t.payloadSize) + " byte payload)");
}

std::string summary(const CodeObject& c) {
  return c.role + " code of " + c.name + " " + c.compileId.str() + " (" + c.filename + ":" +
         std::to_string(c.firstLine) + ")";
}

template <typename Record>
std::string describeAs(std::string_view payload) {
  Record r;
  if (!decode(payload, &r).isOk()) return "(does not decode)";
  return summary(r);
}

}  // namespace

std::string describe(uint16_t kind, std::string_view payload) {
  switch (static_cast<RecordKind>(kind)) {
#define DYNREP_RECORD_KIND(Struct, number, name, version) \
  case RecordKind::Struct: return describeAs<Struct>(payload);
#include "dynrep/capture/record_kinds.def"
  }
  return std::to_string(payload.size()) + " bytes of a kind this reader does not know";
}

}  // namespace dynrep::capture
