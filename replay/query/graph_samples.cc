// A compile's samples by pass, each placeholder's feed and each result's expected value.
#include "dynrep/replay/query/graph_samples.h"

#include <cctype>

namespace dynrep::replay {

using nlohmann::json;

CompileSamples::CompileSamples(const Compile& compile) : compileId_(compile.id.str()) {
  for (const std::string& text : compile.samples) {
    json sample = json::parse(text, nullptr, false);
    if (!sample.is_object()) continue;
    std::string pass = sample.value("pass", "forward");  // events without `pass` are forward
    if (!samples_.count(pass)) samples_[pass] = std::move(sample);
  }
}

const json* CompileSamples::pass(const std::string& name) const {
  auto it = samples_.find(name);
  return it == samples_.end() ? nullptr : &it->second;
}

std::vector<Feed> CompileSamples::feeds(const json& ir) const {
  std::vector<Feed> out;
  const json* forward = pass("forward");
  const json* backward = pass("backward");
  std::vector<const json*> flowed;  // stores before `grad_output`: the n-th gradient that flowed
  if (backward)
    for (const json& g : (*backward)["inputs"])
      if (!(g.contains("value") && g["value"].is_null())) flowed.push_back(&g);
  size_t nextFlowed = 0;
  for (const json& node : ir.value("nodes", json::array())) {
    if (node.value("op", "") != "placeholder") continue;
    std::string name = node.value("name", "");
    const json feed = node.value("feed", json::object());
    Feed f;
    auto missing = [&](std::string why) { f.kind = Feed::Kind::Missing, f.missing = std::move(why); };
    if (feed.contains("forward_output")) {
      f.kind = Feed::Kind::ForwardOutput;
      f.index = feed["forward_output"].get<size_t>();
    } else if (feed.contains("sample_input")) {
      size_t i = feed["sample_input"].get<size_t>();
      if (!forward) missing("compile " + compileId_ + " has no stored sample (captured with samples off, or the graph never ran)");
      else if (i >= (*forward)["inputs"].size()) missing("no stored sample input " + std::to_string(i) + " feeds " + name);
      else f.entry = &(*forward)["inputs"][i];
    } else if (feed.contains("tangent")) {
      std::string why = "no stored backward sample feeds " + name + " (the job never ran backward inside capture)";
      if (!feed.contains("grad_output")) {
        if (nextFlowed < flowed.size()) f.entry = flowed[nextFlowed++];
        else missing(why);
      } else {
        size_t position = feed["grad_output"].get<size_t>();
        const json* g = backward && position < (*backward)["inputs"].size() ? &(*backward)["inputs"][position] : nullptr;
        if (!g) missing(why);
        else if (g->contains("value") && (*g)["value"].is_null()) f.kind = Feed::Kind::Zeros, f.index = position;
        else f.entry = g;
      }
    } else {
      missing("no stored sample feeds input " + name + " of " + ir.value("graph", std::string("the graph")));
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::pair<int, const json*>> CompileSamples::expected(const json& ir) const {
  std::vector<std::pair<int, const json*>> out;
  const json& results = ir.value("results", json::array());
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    const char* name = r.contains("sample_output") ? "forward" : r.contains("grad_input") ? "backward" : nullptr;
    const json* sample = name ? pass(name) : nullptr;
    if (!sample) continue;
    size_t j = r.contains("sample_output") ? r["sample_output"].get<size_t>() : r["grad_input"].get<size_t>();
    const json& outs = (*sample)["outputs"];
    if (j < outs.size() && outs[j].contains("blob")) out.emplace_back(static_cast<int>(i), &outs[j]);
  }
  return out;
}

bool inputsMention(const json& ir, const std::string& symbol) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const json& node : ir.value("nodes", json::array())) {
    if (node.value("op", "") != "placeholder" || node.value("outputs", json::array()).empty()) continue;
    std::string text = node["outputs"][0].dump();
    for (size_t at = text.find(symbol); at != std::string::npos; at = text.find(symbol, at + 1)) {
      bool before = at > 0 && ident(text[at - 1]), after = at + symbol.size() < text.size() && ident(text[at + symbol.size()]);
      if (!before && !after) return true;
    }
  }
  return false;
}

}  // namespace dynrep::replay
