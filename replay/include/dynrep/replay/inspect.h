// The subcommands of replay-inspect as library calls: each reads a store, writes its report
// to `out` and problems to `err`, and returns the process exit code (0 sound, 1 a problem
// found in the data). tools/replay_inspect.cc only parses arguments and calls these.
// Thread-safety: each call is independent; calls may run concurrently on distinct streams.
#pragma once

#include <ostream>
#include <string>

namespace dynrep::replay {

struct InspectOptions {
  bool json = false;
  bool color = false;  // ANSI colour in text output
};

int inspectInfo(const std::string& path, const InspectOptions& options, std::ostream& out, std::ostream& err);
// Lists typed records, or blobs with `blobs`.
int inspectLs(const std::string& path, bool blobs, const InspectOptions& options, std::ostream& out,
              std::ostream& err);
int inspectVerify(const std::string& path, const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace dynrep::replay
