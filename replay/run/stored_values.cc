// A compile's graph IRs, samples and constants read from a store as tensors.
#include "stored_values.h"

#include <cstring>

#include "arguments.h"
#include "dynrep/replay/query/graph_events.h"
#include "dynrep/replay/query/symbol_table.h"

namespace dynrep::replay::run {

StoredValues::StoredValues(const Job& job, const Compile& compile) : job_(job), compile_(compile), samples_(compile) {}

Graph StoredValues::ir(const std::string& event) const {
  auto it = compile_.graphIrs.find(event);
  if (it == compile_.graphIrs.end()) throw RunError("compile " + compile_.id.str() + " has no " + event);
  Result<Graph> parsed = readGraph(job_, it->second);
  if (!parsed.isOk()) throw RunError("the IR of " + event + ": " + parsed.status().message());
  if (parsed->format < 2)
    throw RunError("this store's graph IR is format 1 (parsed from printed text, without constants); "
                   "capture the job again with this version to run it");
  return std::move(*parsed);
}

std::string StoredValues::event(const std::string& graph) const {
  std::vector<std::string> candidates = eventsNamed(graph);
  for (const std::string& e : candidates)
    if (compile_.graphIrs.count(e)) return e;
  std::string have;
  for (const auto& [name, key] : compile_.graphIrs) have += (have.empty() ? "" : ", ") + name;
  throw RunError("compile " + compile_.id.str() + " has no " + graph +
                 " graph (it has: " + (have.empty() ? "none" : have) + ")");
}

at::Tensor StoredValues::blob(const SampleValue& entry, const std::vector<Dimension>* stride) const {
  if (!entry.stored())
    throw RunError("a value was not stored: " + (!entry.skipped.empty()       ? entry.skipped
                                                 : !entry.unsupported.empty() ? entry.unsupported
                                                                              : entry.value.spelling()));
  return tensor(entry.blob, entry.dtype, entry.shape, stride);
}

at::Tensor StoredValues::tensor(const std::string& key, const std::string& dtype, const std::vector<Dimension>& dims,
                                const std::vector<Dimension>* stride) const {
  std::vector<int64_t> shape;
  for (const Dimension& d : dims) {
    if (!d.isStatic()) throw RunError("stored tensor " + key + " has a symbolic shape");
    shape.push_back(d.size);
  }
  Result<std::string> read = job_.blob(key);
  if (!read.isOk()) throw RunError("stored tensor " + key + ": " + read.status().message());
  const std::string& bytes = *read;
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(scalarType(dtype)));
  if (static_cast<size_t>(t.nbytes()) != bytes.size())
    throw RunError("stored tensor " + key + ": " + std::to_string(bytes.size()) + " bytes where its shape needs " +
                   std::to_string(t.nbytes()));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return restride(t, stride);
}

at::Tensor StoredValues::restride(const at::Tensor& t, const std::vector<Dimension>* stride) {
  if (!stride || stride->size() != static_cast<size_t>(t.dim())) return t;
  std::vector<int64_t> wanted;
  for (const Dimension& s : *stride) {
    if (!s.isStatic()) return t;
    wanted.push_back(s.size);
  }
  if (t.strides().vec() == wanted) return t;
  return at::empty_strided(t.sizes(), wanted, t.options()).copy_(t);
}

std::map<std::string, at::Tensor> StoredValues::constants(const Graph& ir) const {
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, c] : ir.constants) {
    if (c.blob.empty() || !c.tensor) continue;
    out[name] = tensor(c.blob, c.tensor->dtype, c.tensor->shape, c.tensor->stride ? &*c.tensor->stride : nullptr);
  }
  return out;
}

c10::IValue StoredValues::valueOf(const SampleValue& entry) {
  const Argument& v = entry.value;
  if (entry.kind == SampleValue::Kind::Scalar) {
    if (v.kind == Argument::Kind::Int) return v.integer;
    if (v.kind == Argument::Kind::Float) return v.real;
    if (v.kind == Argument::Kind::Bool) return v.boolean;
    if (v.kind == Argument::Kind::String) return static_cast<int64_t>(std::stoll(v.text));  // a SymInt sampled as text
  }
  throw RunError("a sample input is neither a tensor nor a number: " +
                 (entry.kind == SampleValue::Kind::Unsupported ? entry.unsupported : v.spelling()));
}

std::map<std::string, int64_t> StoredValues::hints() const {
  std::map<std::string, int64_t> out;
  Result<std::vector<SymbolEntry>> table = readSymbols(job_, compile_);
  if (!table.isOk()) return out;
  for (const SymbolEntry& s : *table)
    if (std::optional<int64_t> hint = s.hint ? s.hint->asInteger() : std::nullopt) out[s.symbol] = *hint;
  return out;
}

std::vector<std::pair<int, at::Tensor>> StoredValues::expected(const Graph& ir) const {
  std::vector<std::pair<int, at::Tensor>> out;
  for (const auto& [position, entry] : samples_.expected(ir)) out.emplace_back(position, blob(*entry));
  return out;
}

}  // namespace dynrep::replay::run
