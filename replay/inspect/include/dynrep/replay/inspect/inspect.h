// The subcommands of replay-inspect as library calls: each reads a store and returns a Report
// (what to print, and whether it found a problem in the data), or the Status that says why it
// could not run (an unreadable store, an unknown compile, bad operands). They print nothing;
// tools/replay_inspect.cc parses arguments, prints the Report and chooses the exit code.
// Thread-safety: each call is independent; calls may run concurrently.
#pragma once

#include <string>
#include <vector>

#include "dynrep/replay/inspect/options.h"
#include "dynrep/replay/query/report.h"
#include "dynrep/store/status.h"

namespace dynrep::replay {

Result<Report> inspectInfo(const std::string& path, const InspectOptions& options);
enum class LsWhat { Default, Records, Blobs };
// Lists frames and compiles (a captured job), or with Records every typed record (also the
// default for a store without compiles), or with Blobs every blob.
Result<Report> inspectLs(const std::string& path, LsWhat what, const InspectOptions& options);

struct ShowSections {
  bool guards = false, code = false, graph = false, shapes = false;
  bool any() const { return guards || code || graph || shapes; }
};
// One compile ("0/1") in detail: its identity and reason, then each requested section
// (all of them when none is requested).
Result<Report> inspectShow(const std::string& path, const std::string& compileId, ShowSections sections,
                           const InspectOptions& options);
// Every check a store's reader can make; each problem is an error note (problemFound). A store
// that does not open is a Report too, under --json: its JSON says ok false.
Result<Report> inspectVerify(const std::string& path, const InspectOptions& options);
// Why compiles failed, broke their graphs, compiled again or failed at run time, with the fix for each (docs/why.md):
// all of them, or only `compileId`; `symbol` ("u0") limits symbol provenance to that symbol.
// A failed Status when the store, the compile or the symbol cannot be found.
Result<Report> inspectWhy(const std::string& path, const std::string& compileId, const std::string& symbol,
                          const InspectOptions& options);
// Two compiles of one store (operands STORE A_ID B_ID, or STORE B_ID for the compile B replaced)
// or two stores of one job (A_STORE B_STORE, `compileId` restricting it to one compile): what
// differs in guards, graphs, settings and environment. problemFound: they differ; a failed
// Status: bad operands, an unreadable store, an unknown compile (the tool exits 0, 1, 2 as diff(1)).
Result<Report> inspectDiff(const std::vector<std::string>& operands, const std::string& compileId,
                           const InspectOptions& options);

// Exports and the report (docs/exports.md). Each writes its file(s), and its Report is a summary.
struct TorchTraceOptions {
  bool pytorchOnly = false;  // leave capture's own dynamo_replay.* events out of the log
};
// The store's trace events as the TORCH_TRACE log PyTorch writes (tlparse reads it), one
// dedicated_log_torch_trace_<store>.log in `dir`, which is created if missing.
Result<Report> exportTorchTrace(const std::string& path, const std::string& dir, const TorchTraceOptions& trace,
                                const InspectOptions& options);
// The compile phases of every frame as a Chrome trace-event JSON file (Perfetto opens it);
// `file` "-" makes it the Report's output.
Result<Report> exportPerfetto(const std::string& path, const std::string& file, const InspectOptions& options);
// One self-contained HTML page: timeline, each compile's why-answer, guards, graphs, symbols.
Result<Report> inspectReport(const std::string& path, const std::string& file, const InspectOptions& options);

}  // namespace dynrep::replay
