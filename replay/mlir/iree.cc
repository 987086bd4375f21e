// IREE's tools as processes: compile, call and time a lowered module. Values cross as files:
// inputs as raw bytes with their shape on the command line, results as NumPy files (which carry
// their shape, so a size only known at run time comes back), bfloat16 results (NumPy has no
// bfloat16, so IREE writes no file of one) as the text iree-run-module prints: the shape, then
// each value with 6 significant digits, which a bfloat16 (8 bits of mantissa) rounds back to.
#include "iree.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dynrep::replay::lowering {

const char kIreeInstall[] = "pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0";

namespace {

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

std::string findTool(const std::string& name, const std::vector<std::string>& folders) {
  std::vector<std::string> candidates;
  if (const char* dir = std::getenv("DYNREP_IREE_TOOLS"))  // the only place looked at when set
    return executable(std::string(dir) + "/" + name) ? std::string(dir) + "/" + name : "";
  for (const std::string& f : folders) candidates.push_back(f + "/" + name);
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty()) candidates.push_back(dir + "/" + name);
  }
  for (const std::string& c : candidates)
    if (executable(c)) return c;
  return "";
}

// IREE's element type names on its command line: f32, bf16, i1, cf32 (complex<f32>).
const char* ireeElementType(DType t) {
  switch (t) {
    case DType::C64: return "cf32";
    case DType::C128: return "cf64";
    case DType::U8: return "i8";  // the lowered signature's i8: the bytes are the same
    default: return elementType(t);
  }
}

// A result type of the lowered function: tensor<?x4xf32>, tensor<f32>, i64, f64, i1.
struct ResultType {
  bool tensor = false;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;  // -1: dynamic
};

DType dtypeOfElement(const std::string& e) {
  static const std::pair<const char*, DType> names[] = {
      {"f64", DType::F64}, {"f32", DType::F32},          {"f16", DType::F16},           {"bf16", DType::BF16},
      {"i64", DType::I64}, {"i32", DType::I32},          {"i16", DType::I16},           {"i8", DType::I8},
      {"i1", DType::Bool}, {"complex<f32>", DType::C64}, {"complex<f64>", DType::C128},
  };
  for (const auto& [name, dtype] : names)
    if (e == name) return dtype;
  throw std::runtime_error("IREE: a result of element type " + e + ", which is not read back");
}

ResultType parseResultType(const std::string& text) {
  ResultType r;
  if (text.rfind("tensor<", 0) != 0) {
    r.dtype = dtypeOfElement(text);
    return r;
  }
  r.tensor = true;
  std::string body = text.substr(7, text.size() - 8);
  size_t start = 0;
  for (size_t x; (x = body.find('x', start)) != std::string::npos && body.compare(start, 7, "complex") != 0;
       start = x + 1) {
    std::string dim = body.substr(start, x - start);
    r.dims.push_back(dim == "?" ? -1 : std::stoll(dim));
  }
  r.dtype = dtypeOfElement(body.substr(start));
  return r;
}

// A NumPy file as IREE writes one: its dtype code ("<f4", "|b1"), shape and data.
struct NumpyFile {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
};

NumpyFile readNumpy(const std::string& path) {
  std::string bytes = readFile(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error("IREE wrote no result file " + path);
  size_t headerLength = 0, at = 0;
  if (bytes[6] == 1) {
    headerLength = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8, at = 10;
  } else {
    if (bytes.size() < 12) throw std::runtime_error("IREE's result file " + path + " is truncated");
    for (int i = 0; i < 4; ++i) headerLength |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    at = 12;
  }
  if (at + headerLength > bytes.size()) throw std::runtime_error("IREE's result file " + path + " is truncated");
  std::string header = bytes.substr(at, headerLength);
  NumpyFile out;
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr': *'([^']*)'")))
    throw std::runtime_error("IREE's result file " + path + " has no dtype");
  out.descr = m[1];
  if (!std::regex_search(header, m, std::regex("'shape': *\\(([^)]*)\\)")))
    throw std::runtime_error("IREE's result file " + path + " has no shape");
  std::stringstream dims(m[1].str());
  for (std::string d; std::getline(dims, d, ',');)
    if (d.find_first_not_of(' ') != std::string::npos) out.shape.push_back(std::stoll(d));
  out.data = bytes.substr(at + headerLength);
  return out;
}

uint16_t toBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return 0x7FC0;                       // nan
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);  // to nearest, ties to even
}

// The bfloat16 tensors iree-run-module printed (`2x3xbf16=[1 2 3][4 5 6]`), in order.
std::vector<HostValue> printedBfloat16(const std::string& text) {
  std::vector<HostValue> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t eq = line.find("bf16=");
    if (eq == std::string::npos || line.find_first_not_of("0123456789x") != eq) continue;
    std::vector<int64_t> shape;
    std::stringstream dims(line.substr(0, eq));
    for (std::string d; std::getline(dims, d, 'x');)
      if (!d.empty()) shape.push_back(std::stoll(d));
    HostValue v = HostValue::tensor(DType::BF16, shape);
    std::string values = line.substr(eq + 5);
    std::replace(values.begin(), values.end(), '[', ' ');
    std::replace(values.begin(), values.end(), ']', ' ');
    std::stringstream numbers(values);
    size_t i = 0;
    for (std::string n; numbers >> n && i < v.numel(); ++i) {
      uint16_t b = toBfloat16(std::strtof(n.c_str(), nullptr));
      std::memcpy(v.data.data() + 2 * i, &b, 2);
    }
    if (i != v.numel()) throw std::runtime_error("iree-run-module printed a bfloat16 result of the wrong size");
    out.push_back(std::move(v));
  }
  return out;
}

// A result read back as the JIT would return it.
HostValue resultFrom(const std::string& path, const ResultType& type) {
  NumpyFile file = readNumpy(path);
  if (!type.tensor) {
    HostValue v;
    int64_t integer = 0;
    double real = 0;
    if (file.descr == "<f8") std::memcpy(&real, file.data.data(), std::min<size_t>(8, file.data.size()));
    if (file.descr == "<f4") {
      float f = 0;
      std::memcpy(&f, file.data.data(), std::min<size_t>(4, file.data.size()));
      real = f;
    }
    if (file.descr == "<i8") std::memcpy(&integer, file.data.data(), std::min<size_t>(8, file.data.size()));
    if (file.descr == "<i4" || file.descr == "|b1" || file.descr == "|i1") {
      int32_t i = 0;
      std::memcpy(&i, file.data.data(), std::min<size_t>(file.descr == "<i4" ? 4 : 1, file.data.size()));
      integer = i;
    }
    if (type.dtype == DType::F64 || type.dtype == DType::F32)
      v.kind = HostValue::Kind::Float, v.real = real;
    else
      v.kind = type.dtype == DType::Bool ? HostValue::Kind::Bool : HostValue::Kind::Int, v.integer = integer;
    return v;
  }
  HostValue v = HostValue::tensor(type.dtype, file.shape);
  if (file.data.size() != v.data.size())
    throw std::runtime_error("IREE's result " + path + " holds " + std::to_string(file.data.size()) +
                             " bytes where its shape needs " + std::to_string(v.data.size()));
  std::memcpy(v.data.data(), file.data.data(), file.data.size());
  return v;
}

std::string number(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// The last lines of a tool's stderr, for a message.
std::string lastLines(const std::string& text, size_t most = 4000) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.size() <= most ? t : "..." + t.substr(t.size() - most);
}

// The lines of iree-compile's output that say "error:", or its last lines where none does.
std::string firstErrors(const std::string& text) {
  std::string errors;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line) && errors.size() < 2000;)
    if (line.find("error:") != std::string::npos) errors += (errors.empty() ? "" : "\n") + line.substr(0, 500);
  return errors.empty() ? lastLines(text) : errors;
}

}  // namespace

std::string IreeTools::missing() const {
  std::string names;
  for (const auto& [path, name] : {std::pair{compile, "iree-compile"}, std::pair{run, "iree-run-module"},
                                   std::pair{benchmark, "iree-benchmark-module"}})
    if (path.empty()) names += (names.empty() ? "" : ", ") + std::string(name);
  if (names.empty()) return "";
  const char* dir = std::getenv("DYNREP_IREE_TOOLS");
  std::string where = dir ? std::string("in $DYNREP_IREE_TOOLS (") + dir + ")" : "beside replay-mlir or on PATH";
  return "IREE is not installed (" + names + " not found " + where + "): " + kIreeInstall;
}

IreeTools findIree(const std::vector<std::string>& folders) {
  return {findTool("iree-compile", folders), findTool("iree-run-module", folders),
          findTool("iree-benchmark-module", folders)};
}

std::vector<std::string> ireeCompileFlags() {
  return {"--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
          "--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling=true", "--iree-input-demote-f64-to-f32=false"};
}

std::unique_ptr<IreeModule> IreeModule::compile(const IreeTools& tools, const std::string& text) {
  if (!tools.found()) throw std::runtime_error(tools.missing());
  std::unique_ptr<IreeModule> m(new IreeModule(tools));
  std::string source = m->folder_.file("module.mlir"), log = m->folder_.file("compile.log");
  m->vmfb_ = m->folder_.file("module.vmfb");
  std::ofstream(source) << text;
  // Data tiling first; where IREE cannot tile a graph (it refuses some with dynamic sizes: "exceeded
  // stack allocation limit"), the same module without it.
  std::vector<std::string> tiled = ireeCompileFlags(), untiled;
  for (const std::string& flag : tiled)
    if (flag != "--iree-opt-data-tiling=true") untiled.push_back(flag);
  int status = -1;
  for (std::vector<std::string> flags : {tiled, untiled}) {
    auto run = [&] {
      std::vector<std::string> argv = {tools.compile};
      argv.insert(argv.end(), flags.begin(), flags.end());
      argv.insert(argv.end(), {source, "-o", m->vmfb_});
      return spawn(argv, log, log);
    };
    status = run();
    // IREE's embedded linker has no libm: a float64 tanh, erf, ... is an undefined symbol there.
    // Linked by the system's linker instead, the module loads libm beside it.
    if (status != 0 && readFile(log).find("undefined symbol") != std::string::npos) {
      flags.push_back("--iree-llvmcpu-link-embedded=false");
      status = run();
    }
    if (status == 0) {
      m->flags_ = flags;
      return m;
    }
  }
  throw std::runtime_error("iree-compile refused the module: " + firstErrors(readFile(log)));
}

std::vector<std::string> IreeModule::inputFlags(const std::vector<HostValue>& inputs) const {
  std::vector<std::string> flags;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostValue& v = inputs[i];
    switch (v.kind) {
      case HostValue::Kind::Tensor: {
        std::string path = folder_.file("input" + std::to_string(i) + ".bin"), shape;
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(v.data.data()), static_cast<std::streamsize>(v.data.size()));
        for (int64_t d : v.shape) shape += std::to_string(d) + "x";
        flags.push_back("--input=" + shape + ireeElementType(v.dtype) + "=@" + path);
        break;
      }
      case HostValue::Kind::Int:
      case HostValue::Kind::Bool: flags.push_back("--input=" + std::to_string(v.integer)); break;
      case HostValue::Kind::Float: flags.push_back("--input=" + number(v.real)); break;
      case HostValue::Kind::None: throw std::runtime_error("IREE: input " + std::to_string(i) + " has no value");
    }
  }
  return flags;
}

std::vector<std::string> IreeModule::runArgs(const std::string& tool, const std::string& function,
                                             const std::vector<HostValue>& inputs) const {
  std::vector<std::string> argv = {tool, "--module=" + vmfb_, "--device=local-task", "--function=" + function};
  for (std::string& flag : inputFlags(inputs)) argv.push_back(std::move(flag));
  return argv;
}

std::vector<HostValue> IreeModule::call(const std::string& function, const std::vector<HostValue>& inputs,
                                        const std::vector<std::string>& resultTypes) const {
  std::vector<std::string> argv = runArgs(tools_.run, function, inputs);
  std::vector<std::string> paths;
  std::vector<ResultType> types;
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    types.push_back(parseResultType(resultTypes[i]));
    bool printed = types.back().tensor && types.back().dtype == DType::BF16;
    paths.push_back(printed ? "" : folder_.file("result" + std::to_string(i) + ".npy"));
    argv.push_back(printed ? "--output=-" : "--output=@" + paths.back());
  }
  std::string printedPath = folder_.file("run.out"), log = folder_.file("run.log");
  int status = spawn(argv, printedPath, log);
  if (status != 0)
    throw std::runtime_error("iree-run-module failed (exit " + std::to_string(status) +
                             "): " + lastLines(readFile(log)));
  std::vector<HostValue> printed = printedBfloat16(readFile(printedPath)), out;
  size_t next = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!paths[i].empty()) {
      out.push_back(resultFrom(paths[i], types[i]));
    } else if (next < printed.size()) {
      out.push_back(std::move(printed[next++]));
    } else {
      throw std::runtime_error("iree-run-module printed no value for bfloat16 result " + std::to_string(i));
    }
  }
  return out;
}

double IreeModule::secondsPerCall(const std::string& function, const std::vector<HostValue>& inputs) const {
  std::vector<std::string> argv = runArgs(tools_.benchmark, function, inputs);
  argv.insert(argv.end(), {"--benchmark_format=json", "--benchmark_repetitions=5", "--benchmark_min_time=0.2s"});
  std::string out = folder_.file("benchmark.json"), log = folder_.file("benchmark.log");
  int status = spawn(argv, out, log);
  nlohmann::json doc = nlohmann::json::parse(readFile(out), nullptr, false);
  if (status != 0 || !doc.is_object() || !doc.contains("benchmarks"))
    throw std::runtime_error("iree-benchmark-module failed (exit " + std::to_string(status) +
                             "): " + lastLines(readFile(log)));
  for (const nlohmann::json& b : doc["benchmarks"]) {
    if (b.value("aggregate_name", "") != "median") continue;
    std::string unit = b.value("time_unit", "ns");
    double scale = unit == "s" ? 1 : unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : 1e-9;
    return b.value("real_time", 0.0) * scale;
  }
  throw std::runtime_error("iree-benchmark-module reported no median");
}

}  // namespace dynrep::replay::lowering
