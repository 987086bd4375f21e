// Helpers every replay-inspect report uses: colour, error and warning lines, opening a store,
// one-line table cells. Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "dynrep/replay/inspect/options.h"
#include "dynrep/replay/query/job.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

inline std::string paint(const InspectOptions& o, const char* ansi, const std::string& text) {
  return o.color ? fmt::format("\033[{}m{}\033[0m", ansi, text) : text;
}

// Prints "error: MESSAGE" on err and returns exit code 1 (a problem in the data).
inline int reportError(const InspectOptions& o, std::ostream& err, const std::string& message) {
  fmt::print(err, "{}: {}\n", paint(o, "31", "error"), message);
  return 1;
}

// Opens the store or reports why not; the message already names the path.
inline std::unique_ptr<StoreReader> openOrReport(const std::string& path, const InspectOptions& o, std::ostream& err) {
  Result<std::unique_ptr<StoreReader>> r = StoreReader::open(path);
  if (r.isOk()) return std::move(*r);
  reportError(o, err, r.status().message());
  return nullptr;
}

// A warning on err when the store was read by a scan (in progress or recovered), not its index.
inline void noteUnfinished(const StoreReader& r, const InspectOptions& o, std::ostream& err) {
  if (r.state() == StoreState::Finished) return;
  fmt::print(err, "{}: {}: {} store: {}\n", paint(o, "33", "warning"), r.path(), stateName(r.state()),
             r.recoveryNote());
}

// The store with its job, or nullopt after reporting why not; warns when it was read by a scan.
inline std::optional<OpenedJob> openJobOrReport(const std::string& path, const InspectOptions& o, std::ostream& err) {
  Result<OpenedJob> opened = openJob(path);
  if (!opened.isOk()) {
    reportError(o, err, opened.status().message());
    return std::nullopt;
  }
  noteUnfinished(*opened->reader, o, err);
  return std::move(*opened);
}

// Writes `text` to `file` (replacing it); false after reporting when it cannot.
inline bool writeFileOrReport(const std::string& file, const std::string& text, const InspectOptions& o,
                              std::ostream& err) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) reportError(o, err, file + ": cannot write the file");
  return bool(f);
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
