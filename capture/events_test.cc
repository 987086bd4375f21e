// Capture's event names: the C++ constants (events.h) and the Python writer's (schema.py) are
// the same set, so replay never looks for a name capture does not write.
#include "dynrep/capture/events.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace dynrep::capture {
namespace {

// The values of schema.py's `EVENT_X = "name"` lines.
std::set<std::string> pythonEventNames() {
  std::ifstream in(DYNREP_SOURCE_DIR "/python/dynamo_replay/schema.py");
  std::set<std::string> names;
  std::regex assignment(R"re(^EVENT_[A-Z0-9_]+ = "([^"]*)")re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, assignment)) names.insert(m[1]);
  }
  return names;
}

TEST(EventsTest, SameNamesAsThePythonSchema) {
  std::set<std::string> python = pythonEventNames();
  ASSERT_FALSE(python.empty()) << "no EVENT_ names read from python/dynamo_replay/schema.py";
  std::set<std::string> cxx;
  for (std::string_view name : events::kAll) cxx.emplace(name);
  for (const std::string& name : python)
    EXPECT_TRUE(cxx.count(name)) << "schema.py writes " << name
                                 << ": add it to capture/include/dynrep/capture/events.h";
  for (const std::string& name : cxx)
    EXPECT_TRUE(python.count(name)) << name << " is in events.h but schema.py does not write it";
}

}  // namespace
}  // namespace dynrep::capture
