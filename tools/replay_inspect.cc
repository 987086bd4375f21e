// replay-inspect: reads a store without the model and without PyTorch. A thin shell over
// dynrep::replay's inspect calls: exit 0 ok, 1 a problem found in the data, 2 bad usage.
#include <unistd.h>

#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "dynrep/replay/inspect.h"

int main(int argc, char** argv) {
  CLI::App app{"Inspect a dynamo-replay store offline", "replay-inspect"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "replay-inspect " DYNREP_VERSION);
  bool json = false;
  std::string color = "auto";
  app.add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  std::string path;
  bool blobs = false;

  auto* info = app.add_subcommand("info", "header, versions, state, record and blob counts, compression ratio");
  auto* ls = app.add_subcommand("ls", "one line per record (or per blob with --blobs)");
  auto* verify = app.add_subcommand("verify", "check every checksum and blob hash; exit 1 when any fails");
  for (auto* sub : {info, ls, verify}) {
    sub->add_option("STORE", path, "store file")->required();
    sub->add_flag("--json", json, "machine-readable output");
    sub->add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  }
  ls->add_flag("--blobs", blobs, "list blobs instead of records");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;  // --help and --version exit 0; everything else is bad usage
  }
  dynrep::replay::InspectOptions options;
  options.json = json;
  options.color = color == "always" || (color == "auto" && ::isatty(STDOUT_FILENO));
  if (info->parsed()) return dynrep::replay::inspectInfo(path, options, std::cout, std::cerr);
  if (ls->parsed()) return dynrep::replay::inspectLs(path, blobs, options, std::cout, std::cerr);
  return dynrep::replay::inspectVerify(path, options, std::cout, std::cerr);
}
