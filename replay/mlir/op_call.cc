// An operator node's arguments resolved in schema order, defaults filled from the stored schema.
#include "op_call.h"

namespace dynrep::replay::lowering {

size_t OpCall::index(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  throw Unsupported(target + " has no argument '" + name + "'");
}

const Value& OpCall::arg(size_t i) const {
  static const Value none;
  return i < args.size() ? args[i] : none;
}

const Value& OpCall::tensor(size_t i) const {
  const Value& v = arg(i);
  if (!v.isTensor())
    throw Unsupported("argument '" + (i < names.size() ? names[i] : std::to_string(i)) + "' is not a tensor");
  return v;
}

int64_t OpCall::integer(size_t i) const {
  const Value& v = arg(i);
  if (!v.isConst())
    throw Unsupported("argument '" + (i < names.size() ? names[i] : std::to_string(i)) + "' is not a constant");
  return static_cast<int64_t>(v.number);
}

double OpCall::real(size_t i) const {
  const Value& v = arg(i);
  if (!v.isConst())
    throw Unsupported("argument '" + (i < names.size() ? names[i] : std::to_string(i)) + "' is not a constant number");
  return v.number;
}

bool OpCall::flag(size_t i) const { return !none(i) && real(i) != 0; }

std::vector<int64_t> OpCall::ints(size_t i) const {
  const Value& v = arg(i);
  std::vector<int64_t> out;
  if (v.kind == Value::Kind::List) {
    for (const Value& item : v.items) {
      if (!item.isConst()) throw Unsupported("a list argument with a symbolic element");
      out.push_back(static_cast<int64_t>(item.number));
    }
    return out;
  }
  if (v.isConst()) {  // int[2] stride=1 means [1, 1]
    size_t n = 1;
    const std::string& type = i < types.size() ? types[i] : "";
    if (size_t open = type.find('['); open != std::string::npos && type[open + 1] != ']')
      n = std::stoul(type.substr(open + 1));
    return std::vector<int64_t>(n, static_cast<int64_t>(v.number));
  }
  if (v.isNone()) return out;
  throw Unsupported("argument '" + (i < names.size() ? names[i] : std::to_string(i)) + "' is not an int list");
}

const TensorType& OpCall::out(size_t i) const {
  if (i >= outs.size()) throw Unsupported(target + ": the IR has no type for output " + std::to_string(i));
  return outs[i];
}

int64_t OpCall::dim(int64_t d, size_t rank) {
  int64_t r = static_cast<int64_t>(rank == 0 ? 1 : rank);
  if (d < -r || d >= r)
    throw Unsupported("dimension " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
  return d < 0 ? d + r : d;
}

}  // namespace dynrep::replay::lowering
