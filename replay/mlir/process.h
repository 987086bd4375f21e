// The other programs lower-check runs (replay-run, IREE's tools): started without a shell, so
// paths pass as they are, with their output in files of a temporary folder.
#pragma once

#include <string>
#include <vector>

namespace dynrep::replay::lowering {

// A temporary folder, removed with what it holds when its owner goes.
class TempDir {
 public:
  TempDir();  // throws std::runtime_error when none can be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs argv with stdout to `out` and stderr to `err` (files; "" discards); its exit status, or
// -1 when it could not start or was killed.
int spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err = "");

// A file's bytes ("" when it cannot be read).
std::string readFile(const std::string& path);

}  // namespace dynrep::replay::lowering
