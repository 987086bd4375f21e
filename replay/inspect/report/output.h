// The HTML report's page for a whole job (output.cc), written for `replay-inspect report`
// (command.cc). Private to replay/inspect.
// Thread-safety: pure functions; each writes only to the stream it is given.
#pragma once

#include <ostream>
#include <string>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// Writes the page for `job`, read from the store at `path`.
void writeReportPage(const std::string& path, const StoreReader& reader, const Job& job, std::ostream& out);

}  // namespace dynrep::replay
