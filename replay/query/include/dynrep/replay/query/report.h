// Report: what an offline command found, for a tool to print. The inspect commands and the MLIR
// commands both return Result<Report> (text for stdout, lines for stderr, whether the data had a
// problem); the tool that called them prints it and chooses the exit code. It lives here, below
// both, so neither depends on the other.
// Thread-safety: a value.
#pragma once

#include <string>
#include <vector>

namespace dynrep::replay {

// A line for stderr beside the report: a warning (an unfinished store, a record a command
// skipped) or a problem it found.
struct ReportNote {
  enum class Level { Note, Warning, Error };
  Level level = Level::Warning;
  std::string text;
};

struct Report {
  std::string output;             // the report (text, JSON or a module) for stdout
  std::vector<ReportNote> notes;  // for stderr, in order
  bool problemFound = false;      // a problem in the data (verify, an unreadable record) or, for diff, a difference
};

}  // namespace dynrep::replay
