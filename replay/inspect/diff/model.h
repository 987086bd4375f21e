// What `replay-inspect diff` computes: two compiles compared in guards (with the symbols and shape
// guards beside them), graph IR and settings, each a list of Changes, gathered into a DiffReport
// that output.cc renders as text or JSON. Private to replay/inspect.
// Thread-safety: pure functions of immutable Jobs and their readers.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "dynrep/replay/query/job.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

// One thing that differs: what it is, and its text in A and in B ("" where one has none).
struct Change {
  std::string what, a, b;
};

// One entry of a compile's guard list (capture's dynamo_replay.guards).
struct GuardEntry {
  std::string kind, source, code, userCode, file;
  int line = 0;
  std::string subject;  // what it checks: its source, or the source its code names (root guards)
  std::string norm;     // code compared between the compiles (object ids masked between stores)
};

// A guard on the same subject, of the same kind, with another check; details says what moved.
struct GuardChange {
  GuardEntry a, b;
  std::vector<Change> details;  // L['x'].size()[0]: 8 -> 16
};

struct GuardDiff {
  bool recorded = true;  // both compiles have a guard list (stores before it have none)
  std::vector<GuardEntry> added, removed;
  std::vector<GuardChange> changed;
  std::vector<Change> symbols;      // keyed by source (or symbol): "s77 [2, int_oo]"
  std::vector<Change> shapeGuards;  // expressions in one compile only
  bool empty() const {
    return added.empty() && removed.empty() && changed.empty() && symbols.empty() && shapeGuards.empty();
  }
};

// Between stores, identity guards name addresses of the capturing process, which differ
// every run: maskIds compares them by what they check, not where it was.
GuardDiff compareGuards(const Job& ja, const Compile& a, const Job& jb, const Compile& b, bool maskIds);

// One graph (a trace event's name: dynamo_output_graph, aot_forward_graph, ...) in both.
struct GraphDiff {
  std::string graph;
  std::string onlyIn;             // "a" or "b" when one compile has no such graph; "" when both do
  Change nodes;                   // node counts, when they differ
  std::vector<Change> operators;  // target: count in A, count in B
  std::vector<Change> inputs;     // by source or parameter name: float32[8] vs float32[16]
  std::vector<Change> outputs;    // by position
  std::vector<Change> scopes;     // module paths that run in one graph only: "present" / ""
  bool empty() const {
    return onlyIn.empty() && nodes.what.empty() && operators.empty() && inputs.empty() && outputs.empty() &&
           scopes.empty();
  }
};

std::vector<GraphDiff> compareGraphs(const Job& ja, const Compile& a, const Job& jb, const Compile& b);

// Settings a compile ran with, as compilation_metrics records them: "config.dynamo.X" (likewise
// inductor, functorch, compiler) -> the value as JSON text. Keyed by compile id.
using Settings = std::map<std::string, std::string>;
std::map<capture::CompileId, Settings> compileSettings(const StoreReader& reader);

// The store's manifest (environment fingerprint, command line) and capture's summary settings
// (capture.precompile, capture.vec_isa); found false for a store without a manifest.
struct JobFacts {
  bool found = false;
  std::vector<std::string> commandLine;
  Settings environment;  // fingerprint entries but config.*
  Settings settings;     // config.* entries of the fingerprint, and capture.*
};
JobFacts jobFacts(const StoreReader& reader);

// Keys whose values differ, or that one side lacks, in key order.
std::vector<Change> compareSettings(const Settings& a, const Settings& b);

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
  bool betweenStores = false;                 // two stores; else two compiles of pathA
  bool manifests = false;                     // both stores have a manifest (environment and settings compared)
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

}  // namespace dynrep::replay
