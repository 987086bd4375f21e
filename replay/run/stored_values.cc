// A compile's graph IRs, samples and constants read from a store as tensors.
#include "stored_values.h"

#include <cstring>

#include "arguments.h"
#include "dynrep/replay/query/graph_events.h"

namespace dynrep::replay::run {

namespace {

using nlohmann::json;

}  // namespace

StoredValues::StoredValues(const Job& job, const Compile& compile) : job_(job), compile_(compile), samples_(compile) {}

json StoredValues::ir(const std::string& event) const {
  auto it = compile_.graphIrs.find(event);
  if (it == compile_.graphIrs.end()) throw RunError("compile " + compile_.id.str() + " has no " + event);
  json parsed = json::parse(job_.text(it->second), nullptr, false);
  if (!parsed.is_object()) throw RunError("the IR of " + event + " is not readable JSON");
  if (parsed.value("format", 1) < 2)
    throw RunError("this store's graph IR is format 1 (parsed from printed text, without constants); "
                   "capture the job again with this version to run it");
  return parsed;
}

std::string StoredValues::event(const std::string& graph) const {
  std::vector<std::string> candidates = eventsNamed(graph);
  for (const std::string& e : candidates)
    if (compile_.graphIrs.count(e)) return e;
  std::string have;
  for (const auto& [name, key] : compile_.graphIrs) have += (have.empty() ? "" : ", ") + name;
  throw RunError("compile " + compile_.id.str() + " has no " + graph + " graph (it has: " + (have.empty() ? "none" : have) + ")");
}

at::Tensor StoredValues::blob(const json& entry, const json& stride) const {
  if (!entry.contains("blob"))
    throw RunError("a value was not stored: " + entry.value("skipped", entry.value("unsupported", entry.dump())));
  at::ScalarType dtype = scalarType(entry.value("dtype", ""));
  std::vector<int64_t> shape = entry.value("shape", std::vector<int64_t>{});
  Result<std::string> read = job_.blob(entry["blob"].get<std::string>());
  if (!read.isOk()) throw RunError("stored tensor " + entry["blob"].get<std::string>() + ": " + read.status().message());
  const std::string& bytes = *read;
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dtype));
  if (static_cast<size_t>(t.nbytes()) != bytes.size())
    throw RunError("stored tensor " + entry["blob"].get<std::string>() + ": " + std::to_string(bytes.size()) +
                   " bytes where its shape needs " + std::to_string(t.nbytes()));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return restride(t, stride);
}

at::Tensor StoredValues::restride(const at::Tensor& t, const json& stride) {
  if (!stride.is_array() || stride.size() != static_cast<size_t>(t.dim())) return t;
  std::vector<int64_t> wanted;
  for (const json& s : stride) {
    if (!s.is_number_integer()) return t;
    wanted.push_back(s.get<int64_t>());
  }
  if (t.strides().vec() == wanted) return t;
  return at::empty_strided(t.sizes(), wanted, t.options()).copy_(t);
}

std::map<std::string, at::Tensor> StoredValues::constants(const json& ir) const {
  std::map<std::string, at::Tensor> out;
  if (ir.contains("constants") && ir["constants"].is_object())
    for (const auto& [name, entry] : ir["constants"].items())
      if (entry.contains("blob")) out[name] = blob(entry, entry.value("stride", json()));
  return out;
}

c10::IValue StoredValues::valueOf(const json& entry) {
  const json& v = entry.value("value", json());
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) return static_cast<int64_t>(std::stoll(v.get<std::string>()));  // a SymInt sampled as text
  throw RunError("a sample input is neither a tensor nor a number: " + entry.dump());
}

std::map<std::string, int64_t> StoredValues::hints() const {
  std::map<std::string, int64_t> out;
  if (compile_.symbolsKey.empty()) return out;
  json table = json::parse(job_.text(compile_.symbolsKey), nullptr, false);
  if (!table.is_array()) return out;
  for (const json& s : table)
    if (s.is_object() && s.contains("symbol") && s.contains("hint") && s["hint"].is_number_integer())
      out[s["symbol"].get<std::string>()] = s["hint"].get<int64_t>();
  return out;
}

std::vector<std::pair<int, at::Tensor>> StoredValues::expected(const json& ir) const {
  std::vector<std::pair<int, at::Tensor>> out;
  for (const auto& [position, entry] : samples_.expected(ir)) out.emplace_back(position, blob(*entry, json()));
  return out;
}

}  // namespace dynrep::replay::run
