// Job::load: folds trace events (in file order) into one Compile per compile id.
#include "dynrep/replay/job.h"

#include <nlohmann/json.hpp>

#include "dynrep/replay/json_fields.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : dumpJson(*it);
}

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
    json md = json::parse(e.metadataJson, nullptr, /*allow_exceptions=*/false);
    if (e.name == "str" && md.is_array() && md.size() == 2 && md[0].is_string() && md[1].is_number_integer()) {
      files[md[1].get<int64_t>()] = md[0].get<std::string>();
      continue;
    }
    if (!e.compileId.valid()) continue;
    Compile& c = compileFor(e.compileId);
    if (e.name == "dynamo_start" && c.function.empty()) {
      std::vector<UserFrame> stack = userStack(md.is_object() ? md.value("stack", json()) : json(), files);
      if (!stack.empty()) {
        c.function = stack.back().function;
        c.file = stack.back().file;
        c.firstLine = stack.back().line;
      }
    } else if (e.name == "compilation_metrics" && md.is_object()) {
      c.function = str(md, "co_name");
      c.file = str(md, "co_filename");
      c.firstLine = field<int>(md, "co_firstlineno", c.firstLine);
      c.guardCount = field<uint64_t>(md, "guard_count", 0);
      std::string failType = str(md, "fail_type");
      c.status = failType.empty() ? "ok" : failType + ": " + str(md, "fail_reason");
      for (const auto& [key, value] : md.items()) {
        if (value.is_number() && key.size() > 7 && key.compare(key.size() - 7, 7, "_time_s") == 0)
          c.phaseSeconds[key.substr(0, key.size() - 7)] = value.get<double>();
      }
    } else if (e.name == "dynamo_cpp_guards_str") {
      c.guardTreeKey = e.payloadKey;
    } else if (isGraphEvent(e.name)) {
      c.graphs[e.name] = e.payloadKey;
    } else if (e.name == "dynamo_replay.guards") {
      c.guardListKey = e.payloadKey;
    } else if (e.name == "dynamo_replay.graph_ir" && md.is_object()) {
      c.graphIrs[str(md, "graph")] = e.payloadKey;
    } else if (e.name == "dynamo_replay.dropped_guard") {
      c.dropped.push_back({field(md, "kind", "?"), field(md, "source", "?"), field(md, "value", ""),
                           field(md, "line", ""), field<bool>(md, "risky", true)});
    } else if (e.name == "dynamo_replay.not_packaged") {
      c.notSaved = field(md, "reason", "(no reason recorded)");
    } else if (e.name == "artifact" && str(md, "name") == "precompile_cache_bypass" && c.notSaved.empty()) {
      c.notSaved = bypassReason(job.text(e.payloadKey));
    } else if (e.name == "dynamo_replay.sample" && md.is_object()) {
      c.samples.push_back(e.metadataJson);
    } else if (e.name == "artifact" && md.is_object() && str(md, "name") == "recompile_reasons") {
      c.reason = reasonsText(job.text(e.payloadKey));
    } else if (e.name == "artifact" && md.is_object() && str(md, "name") == "dynamo_graph_break_reason") {
      c.graphBreaks.push_back(job.text(e.payloadKey));
    } else if (e.name == "dynamo_error") {
      c.status = "error: " + job.text(e.payloadKey);
    } else if (isShapeEvent(e.name) && md.is_object()) {
      ShapeEvent s;
      s.event = e.name;
      s.symbol = str(md, "symbol");
      s.valueRange = str(md, "vr");
      s.source = str(md, "source");
      s.expr = str(md, "expr");
      s.value = str(md, md.contains("val") ? "val" : "value");
      s.userStack = userStack(md.value("user_stack", json()), files);
      c.shapes.push_back(std::move(s));
    }
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
