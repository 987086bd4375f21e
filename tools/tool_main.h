// What replay-inspect, replay-run and replay-mlir share: finding a sibling tool (the package
// installs them side by side), parsing with usage errors as exit 2, and the last-resort handler.
#pragma once

#include <unistd.h>

#include <climits>
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

namespace dynrep::tools {

// The path `name` has beside this executable (whether or not it is there).
inline std::string besideSelf(const std::string& name) {
  std::string self(PATH_MAX, '\0');
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = n > 0 ? self.substr(0, self.rfind('/', static_cast<size_t>(n))) : ".";
  return dir + "/" + name;
}

inline bool isExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// Parses argv; on --help or --version (exit 0) or a usage error (exit 2) sets *exitCode.
inline bool parse(CLI::App& app, int argc, char** argv, int* exitCode) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::ParseError& e) {
    *exitCode = app.exit(e) == 0 ? 0 : 2;
    return false;
  }
}

// Whatever `run` did not foresee ends in a message naming the tool and exit 1, never std::terminate.
template <typename Run>
int guardedMain(const char* tool, Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
  } catch (...) {
    std::cerr << tool << ": unknown error\n";
  }
  return 1;
}

}  // namespace dynrep::tools
