// The why-answer: what made a compile fail or happen again, where each symbol in it came from,
// and the edit that fixes it, chosen from the pattern table in docs/why.md. `replay-inspect why`
// prints it; the HTML report embeds it. Private to replay/inspect.
// Thread-safety: pure functions of an immutable Job.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// The answer for a whole job, as `why --json` prints it (docs/replay-inspect.md, "replay-inspect
// why --json"): {"compiles": [...], "functions": [...]}, one entry per compile that failed,
// broke its graph or compiled again (only `compileId` when given), and one summary per function
// compiled more than once. With `symbol`, the compiles that know it, each with its provenance.
// Never throws for odd store contents: a fact that cannot be read is left empty or null.
nlohmann::json explainJob(const Job& job, const std::string& compileId = "", const std::string& symbol = "");

}  // namespace dynrep::replay
