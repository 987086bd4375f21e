// What `replay-inspect diff` found, and its rendering: the answer paragraph, then sections, as
// text or JSON (docs/replay-inspect.md "diff --json"). Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "diff/compare.h"
#include "dynrep/replay/inspect/inspect.h"

namespace dynrep::replay {

// Compile A against compile B.
struct PairDiff {
  const Compile* a = nullptr;
  const Compile* b = nullptr;
  std::vector<Change> compile;  // function, file, status, graph breaks
  GuardDiff guards;
  std::vector<GraphDiff> graphs;
  std::vector<Change> settings;             // configs at compile time (not those the job-level diff names)
  std::vector<std::string> pytorchReasons;  // B's recompile reasons naming A (two compiles of one store)
  bool empty() const { return compile.empty() && guards.empty() && graphs.empty() && settings.empty(); }
};

struct DiffReport {
  std::string pathA, pathB;
  bool betweenStores = false;  // two stores; else two compiles of pathA
  bool manifests = false;      // both stores have a manifest (environment and settings compared)
  std::vector<Change> environment, settings;  // the manifests' fingerprints, capture's summary
  size_t environmentEntries = 0, settingEntries = 0;
  std::vector<std::string> commandLineA, commandLineB;  // shown, never counted: they name the store
  std::vector<PairDiff> pairs;
  std::vector<const Compile*> onlyA, onlyB;  // compiles the other store has no partner for
  bool same() const {
    return environment.empty() && settings.empty() && onlyA.empty() && onlyB.empty() &&
           std::all_of(pairs.begin(), pairs.end(), [](const PairDiff& p) { return p.empty(); });
  }
};

// Writes the report; returns the exit code: 0 when A and B do not differ, 1 when they do.
int renderDiff(const DiffReport& report, const InspectOptions& options, std::ostream& out);

}  // namespace dynrep::replay
