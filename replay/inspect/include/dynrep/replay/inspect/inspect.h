// The subcommands of replay-inspect as library calls: each reads a store, writes its report
// to `out` and problems to `err`, and returns the process exit code (0 sound, 1 a problem
// found in the data). tools/replay_inspect.cc only parses arguments and calls these.
// Thread-safety: each call is independent; calls may run concurrently on distinct streams.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dynrep/replay/inspect/options.h"

namespace dynrep::replay {

int inspectInfo(const std::string& path, const InspectOptions& options, std::ostream& out, std::ostream& err);
enum class LsWhat { Default, Records, Blobs };
// Lists frames and compiles (a captured job), or with Records every typed record (also the
// default for a store without compiles), or with Blobs every blob.
int inspectLs(const std::string& path, LsWhat what, const InspectOptions& options, std::ostream& out,
              std::ostream& err);

struct ShowSections {
  bool guards = false, code = false, graph = false, shapes = false;
  bool any() const { return guards || code || graph || shapes; }
};
// One compile ("0/1") in detail: its identity and reason, then each requested section
// (all of them when none is requested).
int inspectShow(const std::string& path, const std::string& compileId, ShowSections sections,
                const InspectOptions& options, std::ostream& out, std::ostream& err);
int inspectVerify(const std::string& path, const InspectOptions& options, std::ostream& out, std::ostream& err);
// Why compiles failed, broke their graphs, compiled again or failed at run time, with the fix for each (docs/why.md):
// all of them, or only `compileId`; `symbol` ("u0") limits symbol provenance to that symbol.
// Exit 1 when the store, the compile or the symbol cannot be found.
int inspectWhy(const std::string& path, const std::string& compileId, const std::string& symbol,
               const InspectOptions& options, std::ostream& out, std::ostream& err);
// Two compiles of one store (operands STORE A_ID B_ID, or STORE B_ID for the compile B replaced)
// or two stores of one job (A_STORE B_STORE, `compileId` restricting it to one compile): what
// differs in guards, graphs, settings and environment. Exit 0 no differences, 1 differences,
// 2 trouble (bad operands, an unreadable store, an unknown compile), as diff(1).
int inspectDiff(const std::vector<std::string>& operands, const std::string& compileId, const InspectOptions& options,
                std::ostream& out, std::ostream& err);

// Exports and the report (docs/exports.md). Each writes its file(s), then a summary to `out`.
struct TorchTraceOptions {
  bool pytorchOnly = false;  // leave capture's own dynamo_replay.* events out of the log
};
// The store's trace events as the TORCH_TRACE log PyTorch writes (tlparse reads it), one
// dedicated_log_torch_trace_<store>.log in `dir`, which is created if missing.
int exportTorchTrace(const std::string& path, const std::string& dir, const TorchTraceOptions& trace,
                     const InspectOptions& options, std::ostream& out, std::ostream& err);
// The compile phases of every frame as a Chrome trace-event JSON file (Perfetto opens it);
// `file` "-" writes it to `out`.
int exportPerfetto(const std::string& path, const std::string& file, const InspectOptions& options, std::ostream& out,
                   std::ostream& err);
// One self-contained HTML page: timeline, each compile's why-answer, guards, graphs, symbols.
int inspectReport(const std::string& path, const std::string& file, const InspectOptions& options, std::ostream& out,
                  std::ostream& err);

}  // namespace dynrep::replay
