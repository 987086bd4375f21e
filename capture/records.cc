// Encoding, decoding and one-line descriptions of typed records.
#include "dynrep/capture/records.h"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>

#include "bounded_cereal.h"

namespace dynrep::capture {

std::string kindName(uint16_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::Manifest: return "manifest";
    case RecordKind::Artifact: return "artifact";
    case RecordKind::TraceEvent: return "trace";
    case RecordKind::CodeObject: return "code";
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

template std::string encode(const Manifest&);
template std::string encode(const Artifact&);
template std::string encode(const TraceEvent&);
template std::string encode(const CodeObject&);
template Status decode(std::string_view, Manifest*);
template Status decode(std::string_view, Artifact*);
template Status decode(std::string_view, TraceEvent*);
template Status decode(std::string_view, CodeObject*);

std::string CompileId::str() const {
  if (!valid()) return "-";
  std::string s = std::to_string(frame) + "/" + std::to_string(compile);
  if (attempt > 0) s += "_" + std::to_string(attempt);
  return s;
}

std::string describe(uint16_t kind, std::string_view payload) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::Manifest: {
      Manifest m;
      if (!decode(payload, &m).isOk()) return "(does not decode)";
      return m.tool + ", created " + m.createdAt;
    }
    case RecordKind::Artifact: {
      Artifact a;
      if (!decode(payload, &a).isOk()) return "(does not decode)";
      return a.name + " (" + a.mediaType + ", " + std::to_string(a.size) + " bytes, blob " + a.blobKey.substr(0, 12) + ")";
    }
    case RecordKind::TraceEvent: {
      TraceEvent t;
      if (!decode(payload, &t).isOk()) return "(does not decode)";
      return t.name + " " + t.compileId.str() + (t.payloadKey.empty() ? "" : " (" + std::to_string(t.payloadSize) + " byte payload)");
    }
    case RecordKind::CodeObject: {
      CodeObject c;
      if (!decode(payload, &c).isOk()) return "(does not decode)";
      return c.role + " code of " + c.name + " " + c.compileId.str() + " (" + c.filename + ":" + std::to_string(c.firstLine) + ")";
    }
  }
  return std::to_string(payload.size()) + " bytes of a kind this reader does not know";
}

}  // namespace dynrep::capture
