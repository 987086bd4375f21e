// The why-answer as text: what `replay-inspect why` prints and the HTML report embeds, so a
// person reads the same answer in both. Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"

namespace dynrep::replay {

// Writes `answer` (explainJob's) as `why` prints it, coloured as `options` say.
void writeWhyText(const nlohmann::json& answer, const InspectOptions& options, std::ostream& out);

// An answer (or part of one: {"compiles": [...], "functions": [...]}) as `why` prints it, without
// colour: what the HTML report shows.
std::string whyText(const nlohmann::json& answer);

}  // namespace dynrep::replay
