// store_mutator: mutations that know the store layout (frames, index, chunks, trailer, header), for
// libFuzzer as LLVMFuzzerCustomMutator/LLVMFuzzerCustomCrossOver and for reader_fuzz_driver.
//
// Thread-safety: not thread-safe; the donor pool is process-wide and the fuzzers mutate on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

extern "C" {
// libFuzzer's entry points. The mutator never makes an input larger than max_size; the result
// is the new size. Deterministic given the seed, the input and the donor pool (and, for the
// byte-level steps, LLVMFuzzerMutate).
size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed);
// Frames of data2 spliced into data1 when both parse as stores; bytes spliced otherwise.
size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2, uint8_t* out,
                                 size_t max_out_size, unsigned int seed);
// Byte-level mutation, layout-blind: libFuzzer's own under -fsanitize=fuzzer; reader_fuzz_driver
// and the tests define their own.
size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);
}

namespace dynrep::fuzz {

// splitmix64, so a seed gives the same inputs on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // REQUIRES: n > 0
  uint64_t below(uint64_t n) { return next() % n; }
  bool oneIn(uint64_t n) { return below(n) == 0; }
  template <typename T, size_t N>
  T pick(const T (&values)[N]) {
    return values[below(N)];
  }

 private:
  uint64_t state_;
};

// A boundary value for an integer field of `width` bytes (1, 2, 4 or 8): 0, 1, powers of two,
// the signed and unsigned limits and their neighbours.
uint64_t interestingValue(Rng& rng, int width);

// The mutator's families; each rewrites one part of the layout and re-seals what it must.
enum class Mutation {
  FramePayload,  // bytes of one frame's payload, checksum fixed
  ChunkHeader,   // key, sequence, raw size or flags of a blob chunk
  Zstd,          // the zstd frame and block headers inside a chunk
  Index,         // index table entries: offsets, sizes, counts, keys, rows
  TypedRecord,   // cereal size prefixes and the archive flag of a capture record
  Frames,        // frames inserted, dropped, swapped, re-kinded, torn, or imported from a donor
  Trailer,       // trailer dropped, pointed elsewhere, or made to wrap around
  Header,        // version, flags, writer version or magic, usually re-sealed
};
inline constexpr Mutation kAllMutations[] = {Mutation::FramePayload, Mutation::ChunkHeader, Mutation::Zstd,
                                             Mutation::Index,        Mutation::TypedRecord, Mutation::Frames,
                                             Mutation::Trailer,      Mutation::Header};
const char* mutationName(Mutation kind);

// One mutation of `kind` on `store`, written back with fresh checksums, index and trailer (unless
// the mutation's point is that they are wrong). An input too short for a header comes back as is.
// The result is at most `maxSize` bytes.
std::string mutateStore(Mutation kind, const std::string& store, size_t maxSize, uint64_t seed);

// Valid and half-written stores made by StoreWriter: finished (multi-chunk blobs), unclosed,
// no-trailer, torn, single-chunk and empty. Same seed, same bytes (the creation time is pinned).
std::vector<std::pair<std::string, std::string>> makeSeedStores(uint64_t seed);

// Stores whose frames the mutator may import into an input (frames from another store, e.g. a
// chunk of a blob the input lacks). Empty until set; LLVMFuzzerCustomMutator then uses
// makeSeedStores(1), so libFuzzer needs no corpus to reach the decoders.
void setDonorStores(const std::vector<std::string>& stores);

}  // namespace dynrep::fuzz
