// A store's records of one kind, decoded in file order, for the reports that read them beside
// the Job (the timeline, the report's header, diff's settings).
// Thread-safety: pure functions of a StoreReader.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "dynrep/capture/records.h"
#include "dynrep/store/reader.h"

namespace dynrep::replay {

// Calls visit(const Record&) for each record of Record::kKind, in file order; one that cannot be
// read or decoded is skipped (Job::load has already refused a store with such a trace event).
template <typename Record, typename Visit>
void forEachRecord(const StoreReader& reader, Visit visit) {
  for (size_t i = 0; i < reader.recordCount(); ++i) {
    if (reader.recordKind(i) != uint16_t(Record::kKind)) continue;
    Result<std::string_view> payload = reader.recordPayload(i);
    Record r;
    if (payload.isOk() && capture::decode(*payload, &r).isOk()) visit(r);
  }
}

// The store's first readable manifest; nullopt for a store without one.
inline std::optional<capture::Manifest> firstManifest(const StoreReader& reader) {
  std::optional<capture::Manifest> first;
  forEachRecord<capture::Manifest>(reader, [&](const capture::Manifest& m) {
    if (!first) first = m;
  });
  return first;
}

}  // namespace dynrep::replay
