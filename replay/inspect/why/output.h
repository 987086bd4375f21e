// The why-answer's renderings: the text `replay-inspect why` prints and the HTML report embeds, so
// a person reads the same answer in both, and the JSON `why --json` prints (docs/replay-inspect.md,
// "replay-inspect why --json"). Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "dynrep/replay/inspect/inspect.h"
#include "why/model.h"

namespace dynrep::replay {

// Writes `answer` as `why` prints it, coloured as `options` say.
void writeWhyText(const WhyAnswer& answer, const InspectOptions& options, std::ostream& out);

// An answer (or part of one) as `why` prints it, without colour: what the HTML report shows.
std::string whyText(const WhyAnswer& answer);

// {"compiles": [...], "functions": [...]}: the answer as `why --json` prints it.
nlohmann::json whyJson(const WhyAnswer& answer);

}  // namespace dynrep::replay
