// reader_fuzz_driver: runs LLVMFuzzerTestOneInput without libFuzzer (g++ builds, CI), feeding it
// mutants from store_mutator for a fixed time; deterministic given --seed, dies on the first bug.
//
//   reader_fuzz_driver [--seconds N] [--runs N] [--seed S] [--crash-dir DIR] [--write-seeds DIR]
//                      [--timeout N] [--malloc-limit-mb N] SEED_FILES_OR_DIRS...
//
// It plays libFuzzer's part: it calls LLVMFuzzerCustomMutator and LLVMFuzzerCustomCrossOver, and
// defines LLVMFuzzerMutate, the layout-blind byte mutations they fall back to.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>

#include "tests/fuzz/store_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Present only in sanitizer builds; lets a sanitizer report save the input before exiting.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

using dynrep::fuzz::Rng;

// ---------------------------------------------------------------------------------------
// Failure capture: the input being run, saved by whatever kills the process.

std::atomic<const uint8_t*> gInputData{nullptr};
std::atomic<size_t> gInputSize{0};
char gCrashDir[4096] = ".";
std::atomic<bool> gDumped{false};

void writeStderr(const char* s) { (void)!::write(2, s, std::strlen(s)); }

// Async-signal-safe: no allocation, no stdio.
void dumpInput(const char* why) {
  if (gDumped.exchange(true)) return;
  const uint8_t* data = gInputData.load();
  size_t size = gInputSize.load();
  if (!data) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a names the file by content, like libFuzzer
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  char path[4200];
  size_t n = 0;
  for (const char* p = gCrashDir; *p && n < 4096; ++p) path[n++] = *p;
  const char* prefix = "/crash-";
  for (const char* p = prefix; *p; ++p) path[n++] = *p;
  for (int i = 15; i >= 0; --i) path[n++] = "0123456789abcdef"[(h >> (4 * i)) & 15];
  path[n] = '\0';
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    for (size_t done = 0; done < size;) {
      ssize_t w = ::write(fd, data + done, size - done);
      if (w <= 0) break;
      done += size_t(w);
    }
    ::close(fd);
  }
  writeStderr("\nreader_fuzz_driver: ");
  writeStderr(why);
  writeStderr("; input saved to ");
  writeStderr(fd >= 0 ? path : "(nowhere: cannot create the file)");
  writeStderr("\n");
}

void onDeath() { dumpInput("sanitizer report"); }

void onSignal(int sig) {
  dumpInput(sig == SIGABRT   ? "abort"
            : sig == SIGSEGV ? "segmentation fault"
            : sig == SIGBUS  ? "bus error"
                             : "fatal signal");
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Names the exception the library let escape; the default handler says less.
void onTerminate() {
  if (std::type_info* t = abi::__cxa_current_exception_type()) {
    writeStderr("reader_fuzz_driver: uncaught exception of type ");
    writeStderr(t->name());
    writeStderr("\n");
  }
  dumpInput("uncaught exception");
  std::abort();
}

void installFailureHandlers() {
  std::set_terminate(onTerminate);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(onDeath);
  int signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (int sig : signals) {
    // A sanitizer's own SEGV handler prints the stack; keep it and rely on the death callback.
    if (sig != SIGABRT && __sanitizer_set_death_callback) continue;
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

// Like libFuzzer's -malloc_limit_mb: a 100-byte input that asks for gigabytes is a bug too.
std::atomic<size_t> gMallocLimit{0};

void* limitedAlloc(size_t size) {
  size_t limit = gMallocLimit.load(std::memory_order_relaxed);
  if (limit && size > limit) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "out-of-memory (operator new of %zu bytes exceeds the limit)", size);
    dumpInput(msg);
    std::abort();
  }
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
// ---------------------------------------------------------------------------------------
// Byte-level mutations, blind to the layout (libFuzzer's usual set): this driver's
// LLVMFuzzerMutate, which the store mutator calls for payload bytes and whole-file edits.

using dynrep::fuzz::interestingValue;

uint8_t* bytesOf(std::string& s) { return reinterpret_cast<uint8_t*>(s.data()); }
const uint8_t* bytesOf(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

void putLE(uint8_t* p, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t getLE(const uint8_t* p, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void mutateBytes(Rng& rng, std::string& s, const std::vector<std::string>& corpus, size_t maxLen) {
  switch (rng.below(11)) {
    case 0:  // flip one bit
      if (!s.empty()) s[rng.below(s.size())] ^= char(1u << rng.below(8));
      return;
    case 1:  // an interesting byte
      if (!s.empty()) s[rng.below(s.size())] = char(interestingValue(rng, 1));
      return;
    case 2:
    case 3: {  // an interesting u16/u32/u64, little- or big-endian
      int width = 2 << rng.below(3);
      if (s.size() < size_t(width)) return;
      uint64_t v = interestingValue(rng, width);
      if (rng.oneIn(4)) v = __builtin_bswap64(v) >> (64 - 8 * width);
      putLE(bytesOf(s) + rng.below(s.size() - width + 1), v, width);
      return;
    }
    case 4: {  // nudge an integer field
      int width = rng.oneIn(2) ? 4 : 8;
      if (s.size() < size_t(width)) return;
      uint8_t* p = bytesOf(s) + rng.below(s.size() - width + 1);
      putLE(p, getLE(p, width) + uint64_t(int64_t(rng.below(33)) - 16), width);
      return;
    }
    case 5:  // truncate
      s.resize(rng.below(s.size() + 1));
      return;
    case 6: {  // insert random or repeated bytes
      size_t n = 1 + rng.below(rng.oneIn(4) ? 256 : 16);
      if (s.size() + n > maxLen) return;
      std::string ins(n, char(interestingValue(rng, 1)));
      if (rng.oneIn(2))
        for (char& c : ins) c = char(rng.next());
      s.insert(rng.below(s.size() + 1), ins);
      return;
    }
    case 7: {  // delete a range
      if (s.empty()) return;
      size_t at = rng.below(s.size());
      s.erase(at, 1 + rng.below(std::min<size_t>(s.size() - at, rng.oneIn(4) ? 4096 : 32)));
      return;
    }
    case 8: {  // copy a range of the input over another place in it
      if (s.size() < 2) return;
      size_t from = rng.below(s.size()), to = rng.below(s.size());
      size_t n = 1 + rng.below(std::min(s.size() - from, s.size() - to));
      std::memmove(&s[to], &s[from], n);
      return;
    }
    case 9: {  // splice: this input's prefix, another's suffix
      const std::string& other = corpus[rng.below(corpus.size())];
      size_t cut = rng.below(s.size() + 1), from = rng.below(other.size() + 1);
      s = s.substr(0, cut) + other.substr(from);
      if (s.size() > maxLen) s.resize(maxLen);
      return;
    }
    case 10: {  // overwrite a range with bytes from the same place in another input
      const std::string& other = corpus[rng.below(corpus.size())];
      size_t n = std::min(s.size(), other.size());
      if (n == 0) return;
      size_t at = rng.below(n);
      size_t len = 1 + rng.below(std::min<size_t>(n - at, 256));
      std::memcpy(&s[at], &other[at], len);
      return;
    }
  }
}

// LLVMFuzzerMutate has no seed argument: its randomness and the inputs it splices with are the
// driver's, set once in main, so the whole run still follows from --seed.
Rng gByteRng(0);
std::vector<std::string> gCorpus;

// ---------------------------------------------------------------------------------------
// Seed files.

bool readFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// A directory contributes its *.dynrep files (tests/data also holds golden text); a file
// named on the command line is taken whatever it is.
void loadSeeds(const std::string& arg, std::vector<std::pair<std::string, std::string>>* seeds) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(arg, ec)) {
    for (auto it = fs::recursive_directory_iterator(arg, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec) && it->path().extension() == ".dynrep") files.push_back(it->path().string());
    std::sort(files.begin(), files.end());  // directory order is not deterministic
  } else {
    files.push_back(arg);
  }
  for (const std::string& f : files) {
    std::string bytes;
    if (!readFile(f, &bytes)) {
      std::fprintf(stderr, "reader_fuzz_driver: cannot read %s\n", f.c_str());
      std::exit(2);
    }
    seeds->emplace_back(f, std::move(bytes));
  }
}

// ---------------------------------------------------------------------------------------

std::atomic<int64_t> gRunStartMs{0};  // 0 while no input runs

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void run(const std::string& input) {
  gInputData.store(bytesOf(input));
  gInputSize.store(input.size());
  gRunStartMs.store(nowMs());
  LLVMFuzzerTestOneInput(bytesOf(input), input.size());
  gRunStartMs.store(0);
}

// A hang is a bug too; the watchdog saves the input that caused it.
void startWatchdog(int timeoutSeconds) {
  std::thread([timeoutSeconds] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      int64_t start = gRunStartMs.load();
      if (start != 0 && nowMs() - start > int64_t(timeoutSeconds) * 1000) {
        dumpInput("timeout: one input ran longer than --timeout");
        std::_Exit(70);
      }
    }
  }).detach();
}

int usage() {
  std::fprintf(stderr,
               "usage: reader_fuzz_driver [--seconds N] [--runs N] [--seed S] [--crash-dir DIR] [--write-seeds DIR]\n"
               "                          [--timeout N] [--malloc-limit-mb N] [SEED_FILES_OR_DIRS...]\n"
               "Runs every seed once, then mutants of them for N seconds (default 10, or no limit with\n"
               "--runs; 0 runs the seeds only) or until --runs mutants have run.\n");
  return 2;
}

// Folds an input into the run's digest, which two runs with one seed and --runs must share.
uint64_t fold(uint64_t digest, const std::string& input) {
  for (unsigned char c : input) digest = (digest ^ c) * 1099511628211ull;
  return (digest ^ input.size()) * 1099511628211ull;
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  mutateBytes(gByteRng, s, gCorpus, max_size);
  if (s.size() > max_size) s.resize(max_size);
  std::memcpy(data, s.data(), s.size());
  return s.size();
}

// Replaced globally so the limit covers the library's allocations, not just the driver's.
// Default visibility: libstdc++'s own allocations must pair with these deletes too.
#define DYNREP_FUZZ_EXPORT __attribute__((visibility("default")))
DYNREP_FUZZ_EXPORT void* operator new(size_t size) { return limitedAlloc(size); }
DYNREP_FUZZ_EXPORT void* operator new[](size_t size) { return limitedAlloc(size); }
DYNREP_FUZZ_EXPORT void operator delete(void* p) noexcept { std::free(p); }
DYNREP_FUZZ_EXPORT void operator delete[](void* p) noexcept { std::free(p); }
DYNREP_FUZZ_EXPORT void operator delete(void* p, size_t) noexcept { std::free(p); }
DYNREP_FUZZ_EXPORT void operator delete[](void* p, size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's buffer): a sanitizer's own would pair with our free.
DYNREP_FUZZ_EXPORT void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size ? size : 1);
}
DYNREP_FUZZ_EXPORT void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size ? size : 1);
}
DYNREP_FUZZ_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
DYNREP_FUZZ_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

int main(int argc, char** argv) {
  double seconds = -1;  // unset: 10, or no limit when --runs is given
  uint64_t runs = 0;    // 0: no limit
  uint64_t seed = 1;
  int timeout = 10;
  size_t mallocLimitMb = 2048;
  std::string writeSeedsDir;
  std::vector<std::string> seedArgs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "reader_fuzz_driver: %s needs a value\n", a.c_str());
        std::exit(usage());
      }
      return argv[++i];
    };
    if (a == "--seconds")
      seconds = std::atof(value());
    else if (a == "--runs")
      runs = std::strtoull(value(), nullptr, 0);
    else if (a == "--seed")
      seed = std::strtoull(value(), nullptr, 0);
    else if (a == "--timeout")
      timeout = std::atoi(value());
    else if (a == "--malloc-limit-mb")
      mallocLimitMb = std::strtoull(value(), nullptr, 0);
    else if (a == "--crash-dir")
      std::snprintf(gCrashDir, sizeof gCrashDir, "%s", value());
    else if (a == "--write-seeds")
      writeSeedsDir = value();
    else if (a == "-h" || a == "--help")
      return usage();
    else if (a.size() > 1 && a[0] == '-')
      return usage();
    else
      seedArgs.push_back(a);
  }
  bool timed = seconds >= 0 || runs == 0;
  if (seconds < 0) seconds = runs ? 0 : 10;
  ::mkdir(gCrashDir, 0755);
  installFailureHandlers();
  gMallocLimit.store(mallocLimitMb << 20);
  if (timeout > 0) startWatchdog(timeout);

  Rng rng(seed);
  std::vector<std::pair<std::string, std::string>> seeds = dynrep::fuzz::makeSeedStores(seed);
  if (!writeSeedsDir.empty()) {
    std::filesystem::create_directories(writeSeedsDir);
    for (const auto& [name, bytes] : seeds)
      std::ofstream(writeSeedsDir + "/" + name + ".dynrep", std::ios::binary) << bytes;
  }
  size_t generated = seeds.size();
  for (const std::string& a : seedArgs) loadSeeds(a, &seeds);

  size_t largest = 0;
  for (const auto& [name, bytes] : seeds) {
    gCorpus.push_back(bytes);
    largest = std::max(largest, bytes.size());
  }
  // The seeds are the mutator's donors too: frames it imports come from the stores fuzzed here.
  dynrep::fuzz::setDonorStores(gCorpus);
  gByteRng = Rng(rng.next());
  size_t maxLen = std::max<size_t>(64 << 10, 2 * largest);

  // Every seed runs once as is: golden and malformed stores are regression tests too.
  uint64_t digest = 1469598103934665603ull;
  for (const std::string& s : gCorpus) {
    run(s);
    digest = fold(digest, s);
  }
  uint64_t execs = gCorpus.size();

  int64_t start = nowMs(), deadline = start + int64_t(seconds * 1000), nextReport = start + 10000;
  for (uint64_t mutants = 0; (!timed || seconds > 0) && (runs == 0 || mutants < runs); ++mutants) {
    // Checked every run: one input can take a second when the reader allocates what it is told.
    int64_t now = nowMs();
    if (timed && now >= deadline) break;
    if (now >= nextReport) {
      std::fprintf(stderr, "reader_fuzz_driver: %llu executions, %.0f/s\n", (unsigned long long)execs,
                   double(execs) * 1000.0 / double(now - start));
      nextReport += 10000;
    }
    // As libFuzzer does: mostly the custom mutator on one corpus input, now and then a crossover.
    const std::string& parent = gCorpus[rng.below(gCorpus.size())];
    unsigned int mutationSeed = unsigned(rng.next());
    std::string input(maxLen, '\0');
    size_t size;
    if (rng.oneIn(8)) {
      const std::string& other = gCorpus[rng.below(gCorpus.size())];
      size = LLVMFuzzerCustomCrossOver(bytesOf(parent), parent.size(), bytesOf(other), other.size(), bytesOf(input),
                                       maxLen, mutationSeed);
    } else {
      size_t parentSize = std::min(parent.size(), maxLen);
      std::memcpy(input.data(), parent.data(), parentSize);
      size = LLVMFuzzerCustomMutator(bytesOf(input), parentSize, maxLen, mutationSeed);
    }
    input.resize(size);
    run(input);
    digest = fold(digest, input);
    ++execs;
  }
  double elapsed = double(nowMs() - start) / 1000.0;
  std::printf("reader_fuzz_driver: seed %llu: %llu executions in %.1f s (%.0f/s); %zu seeds (%zu generated)\n",
              (unsigned long long)seed, (unsigned long long)execs, elapsed, elapsed > 0 ? double(execs) / elapsed : 0.0,
              gCorpus.size(), generated);
  std::printf("reader_fuzz_driver: inputs digest %016llx\n", (unsigned long long)digest);
  return 0;
}
