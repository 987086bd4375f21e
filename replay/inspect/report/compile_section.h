// The HTML report's per-compile section and the pieces the page shares with it. Private to
// replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dynrep/capture/records.h"
#include "dynrep/replay/query/job.h"
#include "why/model.h"

namespace dynrep::replay::report {

// The HTML id of a compile's section ("c-0-1-0").
std::string anchor(const capture::CompileId& id);
// The CSS class of a status: status-ok, status-other (restarted, unfinished) or status-bad.
const char* statusClass(const std::string& status);

// Writes compile `c`'s <section>; `why` is explainJob's answer for the job.
void writeCompileSection(std::ostream& out, const Job& job, const Compile& c, const WhyAnswer& why);

}  // namespace dynrep::replay::report
