// The rendering of what `replay-inspect diff` found (model.h): the answer paragraph, then
// sections, as text or JSON (docs/replay-inspect.md "diff --json"). Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <ostream>

#include "diff/model.h"
#include "dynrep/replay/inspect/inspect.h"

namespace dynrep::replay {

// Writes the report; returns the exit code: 0 when A and B do not differ, 1 when they do.
int renderDiff(const DiffReport& report, const InspectOptions& options, std::ostream& out);

}  // namespace dynrep::replay
