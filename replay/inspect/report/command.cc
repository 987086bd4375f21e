// replay-inspect report: opens the store, writes the HTML page (output.cc) to the file named and
// says what it wrote, as text or JSON; a failed Status when it cannot.
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "render.h"
#include "report/output.h"

namespace dynrep::replay {

Result<Report> inspectReport(const std::string& path, const std::string& file, const InspectOptions& o) {
  Report report;
  Result<OpenedJob> opened = openJobNoting(path, report);
  if (!opened.isOk()) return opened.status();
  std::ostringstream page;
  writeReportPage(path, *opened->reader, opened->job, page);
  if (Status written = writeFile(file, page.str()); !written.isOk()) return written;
  if (o.json)
    report.output =
        dumpJson(
            {{"path", path}, {"file", file}, {"compiles", opened->job.compiles().size()}, {"bytes", page.str().size()}},
            2) +
        "\n";
  else
    report.output = fmt::format("{}: {} compiles, {} bytes\n", file, opened->job.compiles().size(), page.str().size());
  return report;
}

}  // namespace dynrep::replay
