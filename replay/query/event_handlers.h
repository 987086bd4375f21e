// How Job::load folds a trace event into its compile: one handler per event name, looked up by
// name. Private to replay/query.
// Thread-safety: handlerFor() may be called from any thread; a handler mutates only its Compile.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "dynrep/capture/records.h"
#include "dynrep/replay/query/job.h"
#include "metadata.h"

namespace dynrep::replay {

// One trace event as a handler sees it.
struct Event {
  const Job& job;  // reads payload blobs
  const capture::TraceEvent& record;
  Metadata& md;                                 // handlers that ignore metadata never touch it
  const std::map<int64_t, std::string>& files;  // file names PyTorch interned so far

  // The payload's text for the compile's status, reason or graph breaks, which show a read
  // error where the text would be.
  std::string payload() const { return shownText(job.text(record.payloadKey)); }
};

using EventHandler = void (*)(const Event& e, Compile& c);

// The handler for events of this name, or nullptr for events the query does not read.
EventHandler handlerFor(std::string_view eventName);

}  // namespace dynrep::replay
