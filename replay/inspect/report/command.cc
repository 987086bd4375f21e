// replay-inspect report: opens the store, writes the HTML page (output.cc) to the file named and
// says what it wrote, as text or JSON. Exit 0 written, 1 trouble.
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "render.h"
#include "report/output.h"

namespace dynrep::replay {

int inspectReport(const std::string& path, const std::string& file, const InspectOptions& o, std::ostream& out,
                  std::ostream& err) {
  std::optional<OpenedJob> opened = openJobOrReport(path, o, err);
  if (!opened) return 1;
  std::ostringstream page;
  writeReportPage(path, *opened->reader, opened->job, page);
  if (!writeFileOrReport(file, page.str(), o, err)) return 1;
  if (o.json)
    out << dumpJson({{"path", path},
                     {"file", file},
                     {"compiles", opened->job.compiles().size()},
                     {"bytes", page.str().size()}},
                    2)
        << "\n";
  else
    fmt::print(out, "{}: {} compiles, {} bytes\n", file, opened->job.compiles().size(), page.str().size());
  return 0;
}

}  // namespace dynrep::replay
