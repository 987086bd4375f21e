// Job::load: folds trace events (in file order) into one Compile per compile id.
#include "dynrep/replay/job.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "dynrep/replay/json_fields.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// One event's metadata, read field by field. A field of another type than PyTorch and capture
// write (or any field of metadata that is no object) reads as its fallback and marks the event
// odd, so the report says the event was unreadable instead of showing the fallback as if it
// had been recorded. Null reads as missing: PyTorch writes it for fields it has no value for.
class Metadata {
 public:
  explicit Metadata(const std::string& text) : j_(json::parse(text, nullptr, /*allow_exceptions=*/false)) {}

  const json& raw() const { return j_; }
  bool odd() const { return odd_; }
  // Whether the metadata is an object, as every event the report reads has it.
  bool object() {
    odd_ |= !j_.is_object();
    return j_.is_object();
  }
  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }

  template <typename T>
  T get(const char* key, T fallback) {
    const json* v = find(key);
    if (!v) return fallback;
    std::optional<T> typed = as<T>(*v);
    odd_ |= !typed;
    return typed.value_or(fallback);
  }
  // A text field; a number or boolean prints as JSON (PyTorch writes a symbol's value as a number).
  std::string text(const char* key) {
    const json* v = find(key);
    if (!v) return "";
    if (v->is_string()) return v->get<std::string>();
    odd_ |= v->is_structured();
    return dumpJson(*v);
  }
  // An array field (a stack), or an empty array.
  json array(const char* key) {
    const json* v = find(key);
    if (!v) return json::array();
    odd_ |= !v->is_array();
    return v->is_array() ? *v : json::array();
  }

 private:
  const json* find(const char* key) {
    if (!object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  json j_;  // discarded (no object) when the text does not parse
  bool odd_ = false;
};

// PyTorch interns file names in "str" events and refers to them by index in stacks.
std::vector<UserFrame> userStack(const json& stack, const std::map<int64_t, std::string>& files) {
  std::vector<UserFrame> out;
  if (!stack.is_array()) return out;
  for (const json& f : stack) {
    if (!f.is_object()) continue;
    UserFrame u;
    u.line = field<int>(f, "line", 0);
    u.function = field(f, "name", "");
    u.code = field(f, "loc", "");
    if (auto it = f.find("filename"); it != f.end()) {
      if (it->is_number_integer()) {
        auto name = files.find(it->get<int64_t>());
        u.file = name == files.end() ? "<file " + dumpJson(*it) + ">" : name->second;
      } else if (it->is_string()) {
        u.file = it->get<std::string>();
      }
    }
    out.push_back(std::move(u));
  }
  return out;
}

bool isGraphEvent(const std::string& name) {
  return name == "dynamo_output_graph" || name == "aot_forward_graph" || name == "aot_backward_graph" ||
         name == "aot_inference_graph" || name == "aot_joint_graph" || name == "inductor_output_code" ||
         name == "inductor_post_grad_graph" || name == "inductor_pre_grad_graph";
}

bool isShapeEvent(const std::string& name) {
  return name == "create_symbol" || name == "create_unbacked_symbol" || name == "guard_added_fast" ||
         name == "guard_added" || name == "symbolic_shape_specialization" || name == "propagate_real_tensors";
}

// Recompile reasons come as one string, or as a JSON list with one entry per cache entry
// whose guards failed, newest first.
std::string reasonsText(const std::string& payload) {
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return payload;
  std::string out;
  for (const json& r : j) out += (out.empty() ? "" : "\n") + (r.is_string() ? r.get<std::string>() : dumpJson(r));
  return out;
}

// PyTorch's precompile bypass payload: {"_reason": "...", ...}.
std::string bypassReason(const std::string& payload) {
  return field(json::parse(payload, nullptr, /*allow_exceptions=*/false), "_reason", "(no reason recorded)");
}

// Folds one trace event into its compile. Events whose metadata the report does not read
// (guard trees, graphs: their payload is what counts) never touch `md`.
void addEvent(const Job& job, const capture::TraceEvent& e, Metadata& md, const std::map<int64_t, std::string>& files,
              Compile& c) {
  if (e.name == "dynamo_start" && c.function.empty()) {
    std::vector<UserFrame> stack = userStack(md.array("stack"), files);
    if (!stack.empty()) {
      c.function = stack.back().function;
      c.file = stack.back().file;
      c.firstLine = stack.back().line;
    }
  } else if (e.name == "compilation_metrics" && md.object()) {
    c.function = md.text("co_name");
    c.file = md.text("co_filename");
    c.firstLine = md.get<int>("co_firstlineno", c.firstLine);
    c.guardCount = md.get<uint64_t>("guard_count", 0);
    std::string failType = md.text("fail_type");
    c.status = failType.empty() ? "ok" : failType + ": " + md.text("fail_reason");
    for (const auto& [key, value] : md.raw().items()) {
      if (value.is_number() && key.size() > 7 && key.compare(key.size() - 7, 7, "_time_s") == 0)
        c.phaseSeconds[key.substr(0, key.size() - 7)] = value.get<double>();
    }
  } else if (e.name == "dynamo_cpp_guards_str") {
    c.guardTreeKey = e.payloadKey;
  } else if (isGraphEvent(e.name)) {
    c.graphs[e.name] = e.payloadKey;
  } else if (e.name == "dynamo_replay.guards") {
    c.guardListKey = e.payloadKey;
  } else if (e.name == "dynamo_replay.graph_ir" && md.object()) {
    c.graphIrs[md.text("graph")] = e.payloadKey;
  } else if (e.name == "dynamo_replay.dropped_guard" && md.object()) {
    c.dropped.push_back({md.get<std::string>("kind", "?"), md.get<std::string>("source", "?"),
                         md.get<std::string>("value", ""), md.get<std::string>("line", ""),
                         md.get<bool>("risky", true)});
  } else if (e.name == "dynamo_replay.not_packaged") {
    // Even unreadable, the event says the frame was not saved.
    c.notSaved = md.get<std::string>("reason", "(no reason recorded)");
  } else if (e.name == "artifact" && md.text("name") == "precompile_cache_bypass") {
    if (c.notSaved.empty()) c.notSaved = bypassReason(job.text(e.payloadKey));
  } else if (e.name == "dynamo_replay.sample" && md.object()) {
    c.samples.push_back(e.metadataJson);
  } else if (e.name == "artifact" && md.text("name") == "recompile_reasons") {
    c.reason = reasonsText(job.text(e.payloadKey));
  } else if (e.name == "artifact" && md.text("name") == "dynamo_graph_break_reason") {
    c.graphBreaks.push_back(job.text(e.payloadKey));
  } else if (e.name == "dynamo_error") {
    c.status = "error: " + job.text(e.payloadKey);
  } else if (isShapeEvent(e.name) && md.object()) {
    ShapeEvent s;
    s.event = e.name;
    s.symbol = md.text("symbol");
    s.valueRange = md.text("vr");
    s.source = md.text("source");
    s.expr = md.text("expr");
    s.value = md.text(md.has("val") ? "val" : "value");
    s.userStack = userStack(md.array("user_stack"), files);
    c.shapes.push_back(std::move(s));
  }
}

}  // namespace

Result<Job> Job::load(const StoreReader& reader) {
  Job job;
  job.reader_ = &reader;
  std::map<int64_t, std::string> files;
  std::map<capture::CompileId, Compile> byId;
  auto compileFor = [&](const capture::CompileId& id) -> Compile& {
    Compile& c = byId[id];
    c.id = id;
    return c;
  };
  for (size_t i = 0; i < reader.recordCount(); ++i) {
    uint16_t kind = reader.index().records[i].kind;
    if (kind != uint16_t(capture::RecordKind::TraceEvent) && kind != uint16_t(capture::RecordKind::CodeObject)) continue;
    Result<std::string_view> payload = reader.recordPayload(i);
    if (!payload.isOk()) return payload.status();
    if (kind == uint16_t(capture::RecordKind::CodeObject)) {
      capture::CodeObject code;
      DYNREP_RETURN_IF_ERROR(capture::decode(*payload, &code));
      if (code.compileId.valid()) compileFor(code.compileId).code.push_back(std::move(code));
      continue;
    }
    capture::TraceEvent e;
    DYNREP_RETURN_IF_ERROR(capture::decode(*payload, &e));
    Metadata md(e.metadataJson);
    if (const json& f = md.raw(); e.name == "str" && f.is_array() && f.size() == 2 && f[0].is_string() &&
                                  f[1].is_number_integer()) {
      files[f[1].get<int64_t>()] = f[0].get<std::string>();
      continue;
    }
    if (!e.compileId.valid()) continue;
    Compile& c = compileFor(e.compileId);
    addEvent(job, e, md, files, c);
    if (md.odd()) c.unreadable[e.name]++;
  }
  for (auto& [id, c] : byId) {
    if (c.reason.empty()) c.reason = id.compile == 0 ? "first compile" : "(no reason recorded)";
    // An attempt that a later attempt of the same compile replaced was restarted by Dynamo
    // (after a graph break, say); one with no later attempt and no metrics never finished.
    auto next = byId.upper_bound(id);
    bool restarted = next != byId.end() && next->first.frame == id.frame && next->first.compile == id.compile;
    if (c.status.empty()) c.status = restarted ? "restarted" : "unfinished";
    // Drop PyTorch's newline-terminated text for one-line displays; the full text stays in the blob.
    while (!c.reason.empty() && (c.reason.back() == '\n' || c.reason.back() == ' ')) c.reason.pop_back();
    job.compiles_.push_back(std::move(c));
  }
  return job;
}

const Compile* Job::find(const std::string& compileId) const {
  for (const Compile& c : compiles_)
    if (c.id.str() == compileId || (c.id.attempt == 0 && compileId == c.id.str() + "_0")) return &c;
  return nullptr;
}

size_t Job::frameCount() const {
  std::map<int32_t, bool> frames;
  for (const Compile& c : compiles_) frames[c.id.frame] = true;
  return frames.size();
}

std::string Job::text(const std::string& key) const {
  if (key.empty()) return "";
  std::optional<BlobKey> k = BlobKey::fromHex(key);
  if (!k) return "[bad blob key " + key + "]";
  Result<std::string> data = reader_->readBlob(*k);
  return data.isOk() ? *data : "[" + data.status().message() + "]";
}

}  // namespace dynrep::replay
