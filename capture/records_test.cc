// Typed records: encode/decode round trips, and damaged payloads decode to a Corruption status.
#include "dynrep/capture/records.h"

#include <gtest/gtest.h>

namespace dynrep::capture {
namespace {

TEST(RecordsTest, ManifestAndArtifactRoundTrip) {
  Manifest m{"dynamo-replay 0.1.0", "2026-11-21T12:00:00Z", {"python", "train.py"}, {{"torch.version", "2.13.0"}}};
  Manifest mb;
  ASSERT_TRUE(decode(encode(m), &mb).isOk());
  EXPECT_EQ(mb.commandLine, m.commandLine);
  EXPECT_EQ(mb.environment.at("torch.version"), "2.13.0");

  Artifact a{"inductor/k.cpp", "text/x-c++src", std::string(32, 'a'), 1234, {{"graph", "0/0"}}};
  Artifact ab;
  ASSERT_TRUE(decode(encode(a), &ab).isOk());
  EXPECT_EQ(ab.size, 1234u);
  EXPECT_EQ(describe(uint16_t(RecordKind::Artifact), encode(a)),
            "inductor/k.cpp (text/x-c++src, 1234 bytes, blob aaaaaaaaaaaa)");
}

TEST(RecordsTest, TruncatedPayloadIsCorruptionNotACrash) {
  std::string bytes = encode(Manifest{"t", "c", {"a", "b"}, {{"k", "v"}}});
  for (size_t n = 0; n < bytes.size(); ++n) {
    Manifest m;
    EXPECT_EQ(decode(bytes.substr(0, n), &m).code(), Status::Code::Corruption) << n;
  }
}

TEST(RecordsTest, HugeSizeTagIsRefusedBeforeAllocating) {
  std::string bytes = encode(Manifest{"t", "", {}, {}});
  // Layout: endianness flag (1 byte), class version (4), then the tool string's u64 size tag.
  ASSERT_EQ(bytes[5], 1);
  for (int i = 0; i < 8; ++i) bytes[5 + i] = char(0xff);
  bytes[12] = 0x0f;  // about 10^18 bytes
  Manifest m;
  Status s = decode(bytes, &m);
  EXPECT_EQ(s.code(), Status::Code::Corruption);
  EXPECT_NE(s.message().find("exceeds the record's length"), std::string::npos) << s.message();
}

// Every kind in record_kinds.def has a name and describes a default record of its own.
template <typename... Records>
void expectNamedAndDescribed(std::tuple<Records...>) {
  for (auto [kind, payload] : {std::pair{uint16_t(Records::kKind), encode(Records{})}...}) {
    EXPECT_NE(kindName(kind), "kind " + std::to_string(kind));
    EXPECT_NE(describe(kind, payload), "(does not decode)") << kindName(kind);
  }
}

TEST(RecordsTest, EveryListedKindIsNamedAndDescribed) { expectNamedAndDescribed(AllRecords{}); }

TEST(RecordsTest, UnknownKindsAreNamedByNumber) {
  EXPECT_EQ(kindName(16), "manifest");
  EXPECT_EQ(kindName(4242), "kind 4242");
  EXPECT_EQ(describe(4242, "xyz"), "3 bytes of a kind this reader does not know");
}

}  // namespace
}  // namespace dynrep::capture
