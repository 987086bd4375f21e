// Typed records as Python classes with keyword-only constructors and read-only fields.
#include <optional>
#include <tuple>

#include <pybind11/stl.h>

#include "bindings.h"
#include "dynrep/capture/records.h"
#include "dynrep/store/limits.h"

namespace dynrep::python {

namespace {

// Unknown kinds survive a round trip through Python as raw payload bytes.
struct UnknownRecord {
  uint16_t kind;
  std::string payload;
};

// Every typed record class the bindings know: encode, decode and kind lookup all fold over
// capture's list (record_kinds.def), so a new record kind needs only its class registered below.
using TypedRecords = capture::AllRecords;

template <typename... R>
std::optional<EncodedRecord> encodeTyped(py::handle record, std::tuple<R...>) {
  std::optional<EncodedRecord> out;
  ((out || !py::isinstance<R>(record)
        ? void()
        : void(out = EncodedRecord{uint16_t(R::kKind), capture::encode(record.cast<const R&>())})),
   ...);
  return out;
}

template <typename R>
py::object decodeAs(std::string_view payload) {
  R record;
  check(capture::decode(payload, &record), Doing::Reading);
  return py::cast(std::move(record));
}

template <typename... R>
py::object decodeTyped(uint16_t kind, std::string_view payload, std::tuple<R...>) {
  py::object out;
  ((out || kind != uint16_t(R::kKind) ? void() : void(out = decodeAs<R>(payload))), ...);
  return out;
}

template <typename... R>
std::optional<uint16_t> kindOfClass(py::handle cls, std::tuple<R...>) {
  std::optional<uint16_t> out;
  ((out || !cls.is(py::type::of<R>()) ? void() : void(out = uint16_t(R::kKind))), ...);
  return out;
}

// "Manifest, Artifact, ..., " for messages that list the record classes.
template <typename... R>
std::string classNames(std::tuple<R...>) {
  std::string out;
  ((out += std::string(py::str(py::type::of<R>().attr("__name__"))) + ", "), ...);
  return out;
}

}  // namespace

EncodedRecord encodeRecord(py::handle record) {
  if (std::optional<EncodedRecord> e = encodeTyped(record, TypedRecords{})) return std::move(*e);
  if (py::isinstance<UnknownRecord>(record)) {
    const auto& u = record.cast<const UnknownRecord&>();
    return {u.kind, u.payload};
  }
  throw py::type_error("put() takes a record (" + classNames(TypedRecords{}) + "UnknownRecord), not " +
                       std::string(py::str(py::type::handle_of(record).attr("__name__"))));
}

py::object decodeRecord(uint16_t kind, std::string_view payload) {
  if (py::object typed = decodeTyped(kind, payload, TypedRecords{})) return typed;
  return py::cast(UnknownRecord{kind, std::string(payload)});
}

uint16_t recordKindOf(py::handle kind) {
  if (std::optional<uint16_t> k = kindOfClass(kind, TypedRecords{})) return *k;
  if (py::isinstance<py::int_>(kind)) {
    int k = kind.cast<int>();
    if (k >= kFirstRecordKind && k <= 0xFFFF) return uint16_t(k);
  }
  throw py::value_error("not a record kind: " + std::string(py::repr(kind)));
}

void registerRecords(py::module_& m) {
  py::class_<capture::Manifest>(m, "Manifest", "Who wrote a store, for which job, on which machine.")
      .def(py::init([](std::string tool, std::string createdAt, std::vector<std::string> commandLine,
                       std::map<std::string, std::string> environment) {
             return capture::Manifest{std::move(tool), std::move(createdAt), std::move(commandLine),
                                      std::move(environment)};
           }),
           py::kw_only(), py::arg("tool"), py::arg("created_at") = "",
           py::arg("command_line") = std::vector<std::string>{},
           py::arg("environment") = std::map<std::string, std::string>{})
      .def_readonly("tool", &capture::Manifest::tool)
      .def_readonly("created_at", &capture::Manifest::createdAt)
      .def_readonly("command_line", &capture::Manifest::commandLine)
      .def_readonly("environment", &capture::Manifest::environment)
      .def_property_readonly_static("kind", [](py::handle) { return int(capture::RecordKind::Manifest); })
      .def("__eq__",
           [](const capture::Manifest& a, const capture::Manifest& b) {
             return a.tool == b.tool && a.createdAt == b.createdAt && a.commandLine == b.commandLine &&
                    a.environment == b.environment;
           })
      .def("__repr__", [](const capture::Manifest& x) {
        return "Manifest(tool=" + std::string(py::repr(py::str(x.tool))) +
               ", created_at=" + std::string(py::repr(py::str(x.createdAt))) + ", ...)";
      });

  py::class_<capture::Artifact>(m, "Artifact", "A named file-like artifact whose bytes are a blob of the store.")
      .def(py::init([](std::string name, std::string mediaType, std::string blobKey, uint64_t size,
                       std::map<std::string, std::string> attributes) {
             return capture::Artifact{std::move(name), std::move(mediaType), std::move(blobKey), size,
                                      std::move(attributes)};
           }),
           py::kw_only(), py::arg("name"), py::arg("media_type"), py::arg("blob_key"), py::arg("size"),
           py::arg("attributes") = std::map<std::string, std::string>{})
      .def_readonly("name", &capture::Artifact::name)
      .def_readonly("media_type", &capture::Artifact::mediaType)
      .def_readonly("blob_key", &capture::Artifact::blobKey)
      .def_readonly("size", &capture::Artifact::size)
      .def_readonly("attributes", &capture::Artifact::attributes)
      .def_property_readonly_static("kind", [](py::handle) { return int(capture::RecordKind::Artifact); })
      .def("__eq__",
           [](const capture::Artifact& a, const capture::Artifact& b) {
             return a.name == b.name && a.mediaType == b.mediaType && a.blobKey == b.blobKey && a.size == b.size &&
                    a.attributes == b.attributes;
           })
      .def("__repr__", [](const capture::Artifact& x) {
        return "Artifact(name=" + std::string(py::repr(py::str(x.name))) +
               ", media_type=" + std::string(py::repr(py::str(x.mediaType))) + ", size=" + std::to_string(x.size) + ")";
      });

  using CompileTuple = std::tuple<int32_t, int32_t, int32_t>;
  auto toId = [](const CompileTuple& t) { return capture::CompileId{std::get<0>(t), std::get<1>(t), std::get<2>(t)}; };
  auto fromId = [](const capture::CompileId& c) { return CompileTuple{c.frame, c.compile, c.attempt}; };

  py::class_<capture::TraceEvent>(m, "TraceEvent", "One event of PyTorch's structured trace, as emitted.")
      .def(py::init([toId](std::string name, CompileTuple compileId, std::string metadataJson, std::string payloadKey,
                           uint64_t payloadSize, double time) {
             return capture::TraceEvent{std::move(name),       toId(compileId), std::move(metadataJson),
                                        std::move(payloadKey), payloadSize,     time};
           }),
           py::kw_only(), py::arg("name"), py::arg("compile_id") = CompileTuple{-1, -1, -1},
           py::arg("metadata_json") = "{}", py::arg("payload_key") = "", py::arg("payload_size") = 0,
           py::arg("time") = 0.0)
      .def_readonly("name", &capture::TraceEvent::name)
      .def_property_readonly("compile_id", [fromId](const capture::TraceEvent& t) { return fromId(t.compileId); })
      .def_readonly("metadata_json", &capture::TraceEvent::metadataJson)
      .def_readonly("payload_key", &capture::TraceEvent::payloadKey)
      .def_readonly("payload_size", &capture::TraceEvent::payloadSize)
      .def_readonly("time", &capture::TraceEvent::time)
      .def_property_readonly_static("kind", [](py::handle) { return int(capture::RecordKind::TraceEvent); })
      .def("__repr__", [](const capture::TraceEvent& t) {
        return "TraceEvent(name=" + std::string(py::repr(py::str(t.name))) + ", compile_id=" + t.compileId.str() + ")";
      });

  py::class_<capture::CodeObject>(m, "CodeObject", "A code object Dynamo compiled or produced.")
      .def(py::init([toId](CompileTuple compileId, std::string role, std::string name, std::string filename,
                           uint32_t firstLine, std::string fieldsJson, std::string bytecodeKey,
                           std::string disassemblyKey) {
             return capture::CodeObject{
                 toId(compileId), std::move(role),       std::move(name),        std::move(filename),
                 firstLine,       std::move(fieldsJson), std::move(bytecodeKey), std::move(disassemblyKey)};
           }),
           py::kw_only(), py::arg("compile_id"), py::arg("role"), py::arg("name"), py::arg("filename"),
           py::arg("first_line"), py::arg("fields_json"), py::arg("bytecode_key"), py::arg("disassembly_key"))
      .def_property_readonly("compile_id", [fromId](const capture::CodeObject& c) { return fromId(c.compileId); })
      .def_readonly("role", &capture::CodeObject::role)
      .def_readonly("name", &capture::CodeObject::name)
      .def_readonly("filename", &capture::CodeObject::filename)
      .def_readonly("first_line", &capture::CodeObject::firstLine)
      .def_readonly("fields_json", &capture::CodeObject::fieldsJson)
      .def_readonly("bytecode_key", &capture::CodeObject::bytecodeKey)
      .def_readonly("disassembly_key", &capture::CodeObject::disassemblyKey)
      .def_property_readonly_static("kind", [](py::handle) { return int(capture::RecordKind::CodeObject); })
      .def("__repr__", [](const capture::CodeObject& c) {
        return "CodeObject(role=" + c.role + ", name=" + c.name + ", compile_id=" + c.compileId.str() + ")";
      });

  py::class_<UnknownRecord>(m, "UnknownRecord", "A record of a kind this version does not know, kept as bytes.")
      .def(py::init([](int kind, py::bytes payload) { return UnknownRecord{uint16_t(kind), std::string(payload)}; }),
           py::kw_only(), py::arg("kind"), py::arg("payload"))
      .def_readonly("kind", &UnknownRecord::kind)
      .def_property_readonly("payload", [](const UnknownRecord& u) { return py::bytes(u.payload); })
      .def("__repr__", [](const UnknownRecord& u) {
        return "UnknownRecord(kind=" + std::to_string(u.kind) + ", " + std::to_string(u.payload.size()) + " bytes)";
      });
}

}  // namespace dynrep::python
