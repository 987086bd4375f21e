// Parsing and checking a graph IR document into a Graph (graph_ir.h), once, naming the bad field.
#include "dynrep/replay/query/graph_ir.h"

#include <cmath>
#include <limits>
#include <set>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// A malformed document: thrown inside this file only, turned into a Status by parseGraph.
struct Malformed {
  std::string message;
  bool unknownFormat = false;
};

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw Malformed{where + ": " + what}; }

std::string typeName(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "a list";
  return "an object";
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string text(const json& object, const char* key, const std::string& where, bool required = false) {
  const json* v = member(object, key);
  if (!v || (v->is_null() && !required)) {
    if (required) bad(where, std::string("no ") + key);
    return "";
  }
  if (!v->is_string()) bad(where + ": " + key, "expected a string, found " + typeName(*v));
  return v->get<std::string>();
}

int64_t integer(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(where, "integer out of range");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (!v.is_number_integer()) bad(where, "expected an integer, found " + typeName(v));
  return v.get<int64_t>();
}

size_t index(const json& v, const std::string& where) {
  int64_t i = integer(v, where);
  if (i < 0) bad(where, "expected a position, found " + std::to_string(i));
  return static_cast<size_t>(i);
}

const json& object(const json& v, const std::string& where) {
  if (!v.is_object()) bad(where, "expected an object, found " + typeName(v));
  return v;
}

const json& array(const json& v, const std::string& where) {
  if (!v.is_array()) bad(where, "expected a list, found " + typeName(v));
  return v;
}

double special(const std::string& t, const std::string& where) {
  if (t == "inf") return std::numeric_limits<double>::infinity();
  if (t == "-inf") return -std::numeric_limits<double>::infinity();
  if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
  bad(where, "expected inf, -inf or nan, found '" + t + "'");
}

Argument argument(const json& a, const std::string& where) {
  using K = Argument::Kind;
  Argument out;
  if (a.is_null()) return out;
  if (a.is_boolean()) return out.kind = K::Bool, out.boolean = a.get<bool>(), out;
  if (a.is_number_integer()) return out.kind = K::Int, out.integer = integer(a, where), out;
  if (a.is_number()) return out.kind = K::Float, out.real = a.get<double>(), out;
  if (a.is_string()) return out.kind = K::String, out.text = a.get<std::string>(), out;
  if (a.is_array()) {
    out.kind = K::List;
    for (size_t i = 0; i < a.size(); ++i) out.items.push_back(argument(a[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }
  if (a.size() != 1)
    bad(where, "expected a node name or a constant, found an object with " + std::to_string(a.size()) + " keys");
  const std::string& key = a.begin().key();
  const json& v = a.begin().value();
  std::string at = where + "." + key;
  static const std::map<std::string, K> kTextKinds = {
      {"ref", K::Ref},       {"dtype", K::DType}, {"layout", K::Layout}, {"memory_format", K::MemoryFormat},
      {"device", K::Device}, {"sym", K::Sym},     {"py", K::Callable},   {"repr", K::Repr},
      {"expr", K::Expr},     {"enum", K::Enum}};
  if (auto it = kTextKinds.find(key); it != kTextKinds.end()) {
    if (!v.is_string()) bad(at, "expected a string, found " + typeName(v));
    return out.kind = it->second, out.text = v.get<std::string>(), out;
  }
  if (key == "float") {
    if (v.is_number()) return out.kind = K::Float, out.real = v.get<double>(), out;
    if (!v.is_string()) bad(at, "expected inf, -inf or nan, found " + typeName(v));
    return out.kind = K::Float, out.real = special(v.get<std::string>(), at), out;
  }
  if (key == "ellipsis") return out.kind = K::Ellipsis, out;
  if (key == "tuple" || key == "slice" || key == "complex") {
    out.kind = key == "tuple" ? K::Tuple : key == "slice" ? K::Slice : K::Complex;
    array(v, at);
    size_t want = key == "slice" ? 3 : key == "complex" ? 2 : v.size();
    if (v.size() != want) bad(at, "expected " + std::to_string(want) + " items, found " + std::to_string(v.size()));
    for (size_t i = 0; i < v.size(); ++i) out.items.push_back(argument(v[i], at + "[" + std::to_string(i) + "]"));
    return out;
  }
  bad(where, "expected a node name or a constant, found {\"" + key + "\": ...}");
}

Dimension dimension(const json& d, const std::string& where) {
  Dimension out;
  if (d.is_string())
    out.expr = d.get<std::string>();
  else
    out.size = integer(d, where);
  return out;
}

std::vector<Dimension> dimensions(const json& v, const std::string& where) {
  std::vector<Dimension> out;
  array(v, where);
  for (size_t i = 0; i < v.size(); ++i) out.push_back(dimension(v[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

TensorMeta tensorMeta(const json& entry, const std::string& where) {
  TensorMeta t;
  t.dtype = text(entry, "dtype", where, true);
  if (const json* shape = member(entry, "shape")) t.shape = dimensions(*shape, where + ".shape");
  if (const json* stride = member(entry, "stride"); stride && !stride->is_null())
    t.stride = dimensions(*stride, where + ".stride");
  if (const json* offset = member(entry, "storage_offset"); offset && !offset->is_null())
    t.storageOffset = dimension(*offset, where + ".storage_offset");
  t.device = text(entry, "device", where);
  if (const json* g = member(entry, "requires_grad"); g && !g->is_null()) {
    if (!g->is_boolean()) bad(where + ".requires_grad", "expected a boolean, found " + typeName(*g));
    t.requiresGrad = g->get<bool>();
  }
  return t;
}

ValueMeta valueMeta(const json& entry, const std::string& where) {
  using K = ValueMeta::Kind;
  ValueMeta m;
  if (entry.is_array()) return m.kind = K::Unsupported, m.text = "a nested sequence", m;  // a tuple inside a tuple
  object(entry, where);
  if (member(entry, "dtype")) return m.kind = K::Tensor, m.tensor = tensorMeta(entry, where), m;
  if (const json* sym = member(entry, "sym")) {
    if (!sym->is_string()) bad(where + ".sym", "expected a string, found " + typeName(*sym));
    return m.kind = K::Symbolic, m.sym = sym->get<std::string>(), m.symType = text(entry, "type", where), m;
  }
  if (const json* value = member(entry, "value"))
    return m.kind = K::Plain, m.value = argument(*value, where + ".value"), m;
  if (member(entry, "unsupported")) return m.kind = K::Unsupported, m.text = text(entry, "unsupported", where), m;
  if (member(entry, "unparsed")) return m.kind = K::Unparsed, m.text = text(entry, "unparsed", where), m;
  bad(where, "expected a tensor, a symbolic or plain value, or an unsupported type");
}

Feed feed(const json& f, const std::string& where) {
  object(f, where);
  Feed out;
  if (const json* i = member(f, "sample_input"))
    return out.kind = Feed::Kind::SampleInput, out.index = index(*i, where + ".sample_input"), out;
  if (const json* i = member(f, "forward_output"))
    return out.kind = Feed::Kind::ForwardOutput, out.index = index(*i, where + ".forward_output"), out;
  if (const json* i = member(f, "tangent")) {
    out.kind = Feed::Kind::Tangent, out.index = index(*i, where + ".tangent");
    if (const json* g = member(f, "grad_output")) out.gradOutput = index(*g, where + ".grad_output");
    return out;
  }
  bad(where, "expected sample_input, tangent or forward_output");
}

Node::Op opKind(const std::string& op, int format, const std::string& where) {
  static const std::map<std::string, Node::Op> kOps = {
      {"placeholder", Node::Op::Placeholder}, {"call_function", Node::Op::CallFunction},
      {"call_method", Node::Op::CallMethod},  {"call_module", Node::Op::CallModule},
      {"get_attr", Node::Op::GetAttr},        {"output", Node::Op::Output}};
  if (auto it = kOps.find(op); it != kOps.end()) return it->second;
  if (op == "expr" && format == 1) return Node::Op::Expr;
  bad(where + ": op", "unknown node kind '" + op + "'");
}

Node node(const json& n, size_t position, int format) {
  std::string where = "node " + std::to_string(position);
  object(n, where);
  Node out;
  out.position = position;
  out.name = text(n, "name", where, true);
  where += " (" + out.name + ")";
  out.opName = text(n, "op", where, true);
  out.op = opKind(out.opName, format, where);
  out.target = text(n, "target", where);
  bool call = out.op != Node::Op::Placeholder && out.op != Node::Op::Output;
  if (call && out.target.empty()) bad(where, "a " + out.opName + " node with no target");
  if (const json* args = member(n, "args")) {
    array(*args, where + ": args");
    for (size_t i = 0; i < args->size(); ++i)
      out.args.push_back(argument((*args)[i], where + ": args[" + std::to_string(i) + "]"));
  }
  if (const json* kwargs = member(n, "kwargs")) {
    object(*kwargs, where + ": kwargs");
    for (const auto& [key, value] : kwargs->items()) out.kwargs[key] = argument(value, where + ": kwargs." + key);
  }
  if (const json* outputs = member(n, "outputs")) {
    array(*outputs, where + ": outputs");
    for (size_t i = 0; i < outputs->size(); ++i)
      out.outputs.push_back(valueMeta((*outputs)[i], where + ": outputs[" + std::to_string(i) + "]"));
  }
  out.stackTrace = text(n, "stack_trace", where);
  if (const json* l = member(n, "location"); l && !l->is_null()) {
    object(*l, where + ": location");
    SourceLocation loc{text(*l, "file", where + ": location"), 0, text(*l, "function", where + ": location"),
                       text(*l, "code", where + ": location")};
    if (const json* line = member(*l, "line")) loc.line = integer(*line, where + ": location.line");
    out.location = loc;
  }
  if (const json* scope = member(n, "scope")) {
    array(*scope, where + ": scope");
    for (size_t i = 0; i < scope->size(); ++i) {
      std::string at = where + ": scope[" + std::to_string(i) + "]";
      object((*scope)[i], at);
      out.scope.push_back({text((*scope)[i], "path", at), text((*scope)[i], "class", at)});
    }
  }
  if (const json* seq = member(n, "seq_nr")) out.seqNr = integer(*seq, where + ": seq_nr");
  if (const json* input = member(n, "input"); input && !input->is_null()) {
    std::string at = where + ": input";
    object(*input, at);
    out.input = InputRole{text(*input, "role", at), text(*input, "name", at), text(*input, "symbol", at),
                          text(*input, "source", at)};
  }
  if (const json* f = member(n, "feed"); f && !f->is_null()) out.feed = feed(*f, where + ": feed");
  return out;
}

void checkRefs(const Argument& a, const std::set<std::string>& names, const std::string& where) {
  if (a.kind == Argument::Kind::Ref && !names.count(a.text)) bad(where, "uses unknown node '" + a.text + "'");
  for (size_t i = 0; i < a.items.size(); ++i) checkRefs(a.items[i], names, where + "[" + std::to_string(i) + "]");
}

Schema schema(const json& s, const std::string& where) {
  object(s, where);
  Schema out;
  out.text = text(s, "text", where);
  const json* arguments = member(s, "arguments");
  out.typed = arguments != nullptr;
  auto list = [&](const json* v, const char* key, std::vector<SchemaArgument>* into) {
    if (!v) return;
    std::string at = where + "." + key;
    array(*v, at);
    for (size_t i = 0; i < v->size(); ++i) {
      std::string item = at + "[" + std::to_string(i) + "]";
      const json& a = object((*v)[i], item);
      SchemaArgument arg{text(a, "name", item), text(a, "type", item), false, std::nullopt};
      if (const json* k = member(a, "kwarg_only"); k && k->is_boolean()) arg.kwargOnly = k->get<bool>();
      if (const json* d = member(a, "default")) arg.defaultValue = d->is_string() ? d->get<std::string>() : d->dump();
      into->push_back(std::move(arg));
    }
  };
  list(arguments, "arguments", &out.arguments);
  list(member(s, "returns"), "returns", &out.returns);
  return out;
}

Constant constant(const json& c, const std::string& where) {
  object(c, where);
  Constant out;
  if (member(c, "dtype"))
    out.tensor = tensorMeta(c, where);
  else
    out.unsupported = member(c, "unsupported") ? text(c, "unsupported", where) : "not a tensor";
  out.blob = text(c, "blob", where);
  if (const json* b = member(c, "bytes")) out.bytes = static_cast<uint64_t>(integer(*b, where + ".bytes"));
  if (const json* s = member(c, "skipped")) out.skipped = s->is_string() ? s->get<std::string>() : s->dump();
  return out;
}

ResultSource resultSource(const json& r, const std::string& where) {
  object(r, where);
  using K = ResultSource::Kind;
  for (auto [key, kind] : {std::pair{"sample_output", K::SampleOutput}, std::pair{"grad_input", K::GradInput},
                           std::pair{"mutated_input", K::MutatedInput}})
    if (const json* i = member(r, key)) return {kind, index(*i, where + "." + key)};
  if (member(r, "symbol")) return {K::Symbol, 0};
  if (member(r, "saved")) return {K::Saved, 0};
  bad(where, "expected sample_output, grad_input, symbol, mutated_input or saved");
}

Graph graph(const json& doc) {
  if (!doc.is_object()) bad("graph ir", "not a JSON object but " + typeName(doc));
  Graph g;
  if (const json* f = member(doc, "format")) {
    if (!f->is_number_integer()) bad("graph ir: format", "expected an integer, found " + typeName(*f));
    g.format = static_cast<int>(integer(*f, "graph ir: format"));
  }
  if (g.format < kGraphIrOldestFormat || g.format > kGraphIrNewestFormat)  // checked before any other field
    throw Malformed{"graph ir: format " + std::to_string(g.format) + " is not one this reader knows (" +
                        std::to_string(kGraphIrOldestFormat) + " to " + std::to_string(kGraphIrNewestFormat) + ")",
                    true};
  g.event = text(doc, "graph", "graph ir");
  g.origin = text(doc, "origin", "graph ir");
  g.opset = text(doc, "opset", "graph ir");
  const json* nodes = member(doc, "nodes");
  if (!nodes) bad("graph ir", "no node list");
  array(*nodes, "graph ir: nodes");
  std::set<std::string> names;
  for (size_t i = 0; i < nodes->size(); ++i) {
    try {
      g.nodes.push_back(node((*nodes)[i], i, g.format));
    } catch (Malformed& m) {
      m.message = "graph ir: " + m.message;
      throw;
    }
    if (!names.insert(g.nodes.back().name).second)
      bad("graph ir: node " + std::to_string(i), "a second node named '" + g.nodes.back().name + "'");
  }
  for (const Node& n : g.nodes) {
    std::string where = "graph ir: node " + std::to_string(n.position) + " (" + n.name + ")";
    for (size_t i = 0; i < n.args.size(); ++i) checkRefs(n.args[i], names, where + ": args[" + std::to_string(i) + "]");
    for (const auto& [key, value] : n.kwargs) checkRefs(value, names, where + ": kwargs." + key);
  }
  if (const json* schemas = member(doc, "schemas")) {
    object(*schemas, "graph ir: schemas");
    for (const auto& [target, s] : schemas->items()) g.schemas[target] = schema(s, "graph ir: schemas." + target);
  }
  if (const json* constants = member(doc, "constants")) {
    object(*constants, "graph ir: constants");
    for (const auto& [target, c] : constants->items())
      g.constants[target] = constant(c, "graph ir: constants." + target);
  }
  if (const json* results = member(doc, "results")) {
    array(*results, "graph ir: results");
    for (size_t i = 0; i < results->size(); ++i)
      g.results.push_back(resultSource((*results)[i], "graph ir: results[" + std::to_string(i) + "]"));
  }
  return g;
}

SampleValue sampleValue(const json& v, const std::string& where) {
  using K = SampleValue::Kind;
  SampleValue out;
  if (v.is_null()) return out;
  object(v, where);
  if (member(v, "dtype")) {
    out.kind = K::Tensor;
    out.dtype = text(v, "dtype", where, true);
    out.device = text(v, "device", where);
    if (const json* shape = member(v, "shape")) out.shape = dimensions(*shape, where + ".shape");
    if (const json* stride = member(v, "stride"); stride && !stride->is_null())
      out.stride = dimensions(*stride, where + ".stride");
    out.blob = text(v, "blob", where);
    if (const json* b = member(v, "bytes")) out.bytes = static_cast<uint64_t>(index(*b, where + ".bytes"));
    if (const json* s = member(v, "skipped")) out.skipped = s->is_string() ? s->get<std::string>() : s->dump();
    if (const json* p = member(v, "parameter"); p && p->is_boolean()) out.parameter = p->get<bool>();
    for (auto [key, into] : {std::pair{"mean", &out.mean}, std::pair{"std", &out.std}})
      if (const json* m = member(v, key)) {
        if (!m->is_number()) bad(where + "." + key, "expected a number, found " + typeName(*m));
        *into = m->get<double>();
      }
    for (auto [key, into] : {std::pair{"min", &out.min}, std::pair{"max", &out.max}})
      if (const json* m = member(v, key)) *into = integer(*m, where + "." + key);
    return out;
  }
  if (const json* value = member(v, "value")) {
    out.value = argument(*value, where + ".value");
    out.kind = out.value.kind == Argument::Kind::None ? K::Null : K::Scalar;
    return out;
  }
  if (member(v, "unsupported")) return out.kind = K::Unsupported, out.unsupported = text(v, "unsupported", where), out;
  bad(where, "expected a tensor, a value or an unsupported type");
}

// Compact, as nlohmann's dump() writes the IR's JSON: {"ref":"x"}, [1,2].
void spell(const Argument& a, std::string* out) {
  using K = Argument::Kind;
  auto keyed = [&](const char* key, const std::string& value) {
    *out += "{\"" + std::string(key) + "\":" + json(value).dump() + "}";
  };
  auto items = [&](const char* open, const char* close) {
    *out += open;
    for (size_t i = 0; i < a.items.size(); ++i) *out += i ? "," : "", spell(a.items[i], out);
    *out += close;
  };
  switch (a.kind) {
    case K::None: *out += "null"; return;
    case K::Bool: *out += a.boolean ? "true" : "false"; return;
    case K::Int: *out += std::to_string(a.integer); return;
    case K::Float:
      *out += std::isfinite(a.real) ? json(a.real).dump()
              : std::isnan(a.real)  ? "{\"float\":\"nan\"}"
              : a.real > 0          ? "{\"float\":\"inf\"}"
                                    : "{\"float\":\"-inf\"}";
      return;
    case K::String: *out += json(a.text).dump(); return;
    case K::List: items("[", "]"); return;
    case K::Ref: keyed("ref", a.text); return;
    case K::Tuple: items("{\"tuple\":[", "]}"); return;
    case K::DType: keyed("dtype", a.text); return;
    case K::Layout: keyed("layout", a.text); return;
    case K::MemoryFormat: keyed("memory_format", a.text); return;
    case K::Device: keyed("device", a.text); return;
    case K::Sym: keyed("sym", a.text); return;
    case K::Slice: items("{\"slice\":[", "]}"); return;
    case K::Ellipsis: *out += "{\"ellipsis\":true}"; return;
    case K::Complex: items("{\"complex\":[", "]}"); return;
    case K::Callable: keyed("py", a.text); return;
    case K::Repr: keyed("repr", a.text); return;
    case K::Expr: keyed("expr", a.text); return;
    case K::Enum: keyed("enum", a.text); return;
  }
}

}  // namespace

std::string Argument::spelling() const {
  std::string out;
  spell(*this, &out);
  return out;
}

std::string Argument::key() const {
  if (kind == Kind::Float && std::isfinite(real)) return "";
  std::string s = spelling();
  if (s.rfind("{\"", 0) != 0) return "";
  return s.substr(2, s.find('"', 2) - 2);
}

const Node* Graph::find(const std::string& name) const {
  for (const Node& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

const Node* Graph::output() const {
  for (const Node& n : nodes)
    if (n.is(Node::Op::Output)) return &n;
  return nullptr;
}

std::vector<const Node*> Graph::placeholders() const {
  std::vector<const Node*> out;
  for (const Node& n : nodes)
    if (n.is(Node::Op::Placeholder)) out.push_back(&n);
  return out;
}

std::vector<Argument> Graph::returned() const {
  const Node* o = output();
  if (!o || o->args.empty()) return {};
  const Argument& value = o->args[0];
  if (value.isSequence()) return value.items;
  return {value};
}

const Schema* Graph::schema(const std::string& target) const {
  auto it = schemas.find(target);
  return it == schemas.end() || !it->second.typed ? nullptr : &it->second;
}

std::map<std::string, int> Graph::operatorCounts() const {
  std::map<std::string, int> out;
  for (const Node& n : nodes)
    if (n.is(Node::Op::CallFunction)) out[n.target]++;
  return out;
}

Result<Graph> parseGraph(const nlohmann::json& document) {
  try {
    return graph(document);
  } catch (const Malformed& m) {
    return m.unknownFormat ? Status::notSupported(m.message) : Status::corruption(m.message);
  }
}

Result<Graph> parseGraph(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return Status::corruption("graph ir: not readable JSON (" + std::to_string(text.size()) + " bytes)");
  return parseGraph(doc);
}

Result<Sample> parseSample(const std::string& metadataJson) {
  json doc = json::parse(metadataJson, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return Status::corruption("sample: not readable JSON (" + std::to_string(metadataJson.size()) + " bytes)");
  try {
    object(doc, "sample");
    Sample s;
    s.graph = text(doc, "graph", "sample");
    if (std::string pass = text(doc, "pass", "sample"); !pass.empty()) s.pass = pass;  // events without it are forward
    for (auto [key, into] : {std::pair{"inputs", &s.inputs}, std::pair{"outputs", &s.outputs}})
      if (const json* values = member(doc, key)) {
        array(*values, std::string("sample: ") + key);
        for (size_t i = 0; i < values->size(); ++i)
          into->push_back(sampleValue((*values)[i], std::string("sample: ") + key + "[" + std::to_string(i) + "]"));
      }
    if (const json* rng = member(doc, "rng_state")) s.rngState = sampleValue(*rng, "sample: rng_state");
    return s;
  } catch (const Malformed& m) {
    return Status::corruption(m.message);
  }
}

Result<Graph> readGraph(const Job& job, const std::string& blobKey) {
  Result<std::string> text = job.blob(blobKey);
  if (!text.isOk()) return text.status();
  return parseGraph(*text);
}

}  // namespace dynrep::replay
