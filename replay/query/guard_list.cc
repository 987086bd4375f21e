// readGuardList: the one reader of a compile's guard-list blob.
#include "dynrep/replay/query/guard_list.h"

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay {

Result<std::vector<GuardListEntry>> readGuardList(const Job& job, const Compile& c) {
  const std::string where = "compile " + c.id.str() + ": guard list";
  if (c.guardListKey.empty()) return Status::notFound("compile " + c.id.str() + ": no guard list recorded");
  Result<std::string> bytes = job.blob(c.guardListKey);
  if (!bytes.isOk()) return Status::corruption(where + ": " + bytes.status().message());
  nlohmann::json list = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return Status::corruption(where + ": not a JSON list");
  std::vector<GuardListEntry> out;
  out.reserve(list.size());
  for (const nlohmann::json& g : list) {
    GuardListEntry e;
    e.kind = field(g, "kind", std::string("?"));
    e.source = field(g, "source", std::string());
    e.code = field(g, "code", std::string());
    e.userCode = field(g, "user_code", std::string());
    e.file = field(g, "file", std::string());
    e.line = field<int>(g, "line", 0);
    e.function = field(g, "function", std::string());
    e.note = field(g, "note", std::string());
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace dynrep::replay
