// diff's settings and environment: the configs each compile ran with (PyTorch's
// compilation_metrics carries its dynamo, inductor, functorch and compiler configs as JSON), the
// manifest's environment fingerprint (python/dynamo_replay/fingerprint.py) and capture's summary.
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "diff/model.h"
#include "dynrep/capture/events.h"
#include "dynrep/capture/records.h"
#include "dynrep/replay/query/json_fields.h"
#include "dynrep/replay/query/store_records.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// compilation_metrics' config fields -> the fingerprint's prefix for the same module.
const std::pair<const char*, const char*> kConfigFields[] = {{"dynamo_config", "config.dynamo."},
                                                             {"inductor_config", "config.inductor."},
                                                             {"functorch_config", "config.functorch."},
                                                             {"compiler_config", "config.compiler."}};

void addConfig(const json& metrics, Settings* out) {
  for (const auto& [name, prefix] : kConfigFields) {
    auto it = metrics.find(name);
    if (it == metrics.end()) continue;
    // PyTorch writes each config as a JSON string; an object is read the same.
    json config = it->is_string() ? json::parse(it->get<std::string>(), nullptr, false) : *it;
    if (!config.is_object()) continue;
    for (const auto& [key, value] : config.items()) (*out)[prefix + key] = dumpJson(value);
  }
}

// Each TraceEvent named `name`, in file order.
template <typename Visit>
void forEachEvent(const StoreReader& reader, std::string_view name, Visit visit) {
  forEachRecord<capture::TraceEvent>(reader, [&](const capture::TraceEvent& e) {
    if (e.name == name) visit(e);
  });
}

}  // namespace

std::map<capture::CompileId, Settings> compileSettings(const StoreReader& reader) {
  std::map<capture::CompileId, Settings> out;
  forEachEvent(reader, "compilation_metrics", [&](const capture::TraceEvent& e) {
    json md = json::parse(e.metadataJson, nullptr, false);
    if (e.compileId.valid() && md.is_object()) addConfig(md, &out[e.compileId]);
  });
  return out;
}

JobFacts jobFacts(const StoreReader& reader) {
  JobFacts facts;
  if (std::optional<capture::Manifest> m = firstManifest(reader)) {
    facts.found = true;
    facts.commandLine = m->commandLine;
    for (const auto& [key, value] : m->environment)
      (key.rfind("config.", 0) == 0 ? facts.settings : facts.environment)[key] = value;
  }
  forEachEvent(reader, capture::events::kSummary, [&](const capture::TraceEvent& e) {
    json md = json::parse(e.metadataJson, nullptr, false);
    for (const char* key : {"precompile", "vec_isa"})
      if (md.is_object() && md.contains(key)) facts.settings[std::string("capture.") + key] = dumpJson(md[key]);
  });
  return facts;
}

std::vector<Change> compareSettings(const Settings& a, const Settings& b) {
  std::vector<Change> out;
  auto ia = a.begin(), ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      out.push_back({ia->first, ia->second, ""});
      ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      out.push_back({ib->first, "", ib->second});
      ++ib;
    } else {
      if (ia->second != ib->second) out.push_back({ia->first, ia->second, ib->second});
      ++ia, ++ib;
    }
  }
  return out;
}

}  // namespace dynrep::replay
