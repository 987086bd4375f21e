// Codec tests for the fixed-size parts of the format: round trips and rejection of bad bytes.
#include "format.h"

#include <gtest/gtest.h>

#include <cstring>

namespace dynrep::format {
namespace {

TEST(FormatTest, HeaderRoundTrips) {
  Header h;
  h.writerVersion = "dynamo-replay 9.9.9";
  h.createdUnixSeconds = 1'790'000'000;
  uint8_t bytes[kHeaderSize];
  encodeHeader(h, bytes);
  EXPECT_EQ(0, std::memcmp(bytes, kMagic.data(), 8));
  Header back;
  ASSERT_TRUE(decodeHeader(bytes, "x", &back).isOk());
  EXPECT_EQ(back.writerVersion, "dynamo-replay 9.9.9");
  EXPECT_EQ(back.createdUnixSeconds, 1'790'000'000u);
  EXPECT_EQ(back.major, kMajorVersion);
}

TEST(FormatTest, HeaderRejectsWrongMagicFlipsAndNewerMajor) {
  uint8_t bytes[kHeaderSize];
  encodeHeader(Header{}, bytes);
  Header h;
  uint8_t bad[kHeaderSize];
  std::memcpy(bad, bytes, kHeaderSize);
  bad[1] = 'X';
  Status s = decodeHeader(bad, "f.dynrep", &h);
  EXPECT_EQ(s.code(), Status::Code::Corruption);
  EXPECT_NE(s.message().find("f.dynrep: not a dynamo-replay store"), std::string::npos) << s.message();

  std::memcpy(bad, bytes, kHeaderSize);
  bad[20] ^= 0x04;  // inside the writer version
  s = decodeHeader(bad, "f.dynrep", &h);
  EXPECT_EQ(s.code(), Status::Code::Corruption);
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();

  Header newer;
  newer.major = kMajorVersion + 1;
  newer.minor = 4;
  encodeHeader(newer, bad);
  s = decodeHeader(bad, "f.dynrep", &h);
  EXPECT_EQ(s.code(), Status::Code::NotSupported);
  EXPECT_NE(s.message().find("format version 2.4 is not supported (this reader reads 1.x)"), std::string::npos)
      << s.message();
}

TEST(FormatTest, FrameChecksumCoversKindAndLength) {
  const char payload[] = "abc";
  uint64_t a = frameChecksum(3, 16, 0, payload);
  EXPECT_NE(a, frameChecksum(3, 17, 0, payload));
  EXPECT_NE(a, frameChecksum(2, 16, 0, payload));
  EXPECT_NE(a, frameChecksum(3, 16, 1, payload));
}

TEST(FormatTest, IndexRoundTripsAndRejectsOutOfRangeEntries) {
  Index idx;
  idx.records.push_back({64, 10, 16});
  BlobKey k1 = BlobKey::of("a"), k2 = BlobKey::of("b");
  if (k2 < k1) std::swap(k1, k2);
  idx.chunks.push_back({90, 40, 1});
  idx.chunks.push_back({146, 40, 1});
  idx.blobs.push_back({k1, 1, 12, 0, 1});
  idx.blobs.push_back({k2, 1, 12, 1, 1});
  std::string bytes = encodeIndex(idx);
  Index back;
  ASSERT_TRUE(decodeIndex(bytes, 1000, &back).isOk());
  EXPECT_EQ(back.blobs[1].key, k2);
  EXPECT_EQ(back.chunks[1].offset, 146u);
  // A limit that cuts the last chunk off makes the index corrupt.
  EXPECT_EQ(decodeIndex(bytes, 190, &back).code(), Status::Code::Corruption);
  // Unsorted blob table.
  std::swap(idx.blobs[0], idx.blobs[1]);
  EXPECT_EQ(decodeIndex(encodeIndex(idx), 1000, &back).code(), Status::Code::Corruption);
  // Blobs whose chunk ranges overlap name more chunks than exist: refused, checked in linear time.
  std::swap(idx.blobs[0], idx.blobs[1]);
  idx.blobs[0].chunkCount = 2;
  idx.blobs[0].rawSize = 2;
  EXPECT_EQ(decodeIndex(encodeIndex(idx), 1000, &back).code(), Status::Code::Corruption);
  // Truncated payload.
  EXPECT_EQ(decodeIndex(bytes.substr(0, bytes.size() - 1), 1000, &back).code(), Status::Code::Corruption);
}

TEST(FormatTest, TrailerDetectsDamage) {
  uint8_t bytes[kTrailerSize];
  encodeTrailer(Trailer{4096, 128}, bytes);
  Trailer t;
  ASSERT_TRUE(decodeTrailer(bytes, &t));
  EXPECT_EQ(t.indexOffset, 4096u);
  bytes[3] ^= 1;
  EXPECT_FALSE(decodeTrailer(bytes, &t));
}

TEST(BlobKeyTest, HexRoundTripsAndMatchesXxh128Canonical) {
  // xxhsum -H2 of the empty input prints 99aa06d3014798d86001c324468d497f.
  EXPECT_EQ(BlobKey::of("").hex(), "99aa06d3014798d86001c324468d497f");
  BlobKey k = BlobKey::of("hello");
  EXPECT_EQ(BlobKey::fromHex(k.hex()), k);
  EXPECT_FALSE(BlobKey::fromHex("xyz").has_value());
  BlobHasher h;
  h.update("hel", 3);
  h.update("lo", 2);
  EXPECT_EQ(h.finish(), k);
}

}  // namespace
}  // namespace dynrep::format
