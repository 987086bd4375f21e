// Typed records as Python classes with keyword-only constructors and read-only fields.
#include <pybind11/stl.h>

#include "bindings.h"
#include "dynrep/capture/records.h"
#include "dynrep/store/format.h"

namespace dynrep::python {

namespace {

// Unknown kinds survive a round trip through Python as raw payload bytes.
struct UnknownRecord {
  uint16_t kind;
  std::string payload;
};

template <typename T>
py::object decodeAs(std::string_view payload) {
  T record;
  check(capture::decode(payload, &record), Doing::Reading);
  return py::cast(std::move(record));
}

}  // namespace

EncodedRecord encodeRecord(py::handle record) {
  if (py::isinstance<capture::Manifest>(record))
    return {uint16_t(capture::RecordKind::Manifest), capture::encode(record.cast<const capture::Manifest&>())};
  if (py::isinstance<capture::Artifact>(record))
    return {uint16_t(capture::RecordKind::Artifact), capture::encode(record.cast<const capture::Artifact&>())};
  if (py::isinstance<UnknownRecord>(record)) {
    const auto& u = record.cast<const UnknownRecord&>();
    return {u.kind, u.payload};
  }
  throw py::type_error("put() takes a record (Manifest, Artifact), not " +
                       std::string(py::str(py::type::handle_of(record).attr("__name__"))));
}

py::object decodeRecord(uint16_t kind, std::string_view payload) {
  switch (static_cast<capture::RecordKind>(kind)) {
    case capture::RecordKind::Manifest: return decodeAs<capture::Manifest>(payload);
    case capture::RecordKind::Artifact: return decodeAs<capture::Artifact>(payload);
  }
  return py::cast(UnknownRecord{kind, std::string(payload)});
}

uint16_t recordKindOf(py::handle kind) {
  py::module_ core = py::module_::import("dynamo_replay._core");
  if (kind.is(core.attr("Manifest"))) return uint16_t(capture::RecordKind::Manifest);
  if (kind.is(core.attr("Artifact"))) return uint16_t(capture::RecordKind::Artifact);
  if (py::isinstance<py::int_>(kind)) {
    int k = kind.cast<int>();
    if (k >= format::kFirstTypedKind && k <= 0xFFFF) return uint16_t(k);
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
           py::kw_only(), py::arg("tool"), py::arg("created_at") = "", py::arg("command_line") = std::vector<std::string>{},
           py::arg("environment") = std::map<std::string, std::string>{})
      .def_readonly("tool", &capture::Manifest::tool)
      .def_readonly("created_at", &capture::Manifest::createdAt)
      .def_readonly("command_line", &capture::Manifest::commandLine)
      .def_readonly("environment", &capture::Manifest::environment)
      .def_property_readonly_static("kind", [](py::handle) { return int(capture::RecordKind::Manifest); })
      .def("__eq__", [](const capture::Manifest& a, const capture::Manifest& b) {
        return a.tool == b.tool && a.createdAt == b.createdAt && a.commandLine == b.commandLine &&
               a.environment == b.environment;
      })
      .def("__repr__", [](const capture::Manifest& x) {
        return "Manifest(tool=" + std::string(py::repr(py::str(x.tool))) + ", created_at=" +
               std::string(py::repr(py::str(x.createdAt))) + ", ...)";
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
      .def("__eq__", [](const capture::Artifact& a, const capture::Artifact& b) {
        return a.name == b.name && a.mediaType == b.mediaType && a.blobKey == b.blobKey && a.size == b.size &&
               a.attributes == b.attributes;
      })
      .def("__repr__", [](const capture::Artifact& x) {
        return "Artifact(name=" + std::string(py::repr(py::str(x.name))) + ", media_type=" +
               std::string(py::repr(py::str(x.mediaType))) + ", size=" + std::to_string(x.size) + ")";
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
