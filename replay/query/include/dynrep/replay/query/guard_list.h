// A compile's guard list (docs/capture-schema.md, the guard-list event), as types: read and
// checked once by readGuardList; diff, the HTML report and `show` take the typed list.
// Thread-safety: a GuardListEntry is a value; readGuardList only reads the job.
#pragma once

#include <string>
#include <vector>

#include "dynrep/replay/query/job.h"
#include "dynrep/store/status.h"

namespace dynrep::replay {

// One guard as capture wrote it from PyTorch's guard tree (capture/guards.py).
struct GuardListEntry {
  std::string kind;      // TENSOR_MATCH, EQUALS_MATCH, ... ("?" when the record has none)
  std::string source;    // what it checks: L['x'], G['scale'] ("" when the check names it only in code)
  std::string code;      // the check as PyTorch prints it
  std::string userCode;  // the user's source line that made the guard, when PyTorch gave one
  std::string file;      // where the guard was added, when PyTorch gave it
  int line = 0;
  std::string function;
  std::string note;  // a trailing comment that is no location
};

// The compile's guard list. NotFound when capture recorded none for it; Corruption, naming the
// compile, when its blob cannot be read or is no list. An entry's missing or mistyped field
// reads as its default: one odd guard never hides the others.
// REQUIRES: `c` is one of job.compiles().
Result<std::vector<GuardListEntry>> readGuardList(const Job& job, const Compile& c);

}  // namespace dynrep::replay
