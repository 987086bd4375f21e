// replay-run: runs one stored aten graph through libtorch, without Python, and checks its
// outputs. Also reached as `replay-inspect run`. Exit 0 all match, 1 a node failed or an
// output differs, 2 bad usage or a graph that is not there.
#include <dlfcn.h>
#include <malloc.h>

#include <iomanip>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/sizes.h"
#include "dynrep/replay/run/runner.h"
#include "dynrep/store/reader.h"
#include "tool_main.h"

namespace {

using dynrep::replay::run::RunReport;

nlohmann::json toJson(const RunReport& r) {
  nlohmann::json j = {{"compile_id", r.compileId},
                      {"graph", r.graph},
                      {"inputs", r.inputs},
                      {"sizes", r.sizes},
                      {"nodes", r.nodes},
                      {"calls", r.calls},
                      {"median_seconds", r.medianSeconds},
                      {"ok", r.ok()},
                      {"filled", r.filled}};
  j["outputs"] = nlohmann::json::array();
  for (const auto& o : r.outputs)
    j["outputs"].push_back({{"position", o.position}, {"status", o.status}, {"max_abs_diff", o.maxAbsDiff}});
  if (r.failure)
    j["failure"] = {{"node", r.failure->node},
                    {"op", r.failure->op},
                    {"location", r.failure->location},
                    {"scope", r.failure->scope},
                    {"message", r.failure->message}};
  return j;
}

// A run that did not get to its nodes, in the JSON of a report: what is known of it, ok false
// and the error.
nlohmann::json errorJson(const std::string& compileId, const dynrep::replay::run::RunOptions& options,
                         const dynrep::Status& error) {
  RunReport known;
  known.compileId = compileId;
  known.inputs = dynrep::replay::run::inputsDescription(options);
  nlohmann::json j = toJson(known);
  j["ok"] = false;
  j["error"] = error.message();
  return j;
}

void printText(const RunReport& r, std::ostream& out) {
  out << "compile " << r.compileId << "  " << r.graph << "  (" << r.nodes << " nodes, inputs: " << r.inputs << ")\n";
  if (!r.sizes.empty()) {
    out << "sizes:";
    for (const auto& [name, value] : r.sizes) out << " " << name << "=" << value;
    out << "\n";
  }
  if (!r.filled.empty()) {
    out << r.filled.size()
        << " input(s) not stored (over the sample cap), filled with seeded random values of their description:";
    for (size_t i = 0; i < r.filled.size() && i < 8; ++i) out << " " << r.filled[i];
    out << (r.filled.size() > 8 ? " ..." : "") << "\n";
  }
  if (r.failure) {
    out << "failed at node " << r.failure->node << " (" << r.failure->op << "): " << r.failure->message << "\n";
    if (!r.failure->location.empty()) out << "  user line: " << r.failure->location << "\n";
    if (!r.failure->scope.empty()) out << "  module:    " << r.failure->scope << "\n";
    return;
  }
  int differ = 0;
  for (const auto& o : r.outputs) {
    out << "output " << o.position << ": " << o.status;
    if (o.maxAbsDiff > 0) out << " (max abs difference " << std::setprecision(3) << o.maxAbsDiff << ")";
    out << "\n";
    differ += o.status == "differs" || o.status == "shape differs";
  }
  if (r.calls > 1)
    out << "median " << std::fixed << std::setprecision(3) << r.medianSeconds * 1e3 << " ms per call (" << r.calls
        << " calls)\n";
  out << (differ ? "mismatch: " + std::to_string(differ) + " of " + std::to_string(r.outputs.size()) + " outputs differ"
                 : "ok: " + std::to_string(r.outputs.size()) +
                       (r.outputs.size() == 1 ? " output matches " : " outputs match ") +
                       (r.inputs == "samples" && r.filled.empty() ? "the stored ones" : "a second run"))
      << "\n";
}

int run(int argc, char** argv) {
  CLI::App app{"Run a stored aten graph through libtorch and check its outputs", "replay-run"};
  app.set_version_flag("--version", "replay-run " DYNREP_VERSION);
  std::string path, compileId, sizes, inputs = "samples";
  dynrep::replay::run::RunOptions options;
  bool json = false;
  app.add_option("STORE", path, "store file")->required();
  app.add_option("COMPILE_ID", compileId, "compile id as replay-inspect ls prints it, e.g. 0/1")->required();
  app.add_option("--graph", options.graph, "forward | backward | inference | dynamo, or a trace event name");
  app.add_option("--inputs", inputs, "samples: the stored inputs; random: seeded random inputs")
      ->check(CLI::IsMember({"samples", "random"}));
  app.add_option("--sizes", sizes, "values of the dynamic sizes for random inputs, e.g. s0=7,s1=3");
  app.add_option("--seed", options.seed, "seed of the random inputs");
  app.add_option("--rtol", options.rtol, "relative tolerance for float outputs (default 1e-4)");
  app.add_option("--atol", options.atol, "absolute tolerance for float outputs (default 1e-5)");
  app.add_option("--repeat", options.repeat, "calls to time (median reported)");
  app.add_option("--load", options.libraries, "a shared library that registers custom operators");
  app.add_option("--dump", options.dumpPath, "write the inputs and outputs here (torch.load reads it)");
  app.add_option("--dump-raw", options.rawDumpPath,
                 "write the inputs and outputs as a tensor file (raw bytes, for lower-check)");
  app.add_flag("--json", json, "machine-readable output");
  if (int code; !dynrep::tools::parse(app, argc, argv, &code)) return code;
  options.inputs =
      inputs == "random" ? dynrep::replay::run::InputSource::Random : dynrep::replay::run::InputSource::Samples;
  if (!sizes.empty()) {
    dynrep::Result<dynrep::replay::Symbols> parsed = dynrep::replay::parseSizes(sizes);
    if (!parsed.isOk()) {
      std::cerr << "replay-run: " << parsed.status().message() << "\n";
      return 2;
    }
    options.sizes = *parsed;
  }
  for (const std::string& library : options.libraries) {
    if (!::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      std::cerr << "replay-run: cannot load " << library << ": " << ::dlerror() << "\n";
      return 2;
    }
  }
  auto opened = dynrep::replay::openJob(path);
  if (!opened.isOk()) {
    std::cerr << "replay-run: " << opened.status().toString() << "\n";
    return 2;
  }
  dynrep::Result<RunReport> report = dynrep::replay::run::runGraph(opened->job, compileId, options);
  if (!report.isOk()) {
    if (json)
      std::cout << errorJson(compileId, options, report.status()).dump(2) << "\n";
    else
      std::cerr << "replay-run: " << path << ": " << report.status().message() << "\n";
    return 2;
  }
  if (json)
    std::cout << toJson(*report).dump(2) << "\n";
  else
    printText(*report, std::cout);
  return report->ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Keep freed memory in the process between calls (a caching allocator in effect): each call
  // frees tens of MiB of activations, and giving them back to the OS made the next call
  // page-fault them in again, which cost more than the dispatch itself on larger graphs.
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  return dynrep::tools::guardedMain("replay-run", [&] { return run(argc, argv); });
}
