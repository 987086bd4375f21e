// The record schema: what capture writes into a store, as plain structs with versioned cereal
// serialize functions (portable binary archive). record_kinds.def lists the kinds, events.h
// capture's event names; the capture session that writes them is Python's capture/.
// Thread-safety: values and pure functions only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <cereal/cereal.hpp>

#include "dynrep/store/status.h"

namespace dynrep::capture {

// docs/capture-schema.md §8 Typed records.
enum class RecordKind : uint16_t {
#define DYNREP_RECORD_KIND(Struct, number, name, version) Struct = number,
#include "dynrep/capture/record_kinds.def"
};

// Dynamo's compile id: frame, compile of that frame, restart attempt. -1 where an event
// belongs to no compile (interned strings, say).
struct CompileId {
  int32_t frame = -1;
  int32_t compile = -1;
  int32_t attempt = -1;

  bool valid() const { return frame >= 0 && compile >= 0; }
  std::string str() const;  // "0/1", or "0/1_2" for attempt 2, as PyTorch prints it
  bool operator==(const CompileId& o) const { return frame == o.frame && compile == o.compile && attempt == o.attempt; }
  bool operator<(const CompileId& o) const {
    return std::tie(frame, compile, attempt) < std::tie(o.frame, o.compile, o.attempt);
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(frame, compile, attempt);
  }
};

// One per store: who wrote it, for which job, on which machine.
struct Manifest {
  static constexpr RecordKind kKind = RecordKind::Manifest;
  std::string tool;       // "dynamo-replay 0.1.0"
  std::string createdAt;  // ISO 8601, UTC
  std::vector<std::string> commandLine;
  std::map<std::string, std::string> environment;  // fingerprint entries, e.g. "torch.version"

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(tool, createdAt, commandLine, environment);
  }
};

// A named file-like artifact whose bytes live in a blob (generated code, a kernel library,
// PyTorch cache bytes).
struct Artifact {
  static constexpr RecordKind kKind = RecordKind::Artifact;
  std::string name;       // "inductor/kernel_3f2a.cpp"
  std::string mediaType;  // "text/x-c++src"
  std::string blobKey;    // hex XXH3-128 of the bytes
  uint64_t size = 0;      // uncompressed bytes
  std::map<std::string, std::string> attributes;

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(name, mediaType, blobKey, size, attributes);
  }
};

// One event of PyTorch's structured trace (the torch.__trace logger), kept as emitted: the
// event name, its metadata as JSON and its payload (graph code, guard tree, ...) as a blob.
// replay/ interprets known events; unknown ones survive untouched for later readers.
struct TraceEvent {
  static constexpr RecordKind kKind = RecordKind::TraceEvent;
  std::string name;  // "dynamo_output_graph", "create_unbacked_symbol", ...
  CompileId compileId;
  std::string metadataJson;  // the event's metadata dict
  std::string payloadKey;    // blob key of the payload, empty when there is none
  uint64_t payloadSize = 0;
  double time = 0;  // seconds since the Unix epoch, when capture saw it

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(name, compileId, metadataJson, payloadKey, payloadSize, time);
  }
};

// A code object Dynamo compiled or produced: the original frame's code, the transformed
// code, or a resume function. Fields are co_* names to readable values (JSON).
struct CodeObject {
  static constexpr RecordKind kKind = RecordKind::CodeObject;
  CompileId compileId;
  std::string role;  // "original" or "transformed"
  std::string name;  // co_qualname
  std::string filename;
  uint32_t firstLine = 0;
  std::string fieldsJson;      // co_argcount, co_varnames, co_consts (repr), co_flags, ...
  std::string bytecodeKey;     // blob: co_code
  std::string disassemblyKey;  // blob: dis output

  template <class Archive>
  void serialize(Archive& ar, std::uint32_t version) {
    ar(compileId, role, name, filename, firstLine, fieldsJson, bytecodeKey, disassemblyKey);
  }
};

// Every record struct in kind order, as a type list (the tuple only carries the types): code
// that handles each kind folds over it, so a kind added to record_kinds.def reaches it.
using AllRecords = decltype(std::tuple_cat(std::tuple<>()
#define DYNREP_RECORD_KIND(Struct, number, name, version) , std::tuple<Struct>()
#include "dynrep/capture/record_kinds.def"
                                               ));

// "manifest", "artifact", or "kind N" for a kind this build does not know.
std::string kindName(uint16_t kind);

template <typename T>
std::string encode(const T& record);
template <typename T>
Status decode(std::string_view payload, T* record);

// One readable line for `replay-inspect ls`; unknown kinds describe their size.
std::string describe(uint16_t kind, std::string_view payload);

}  // namespace dynrep::capture

#define DYNREP_RECORD_KIND(Struct, number, name, version) CEREAL_CLASS_VERSION(dynrep::capture::Struct, version);
#include "dynrep/capture/record_kinds.def"
