// Status -> Python exception, using the classes defined in dynamo_replay/errors.py.
#include "bindings.h"

namespace dynrep::python {

void raise(const Status& s, Doing doing) {
  py::module_ errors = py::module_::import("dynamo_replay.errors");
  const char* cls = "StoreError";
  switch (s.code()) {
    case Status::Code::Ok: throw std::logic_error("raise() called with an ok status");
    case Status::Code::Corruption: cls = "CorruptStoreError"; break;
    case Status::Code::NotSupported: cls = "UnsupportedVersionError"; break;
    case Status::Code::Locked: cls = "StoreLockedError"; break;
    case Status::Code::AlreadyExists: cls = "StoreExistsError"; break;
    case Status::Code::NotFound:
      cls = doing == Doing::Opening || doing == Doing::Creating ? "StoreNotFoundError" : "MissingKeyError";
      break;
    case Status::Code::InvalidArgument: cls = doing == Doing::Opening ? "NotAStoreError" : "StoreUsageError"; break;
    case Status::Code::IOError: cls = "StoreIOError"; break;
  }
  PyErr_SetString(errors.attr(cls).ptr(), s.message().c_str());
  throw py::error_already_set();
}

}  // namespace dynrep::python
