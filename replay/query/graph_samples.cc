// A compile's samples by pass, each placeholder's feed and each result's expected value.
#include "dynrep/replay/query/graph_samples.h"

#include <cctype>

namespace dynrep::replay {

CompileSamples::CompileSamples(const Compile& compile) : compileId_(compile.id.str()) {
  for (const std::string& text : compile.samples) {
    Result<Sample> sample = parseSample(text);
    if (!sample.isOk()) continue;  // an unreadable sample feeds nothing: its inputs are reported missing
    if (!samples_.count(sample->pass)) samples_[sample->pass] = std::move(*sample);
  }
}

const Sample* CompileSamples::pass(const std::string& name) const {
  auto it = samples_.find(name);
  return it == samples_.end() ? nullptr : &it->second;
}

std::vector<FedValue> CompileSamples::feeds(const Graph& ir) const {
  std::vector<FedValue> out;
  const Sample* forward = pass("forward");
  const Sample* backward = pass("backward");
  std::vector<const SampleValue*> flowed;  // stores before `grad_output`: the n-th gradient that flowed
  if (backward)
    for (const SampleValue& g : backward->inputs)
      if (g.kind != SampleValue::Kind::Null) flowed.push_back(&g);
  size_t nextFlowed = 0;
  for (const Node* node : ir.placeholders()) {
    const std::string& name = node->name;
    FedValue f;
    auto missing = [&](std::string why) { f.kind = FedValue::Kind::Missing, f.missing = std::move(why); };
    if (!node->feed) {
      missing("no stored sample feeds input " + name + " of " +
              (ir.event.empty() ? std::string("the graph") : ir.event));
    } else if (node->feed->kind == Feed::Kind::ForwardOutput) {
      f.kind = FedValue::Kind::ForwardOutput;
      f.index = node->feed->index;
    } else if (node->feed->kind == Feed::Kind::SampleInput) {
      size_t i = node->feed->index;
      if (!forward)
        missing("compile " + compileId_ + " has no stored sample (captured with samples off, or the graph never ran)");
      else if (i >= forward->inputs.size())
        missing("no stored sample input " + std::to_string(i) + " feeds " + name);
      else
        f.entry = &forward->inputs[i];
    } else {  // a tangent
      std::string why = "no stored backward sample feeds " + name + " (the job never ran backward inside capture)";
      if (!node->feed->gradOutput) {
        if (nextFlowed < flowed.size())
          f.entry = flowed[nextFlowed++];
        else
          missing(why);
      } else {
        size_t position = *node->feed->gradOutput;
        const SampleValue* g = backward && position < backward->inputs.size() ? &backward->inputs[position] : nullptr;
        if (!g)
          missing(why);
        else if (g->kind == SampleValue::Kind::Null)
          f.kind = FedValue::Kind::Zeros, f.index = position;
        else
          f.entry = g;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::pair<int, const SampleValue*>> CompileSamples::expected(const Graph& ir) const {
  std::vector<std::pair<int, const SampleValue*>> out;
  for (size_t i = 0; i < ir.results.size(); ++i) {
    const ResultSource& r = ir.results[i];
    bool forward = r.kind == ResultSource::Kind::SampleOutput;
    const Sample* sample =
        forward || r.kind == ResultSource::Kind::GradInput ? pass(forward ? "forward" : "backward") : nullptr;
    if (!sample) continue;
    const std::vector<SampleValue>& outs = sample->outputs;
    if (r.index < outs.size() && outs[r.index].stored()) out.emplace_back(static_cast<int>(i), &outs[r.index]);
  }
  return out;
}

bool inputsMention(const Graph& ir, const std::string& symbol) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  auto mentions = [&](const std::string& text) {
    for (size_t at = text.find(symbol); at != std::string::npos; at = text.find(symbol, at + 1)) {
      bool before = at > 0 && ident(text[at - 1]),
           after = at + symbol.size() < text.size() && ident(text[at + symbol.size()]);
      if (!before && !after) return true;
    }
    return false;
  };
  for (const Node* node : ir.placeholders()) {
    const ValueMeta* meta = node->meta();
    if (!meta) continue;
    if (meta->kind == ValueMeta::Kind::Symbolic && mentions(meta->sym)) return true;
    if (!meta->isTensor()) continue;
    for (const Dimension& d : meta->tensor.shape)
      if (mentions(d.expr)) return true;
    if (meta->tensor.stride)
      for (const Dimension& d : *meta->tensor.stride)
        if (mentions(d.expr)) return true;
  }
  return false;
}

}  // namespace dynrep::replay
