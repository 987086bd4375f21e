// Status::toString: the one place that spells each error code for people.
#include "dynrep/store/status.h"

namespace dynrep {

std::string Status::toString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::Ok: return "ok";
    case Code::NotFound: name = "not found"; break;
    case Code::Corruption: name = "corruption"; break;
    case Code::NotSupported: name = "not supported"; break;
    case Code::InvalidArgument: name = "invalid argument"; break;
    case Code::IOError: name = "io error"; break;
    case Code::Locked: name = "locked"; break;
    case Code::AlreadyExists: name = "already exists"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace dynrep
