// replay-inspect why: opens the store, computes the why-answer (model.cc) for the job, a compile
// or a symbol, and prints it as JSON or as text (output.cc). Exit 0 answered, 1 trouble.
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

int inspectWhy(const std::string& path, const std::string& compileId, const std::string& symbol,
               const InspectOptions& o, std::ostream& out, std::ostream& err) {
  auto reader = openOrReport(path, o, err);
  if (!reader) return 1;
  noteUnfinished(*reader, o, err);
  Result<Job> job = Job::load(*reader);
  if (!job.isOk()) return reportError(o, err, job.status().message());
  if (!compileId.empty() && !job->find(compileId))
    return reportError(o, err, fmt::format("{}: no compile {} (replay-inspect ls lists them)", path, compileId));
  json answer = explainJob(*job, compileId, symbol);
  if (!symbol.empty() && answer["compiles"].empty())
    return reportError(
        o, err,
        fmt::format("{}: no compile{} knows symbol {}", path, compileId.empty() ? "" : " " + compileId, symbol));
  if (o.json) {
    json j = {{"path", path}};
    j.update(answer);
    out << dumpJson(j, 2) << "\n";
    return 0;
  }
  writeWhyText(answer, o, out);
  return 0;
}

}  // namespace dynrep::replay
