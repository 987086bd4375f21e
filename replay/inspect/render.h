// Helpers every replay-inspect report uses: colour, warnings on a Report, opening a store,
// writing a file, one-line table cells. Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the Report or stream it is given.
#pragma once

#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/inspect/options.h"
#include "dynrep/replay/query/job.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

inline std::string paint(const InspectOptions& o, const char* ansi, const std::string& text) {
  return o.color ? fmt::format("\033[{}m{}\033[0m", ansi, text) : text;
}

// A warning on the report when the store was read by a scan (in progress or recovered), not its index.
inline void noteUnfinished(const StoreReader& r, Report& report) {
  if (r.state() == StoreState::Finished) return;
  report.notes.push_back(
      {ReportNote::Level::Warning, fmt::format("{}: {} store: {}", r.path(), stateName(r.state()), r.recoveryNote())});
}

// The store with its job (its status names the path and what is wrong); warns on the report
// when it was read by a scan.
inline Result<OpenedJob> openJobNoting(const std::string& path, Report& report) {
  Result<OpenedJob> opened = openJob(path);
  if (opened.isOk()) noteUnfinished(*opened->reader, report);
  return opened;
}

// Writes `text` to `file` (replacing it), or says why it cannot.
inline Status writeFile(const std::string& file, const std::string& text) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return f ? Status::ok() : Status::ioError(file + ": cannot write the file");
}

// "train.py" from "/home/me/train.py": table cells name files by their last component.
inline std::string baseName(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// The first line of `s` with runs of spaces folded, for one-line table cells.
inline std::string firstLine(const std::string& s) {
  std::string out;
  for (char ch : s.substr(0, s.find('\n'))) {
    if (ch == ' ' && !out.empty() && out.back() == ' ') continue;
    out += ch;
  }
  return out;
}

// "(unreadable metadata: artifact x2, compilation_metrics)": the events the report could not read.
inline std::string unreadableText(const Compile& c) {
  std::string names;
  for (const auto& [name, n] : c.unreadable)
    names += fmt::format("{}{}{}", names.empty() ? "" : ", ", name, n > 1 ? fmt::format(" x{}", n) : "");
  return "(unreadable metadata: " + names + ")";
}

}  // namespace dynrep::replay
