// store_mutator_test: every mutation family on every seed store gives a store the reader rejects
// or reads (the fuzz target aborts on a broken invariant), and the mutator follows from its seed.
#include "tests/fuzz/store_mutator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "dynrep/store/reader.h"
#include "store/testing/temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// The byte-level step libFuzzer would provide: here a function of the bytes alone, so the
// mutator's output depends on nothing but its input and seed.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  if (size == 0) {
    data[0] = 0x5a;
    return 1;
  }
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  data[h % size] ^= uint8_t(1u << ((h >> 32) % 8));
  return size;
}

namespace dynrep::fuzz {
namespace {

constexpr size_t kMaxSize = 64 << 10;
constexpr uint64_t kSeedsPerStore = 40;

const uint8_t* bytesOf(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

class StoreMutatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stores_ = new std::vector<std::pair<std::string, std::string>>(makeSeedStores(1));
    std::vector<std::string> bytes;
    for (const auto& [name, store] : *stores_) bytes.push_back(store);
    setDonorStores(bytes);
  }
  static void TearDownTestSuite() {
    delete stores_;
    stores_ = nullptr;
  }

  static const std::string& store(const std::string& name) {
    for (const auto& [n, bytes] : *stores_)
      if (n == name) return bytes;
    ADD_FAILURE() << "no seed store named " << name;
    return stores_->front().second;
  }

  enum class Verdict { Rejected, Flagged, Clean };

  // What the reader makes of `bytes`: refused at open, opened with problems verify() finds, or
  // clean (every checksum and cross-check passed).
  Verdict check(const std::string& bytes) {
    std::string path = dir_.file("mutant.dynrep");
    testing::writeFile(path, bytes);
    Result<std::unique_ptr<StoreReader>> reader = StoreReader::open(path);
    if (!reader.isOk()) return Verdict::Rejected;
    return (*reader)->verify().empty() ? Verdict::Clean : Verdict::Flagged;
  }

  static std::vector<std::pair<std::string, std::string>>* stores_;
  testing::TempDir dir_;
};

std::vector<std::pair<std::string, std::string>>* StoreMutatorTest::stores_ = nullptr;

TEST_F(StoreMutatorTest, SeedStoresCoverFinishedAndHalfWrittenStores) {
  std::set<std::string> names;
  for (const auto& [name, bytes] : *stores_) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"finished", "unclosed", "no-trailer", "torn", "single-chunk", "empty"}));
  for (const auto& [name, bytes] : *stores_) {
    if (name == "finished" || name == "single-chunk" || name == "empty") {
      EXPECT_EQ(check(bytes), Verdict::Clean) << name;
    }
  }
}

// The reader survives every family, and each family both changes stores and, for some seeds,
// makes one the reader still opens: the re-sealed checksums let it past the framing checks.
// (Some families never make an unopenable store: without a trailer the reader scans frames.)
TEST_F(StoreMutatorTest, EveryFamilyGivesStoresTheReaderRejectsOrReads) {
  size_t rejectedByAny = 0;
  for (Mutation kind : kAllMutations) {
    size_t changed = 0, counts[3] = {0, 0, 0};
    for (const auto& [name, store] : *stores_) {
      for (uint64_t seed = 0; seed < kSeedsPerStore; ++seed) {
        std::string mutant = mutateStore(kind, store, kMaxSize, seed);
        ASSERT_LE(mutant.size(), kMaxSize);
        LLVMFuzzerTestOneInput(bytesOf(mutant), mutant.size());  // aborts on a reader bug
        if (mutant == store) continue;
        ++changed;
        ++counts[int(check(mutant))];
      }
    }
    SCOPED_TRACE(mutationName(kind));
    std::printf("%-14s %4zu changed: %4zu rejected, %4zu flagged, %4zu clean\n", mutationName(kind), changed, counts[0],
                counts[1], counts[2]);
    EXPECT_GT(changed, kSeedsPerStore) << "the family seldom changes a store";
    EXPECT_GT(counts[1] + counts[2], 0u) << "no mutant gets past the reader's open checks";
    EXPECT_GT(counts[0] + counts[1], 0u) << "the reader notices none of the family's damage";
    rejectedByAny += counts[0];
  }
  EXPECT_GT(rejectedByAny, 0u);
}

TEST_F(StoreMutatorTest, SameSeedSameMutant) {
  const std::string& finished = store("finished");
  for (Mutation kind : kAllMutations) {
    std::set<std::string> distinct;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::string once = mutateStore(kind, finished, kMaxSize, seed);
      EXPECT_EQ(once, mutateStore(kind, finished, kMaxSize, seed)) << mutationName(kind) << " seed " << seed;
      distinct.insert(once);
    }
    EXPECT_GT(distinct.size(), 1u) << mutationName(kind) << ": the seed changes nothing";
  }
}

TEST_F(StoreMutatorTest, CustomMutatorIsAFunctionOfInputAndSeed) {
  const std::string& finished = store("finished");
  std::set<std::string> distinct;
  for (unsigned int seed = 0; seed < 50; ++seed) {
    std::string a(kMaxSize, '\0'), b(kMaxSize, '\0');
    a.replace(0, finished.size(), finished);
    b.replace(0, finished.size(), finished);
    a.resize(LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(a.data()), finished.size(), kMaxSize, seed));
    b.resize(LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(b.data()), finished.size(), kMaxSize, seed));
    ASSERT_EQ(a, b) << "seed " << seed;
    distinct.insert(a);
    LLVMFuzzerTestOneInput(bytesOf(a), a.size());
  }
  EXPECT_GT(distinct.size(), 25u);
}

TEST_F(StoreMutatorTest, CrossOverIsAFunctionOfInputsAndSeed) {
  const std::string& first = store("finished");
  const std::string& second = store("single-chunk");
  std::set<std::string> distinct;
  for (unsigned int seed = 0; seed < 50; ++seed) {
    std::string a(kMaxSize, '\0'), b(kMaxSize, '\0');
    a.resize(LLVMFuzzerCustomCrossOver(bytesOf(first), first.size(), bytesOf(second), second.size(),
                                       reinterpret_cast<uint8_t*>(a.data()), kMaxSize, seed));
    b.resize(LLVMFuzzerCustomCrossOver(bytesOf(first), first.size(), bytesOf(second), second.size(),
                                       reinterpret_cast<uint8_t*>(b.data()), kMaxSize, seed));
    ASSERT_EQ(a, b) << "seed " << seed;
    distinct.insert(a);
    LLVMFuzzerTestOneInput(bytesOf(a), a.size());
  }
  EXPECT_GT(distinct.size(), 25u);
}

// libFuzzer may ask for less room than a store needs, and starts from an empty input.
TEST_F(StoreMutatorTest, KeepsToMaxSizeAndStartsFromNothing) {
  for (unsigned int seed = 0; seed < 50; ++seed) {
    std::string small = store("finished").substr(0, 100);
    EXPECT_LE(LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(small.data()), small.size(), 100, seed), 100u);
  }
  size_t storesFromNothing = 0;
  for (unsigned int seed = 0; seed < 50; ++seed) {
    std::string input(kMaxSize, '\0');
    input.resize(LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(input.data()), 0, kMaxSize, seed));
    LLVMFuzzerTestOneInput(bytesOf(input), input.size());
    if (check(input) != Verdict::Rejected) ++storesFromNothing;
  }
  EXPECT_GT(storesFromNothing, 0u);
}

}  // namespace
}  // namespace dynrep::fuzz
