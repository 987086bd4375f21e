// Job::load: folds trace events (in file order) into one Compile per compile id, each event
// through the handler for its name (event_handlers.cc).
#include "dynrep/replay/query/job.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "event_handlers.h"
#include "metadata.h"

namespace dynrep::replay {

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
    uint16_t kind = reader.recordKind(i);
    if (kind != uint16_t(capture::RecordKind::TraceEvent) && kind != uint16_t(capture::RecordKind::CodeObject))
      continue;
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
    // An interned file name, ["file.py", index]: it belongs to no compile, only to later stacks.
    if (const nlohmann::json& f = md.raw();
        e.name == "str" && f.is_array() && f.size() == 2 && f[0].is_string() && f[1].is_number_integer()) {
      files[f[1].get<int64_t>()] = f[0].get<std::string>();
      continue;
    }
    if (!e.compileId.valid()) continue;
    Compile& c = compileFor(e.compileId);
    if (EventHandler handle = handlerFor(e.name)) handle(Event{job, e, md, files}, c);
    if (md.odd()) c.unreadable[e.name]++;
  }
  // A compile that failed before PyTorch named its frame (a recompile limit is hit before
  // Dynamo starts) belongs to the same code as the frame's other compiles.
  std::map<int64_t, const Compile*> named;
  for (const auto& [id, c] : byId)
    if (!c.function.empty()) named.try_emplace(id.frame, &c);
  for (auto& [id, c] : byId) {
    if (auto it = named.find(id.frame); c.function.empty() && it != named.end()) {
      c.function = it->second->function;
      c.file = it->second->file;
      c.firstLine = it->second->firstLine;
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

Result<std::string> Job::blob(const std::string& key) const {
  std::optional<BlobKey> k = BlobKey::fromHex(key);
  if (!k) return Status::invalidArgument(reader_->path() + ": bad blob key '" + key + "'");
  return reader_->readBlob(*k);
}

Result<std::string> Job::text(const std::string& key) const {
  if (key.empty()) return std::string();
  return blob(key);
}

std::string shownText(const Result<std::string>& text) {
  return text.isOk() ? *text : "[" + text.status().message() + "]";
}

Result<OpenedJob> openJob(const std::string& path) {
  Result<std::unique_ptr<StoreReader>> reader = StoreReader::open(path);
  if (!reader.isOk()) return reader.status();
  OpenedJob opened;
  opened.reader = std::move(*reader);
  Result<Job> job = Job::load(*opened.reader);
  if (!job.isOk()) return job.status();
  opened.job = std::move(*job);
  return opened;
}

}  // namespace dynrep::replay
