// dynamo_replay._core.Store: one class for writing (Store.create) and reading (Store.open).
// Every call that touches the file runs without the GIL.
#include <fcntl.h>
#include <unistd.h>

#include <pybind11/stl.h>

#include "bindings.h"
#include "dynrep/capture/records.h"
#include "dynrep/store/reader.h"
#include "dynrep/store/writer.h"

namespace dynrep::python {

namespace {

std::string fsPath(py::handle path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

// The OS file descriptor behind a Python file object, or -1 (BytesIO and friends raise).
int descriptorOf(py::handle file) {
  if (!py::hasattr(file, "fileno") || !py::hasattr(file, "tell")) return -1;
  try {
    return file.attr("fileno")().cast<int>();
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_OSError)) return -1;  // io.UnsupportedOperation is an OSError
    throw;
  }
}

BlobKey parseKey(const std::string& hex) {
  std::optional<BlobKey> key = BlobKey::fromHex(hex);
  if (!key) throw py::value_error("not a blob key (32 hex digits): " + hex);
  return *key;
}

struct StoreInfo {
  std::string path, writer, state, recoveryNote;
  std::pair<int, int> formatVersion;
  uint64_t created, fileBytes, recordCount = 0, blobCount, rawBytes, storedBytes;
  std::map<std::string, uint64_t> records;
  double ratio;
};

class PyBlobReader {
 public:
  PyBlobReader(std::shared_ptr<StoreReader> owner, std::unique_ptr<BlobStream> s)
      : owner_(std::move(owner)), stream_(std::move(s)) {}
  py::bytes read(int64_t size) {
    uint64_t left = stream_->size() - pos_;
    size_t n = size < 0 ? size_t(left) : size_t(std::min<uint64_t>(uint64_t(size), left));
    std::string buf(n, '\0');
    size_t got = readInto(buf.data(), n);
    buf.resize(got);
    return py::bytes(buf);
  }
  size_t readinto(py::buffer b) {
    py::buffer_info info = b.request(true);
    return readInto(static_cast<char*>(info.ptr), size_t(info.size * info.itemsize));
  }
  uint64_t size() const { return stream_->size(); }
  uint64_t tell() const { return pos_; }

 private:
  size_t readInto(char* out, size_t n) {
    Result<size_t> got = [&] {
      py::gil_scoped_release nogil;
      return stream_->read(out, n);
    }();
    check(got.status(), Doing::Reading);
    pos_ += *got;
    return *got;
  }
  std::shared_ptr<StoreReader> owner_;  // keeps the mapping alive while the stream is open
  std::unique_ptr<BlobStream> stream_;
  uint64_t pos_ = 0;
};

class PyStore {
 public:
  static std::unique_ptr<PyStore> create(py::handle path, int level, bool overwrite, size_t chunkSize) {
    WriterOptions options;
    options.level = level;
    options.overwrite = overwrite;
    options.chunkSize = chunkSize;
    auto s = std::make_unique<PyStore>();
    s->path_ = fsPath(path);
    Result<std::unique_ptr<StoreWriter>> w = [&] {
      py::gil_scoped_release nogil;
      return StoreWriter::create(s->path_, options);
    }();
    check(w.status(), Doing::Creating);
    s->writer_ = std::move(*w);
    return s;
  }

  static std::unique_ptr<PyStore> open(py::handle path) {
    auto s = std::make_unique<PyStore>();
    s->path_ = fsPath(path);
    s->reader_ = s->openReader(Doing::Opening);
    return s;
  }

  const std::string& path() const { return path_; }
  bool writable() const { return writer_ != nullptr; }

  std::string putBlob(py::handle data) {
    StoreWriter& w = requireWriter();
    Result<BlobKey> key = Status::ok();
    if (PyObject_CheckBuffer(data.ptr())) {
      py::buffer_info info = py::reinterpret_borrow<py::buffer>(data).request();
      std::string_view view(static_cast<const char*>(info.ptr), size_t(info.size * info.itemsize));
      py::gil_scoped_release nogil;
      key = w.putBlob(view);
    } else if (py::isinstance<py::str>(data) || py::hasattr(data, "__fspath__")) {
      std::string file = fsPath(data);
      int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, file.c_str());
        throw py::error_already_set();
      }
      {
        py::gil_scoped_release nogil;
        key = w.putBlobFromFile(fd, 0);
      }
      ::close(fd);
    } else if (int fd = descriptorOf(data); fd >= 0) {
      uint64_t offset = data.attr("tell")().cast<uint64_t>();
      py::gil_scoped_release nogil;
      key = w.putBlobFromFile(fd, offset);
    } else if (py::hasattr(data, "read")) {
      std::string all = data.attr("read")().cast<std::string>();  // a file-like without a descriptor
      py::gil_scoped_release nogil;
      key = w.putBlob(all);
    } else {
      throw py::type_error("put_blob() takes bytes, a buffer, a path or a binary file");
    }
    check(key.status(), Doing::Writing);
    dirty_ = true;
    return key->hex();
  }

  py::object getBlob(const std::string& hex, bool stream) {
    BlobKey key = parseKey(hex);
    std::shared_ptr<StoreReader> r = view();
    std::optional<BlobInfo> e = r->findBlob(key);
    if (!e) check(Status::notFound(path_ + ": no blob " + hex), Doing::Reading);
    if (stream) {
      Result<std::unique_ptr<BlobStream>> s = r->openBlob(key);
      check(s.status(), Doing::Reading);
      return py::cast(PyBlobReader(r, std::move(*s)));
    }
    // Decompress straight into the bytes object: no intermediate copy. The chunks are checked
    // first, so a damaged size cannot turn into a huge allocation.
    Result<CheckedBlob> checked = [&] {
      py::gil_scoped_release nogil;
      return r->checkBlob(key);
    }();
    check(checked.status(), Doing::Reading);
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(e->rawSize));
    if (!bytes) throw py::error_already_set();
    py::object owned = py::reinterpret_steal<py::object>(bytes);
    Status s;
    {
      py::gil_scoped_release nogil;
      s = r->readBlobInto(*checked, PyBytes_AS_STRING(bytes));
    }
    check(s, Doing::Reading);
    return owned;
  }

  bool hasBlob(const std::string& hex) {
    std::optional<BlobKey> key = BlobKey::fromHex(hex);
    return key && view()->findBlob(*key).has_value();
  }

  std::vector<std::string> blobKeys() {
    std::vector<std::string> keys;
    for (const BlobInfo& b : view()->blobs()) keys.push_back(b.key.hex());
    return keys;
  }

  void put(py::handle record) {
    StoreWriter& w = requireWriter();
    EncodedRecord e = encodeRecord(record);
    Status s;
    {
      py::gil_scoped_release nogil;
      s = w.putRecord(e.kind, std::move(e.payload));
    }
    check(s, Doing::Writing);
    dirty_ = true;
  }

  py::list records(py::object kind) {
    std::optional<uint16_t> want;
    if (!kind.is_none()) want = recordKindOf(kind);
    std::shared_ptr<StoreReader> r = view();
    py::list out;
    for (size_t i = 0; i < r->recordCount(); ++i) {
      uint16_t k = r->recordKind(i);
      if (want && k != *want) continue;
      Result<std::string_view> p = r->recordPayload(i);
      check(p.status(), Doing::Reading);
      out.append(decodeRecord(k, *p));
    }
    return out;
  }

  StoreInfo info() {
    std::shared_ptr<StoreReader> r = view();
    StoreStats st = r->stats();
    StoreInfo i;
    i.path = path_;
    i.writer = r->header().writerVersion;
    i.formatVersion = {r->header().major, r->header().minor};
    i.created = r->header().createdUnixSeconds;
    i.state = stateName(r->state());
    i.recoveryNote = r->recoveryNote();
    i.fileBytes = st.fileBytes;
    for (const auto& [kind, n] : st.recordsByKind) {
      i.records[capture::kindName(kind)] = n;
      i.recordCount += n;
    }
    i.blobCount = st.blobCount;
    i.rawBytes = st.rawBlobBytes;
    i.storedBytes = st.storedBlobBytes;
    i.ratio = st.storedBlobBytes ? double(st.rawBlobBytes) / double(st.storedBlobBytes) : 1.0;
    return i;
  }

  std::vector<std::string> verify() {  // Python sees each problem's message
    std::shared_ptr<StoreReader> r = view();
    std::vector<Status> problems;
    {
      py::gil_scoped_release nogil;
      problems = r->verify();
    }
    std::vector<std::string> messages;
    for (const Status& p : problems) messages.push_back(p.message());
    return messages;
  }

  void flush() {
    if (!writer_) return;
    Status s;
    {
      py::gil_scoped_release nogil;
      s = writer_->flush();
    }
    check(s, Doing::Writing);
  }

  void close() {
    if (writer_) {
      Status s;
      {
        py::gil_scoped_release nogil;
        s = writer_->close();
      }
      writer_.reset();
      reader_.reset();
      check(s, Doing::Writing);
    }
    reader_.reset();
    closed_ = true;
  }

 private:
  StoreWriter& requireWriter() {
    if (closed_) throw py::value_error(path_ + ": store is closed");
    if (!writer_)
      check(Status::invalidArgument(path_ + ": store was opened for reading; use Store.create to write"),
            Doing::Writing);
    return *writer_;
  }

  std::shared_ptr<StoreReader> openReader(Doing doing) {
    Result<std::unique_ptr<StoreReader>> r = [&] {
      py::gil_scoped_release nogil;
      return StoreReader::open(path_);
    }();
    check(r.status(), doing);
    return std::shared_ptr<StoreReader>(std::move(*r));
  }

  // The reader to answer queries with. A store being written is read through a scan of
  // what has been flushed so far, reopened only after new puts.
  std::shared_ptr<StoreReader> view() {
    if (closed_) throw py::value_error(path_ + ": store is closed");
    if (writer_ && (dirty_ || !reader_)) {
      flush();
      reader_ = openReader(Doing::Reading);
      dirty_ = false;
    }
    return reader_;
  }

  std::string path_;
  std::unique_ptr<StoreWriter> writer_;
  std::shared_ptr<StoreReader> reader_;
  bool dirty_ = false, closed_ = false;
};

}  // namespace

void registerStore(py::module_& m) {
  // For tests that need stores from other format versions: the header codec, nothing else.
  m.def("_encode_header", [](int major, int minor, const std::string& writer, uint64_t created) {
    return py::bytes(encodeStoreHeader(uint16_t(major), uint16_t(minor), writer, created));
  });

  py::class_<StoreInfo>(m, "StoreInfo", "What `replay-inspect info` shows, as values.")
      .def_readonly("path", &StoreInfo::path)
      .def_readonly("format_version", &StoreInfo::formatVersion)
      .def_readonly("writer", &StoreInfo::writer)
      .def_readonly("created", &StoreInfo::created)
      .def_readonly("state", &StoreInfo::state)
      .def_readonly("recovery_note", &StoreInfo::recoveryNote)
      .def_readonly("file_bytes", &StoreInfo::fileBytes)
      .def_readonly("record_count", &StoreInfo::recordCount)
      .def_readonly("records", &StoreInfo::records)
      .def_readonly("blob_count", &StoreInfo::blobCount)
      .def_readonly("raw_bytes", &StoreInfo::rawBytes)
      .def_readonly("stored_bytes", &StoreInfo::storedBytes)
      .def_readonly("ratio", &StoreInfo::ratio)
      .def("__repr__", [](const StoreInfo& i) {
        return "StoreInfo(path=" + i.path + ", state=" + i.state + ", records=" + std::to_string(i.recordCount) +
               ", blobs=" + std::to_string(i.blobCount) + ")";
      });

  py::class_<PyBlobReader>(m, "BlobReader", "A blob read as a stream; its hash is checked at the end.")
      .def("read", &PyBlobReader::read, py::arg("size") = -1)
      .def("readinto", &PyBlobReader::readinto, py::arg("buffer"))
      .def("readable", [](const PyBlobReader&) { return true; })
      .def("tell", &PyBlobReader::tell)
      .def_property_readonly("size", &PyBlobReader::size)
      .def(
          "__enter__", [](PyBlobReader& r) -> PyBlobReader& { return r; }, py::return_value_policy::reference)
      .def("__exit__", [](PyBlobReader&, py::args) { return false; });

  py::class_<PyStore>(m, "Store", "A dynamo-replay store file: create() to write, open() to read.")
      .def_static("create", &PyStore::create, py::arg("path"), py::kw_only(), py::arg("level") = 3,
                  py::arg("overwrite") = false, py::arg("chunk_size") = kDefaultChunkSize)
      .def_static("open", &PyStore::open, py::arg("path"))
      .def_property_readonly("path", &PyStore::path)
      .def_property_readonly("writable", &PyStore::writable)
      .def("put_blob", &PyStore::putBlob, py::arg("data"))
      .def("get_blob", &PyStore::getBlob, py::arg("key"), py::kw_only(), py::arg("stream") = false)
      .def("has_blob", &PyStore::hasBlob, py::arg("key"))
      .def("__contains__", &PyStore::hasBlob)
      .def("blob_keys", &PyStore::blobKeys)
      .def("put", &PyStore::put, py::arg("record"))
      .def("records", &PyStore::records, py::arg("kind") = py::none())
      .def("info", &PyStore::info)
      .def("verify", &PyStore::verify)
      .def("flush", &PyStore::flush)
      .def("close", &PyStore::close)
      .def(
          "__enter__", [](PyStore& s) -> PyStore& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](PyStore& s, py::args) {
        s.close();
        return false;
      });
}

}  // namespace dynrep::python
