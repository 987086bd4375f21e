// replay-inspect why: opens the store, computes the why-answer (model.cc) for the job, a compile
// or a symbol, and renders it as JSON or as text (output.h); a failed Status when it cannot.
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "render.h"
#include "why/model.h"
#include "why/output.h"

namespace dynrep::replay {

using nlohmann::json;

Result<Report> inspectWhy(const std::string& path, const std::string& compileId, const std::string& symbol,
                          const InspectOptions& o) {
  Report report;
  Result<OpenedJob> opened = openJobNoting(path, report);
  if (!opened.isOk()) return opened.status();
  const Job& job = opened->job;
  if (!compileId.empty() && !job.find(compileId))
    return Status::notFound(fmt::format("{}: no compile {} (replay-inspect ls lists them)", path, compileId));
  WhyAnswer answer = explainJob(job, compileId, symbol);
  if (!symbol.empty() && answer.compiles.empty())
    return Status::notFound(
        fmt::format("{}: no compile{} knows symbol {}", path, compileId.empty() ? "" : " " + compileId, symbol));
  if (o.json) {
    json j = {{"path", path}};
    j.update(whyJson(answer));
    report.output = dumpJson(j, 2) + "\n";
    return report;
  }
  std::ostringstream out;
  writeWhyText(answer, o, out);
  report.output = out.str();
  return report;
}

}  // namespace dynrep::replay
