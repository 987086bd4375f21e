// Reading and writing the tensor file replay-run hands to other tools (--dump-raw).
#include "dynrep/replay/query/tensor_file.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dynrep::replay {

namespace {

using nlohmann::json;

constexpr const char* kMagic = "dynrep-tensors 1";

json describe(const std::vector<RawValue>& values, uint64_t* offset) {
  json out = json::array();
  for (const RawValue& v : values) {
    if (v.kind == "tensor") {
      out.push_back({{"dtype", v.dtype}, {"shape", v.shape}, {"offset", *offset}, {"bytes", v.bytes.size()}});
      *offset += v.bytes.size();
    } else if (v.kind == "int") {
      out.push_back({{"int", v.integer}});
    } else if (v.kind == "float") {
      out.push_back({{"float", v.real}});
    } else if (v.kind == "bool") {
      out.push_back({{"bool", v.integer != 0}});
    } else {
      out.push_back(json::object());
    }
  }
  return out;
}

std::vector<RawValue> read(const json& entries, const std::string& data) {
  std::vector<RawValue> out;
  for (const json& e : entries) {
    RawValue v;
    if (e.contains("dtype")) {
      v.kind = "tensor";
      v.dtype = e["dtype"].get<std::string>();
      v.shape = e["shape"].get<std::vector<int64_t>>();
      uint64_t offset = e["offset"].get<uint64_t>(), bytes = e["bytes"].get<uint64_t>();
      if (offset + bytes > data.size()) throw std::runtime_error("a tensor file shorter than its header says");
      v.bytes = data.substr(offset, bytes);
    } else if (e.contains("int")) {
      v.kind = "int", v.integer = e["int"].get<int64_t>();
    } else if (e.contains("float")) {
      v.kind = "float", v.real = e["float"].get<double>();
    } else if (e.contains("bool")) {
      v.kind = "bool", v.integer = e["bool"].get<bool>();
    } else {
      v.kind = "none";
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

Status writeTensorFile(const std::string& path, const TensorFile& file) {
  uint64_t offset = 0;
  json header = {{"inputs", describe(file.inputs, &offset)},
                 {"outputs", describe(file.outputs, &offset)},
                 {"random", json::array()}};
  for (const auto& [node, values] : file.random)
    header["random"].push_back({{"node", node}, {"values", describe(values, &offset)}});
  std::ofstream out(path, std::ios::binary);
  out << kMagic << "\n" << header.dump() << "\n";
  std::vector<const std::vector<RawValue>*> all = {&file.inputs, &file.outputs};
  for (const auto& entry : file.random) all.push_back(&entry.second);
  for (const auto* values : all)
    for (const RawValue& v : *values) out.write(v.bytes.data(), static_cast<std::streamsize>(v.bytes.size()));
  if (!out) return Status::ioError("cannot write " + path);
  return Status::ok();
}

Result<TensorFile> readTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string magic, header;
  if (!in || !std::getline(in, magic) || magic != kMagic || !std::getline(in, header))
    return Status::corruption(path + " is not a tensor file (" + kMagic + ")");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json h = json::parse(header, nullptr, false);
  if (!h.is_object()) return Status::corruption(path + ": unreadable header");
  TensorFile file;
  try {
    file.inputs = read(h.value("inputs", json::array()), data);
    file.outputs = read(h.value("outputs", json::array()), data);
    for (const json& r : h.value("random", json::array()))
      file.random.emplace_back(r.value("node", ""), read(r.value("values", json::array()), data));
  } catch (const std::exception& e) {  // a field of another type, or data shorter than the header says
    return Status::corruption(path + ": " + e.what());
  }
  return file;
}

}  // namespace dynrep::replay
