#include "dynrep/replay/query/sizes.h"

#include <gtest/gtest.h>

namespace dynrep::replay {
namespace {

TEST(Sizes, EvaluatesWhatSympyPrints) {
  Symbols s{{"s0", 7}, {"s1", 3}};
  EXPECT_EQ(evaluate("s0", s), 7);
  EXPECT_EQ(evaluate("2*s0", s), 14);
  EXPECT_EQ(evaluate("s0 + 1", s), 8);
  EXPECT_EQ(evaluate("s0*s1 - 2", s), 19);
  EXPECT_EQ(evaluate("((s0//2))", s), 3);
  EXPECT_EQ(evaluate("Max(1, s1)", s), 3);
  EXPECT_EQ(evaluate("-s1 // 2", s), -2);  // floor division, as Python
  EXPECT_EQ(evaluate("FloorDiv(s0, 2) + Mod(s0, 2)", s), 4);
}

TEST(Sizes, NamesWhatIsMissing) {
  try {
    evaluate("s2 + 1", Symbols{});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--sizes s2=N"), std::string::npos) << e.what();
  }
  EXPECT_THROW(evaluate("s0 +", Symbols{{"s0", 1}}), std::runtime_error);
}

TEST(Sizes, ParsesTheSizesOption) {
  EXPECT_EQ(parseSizes("s0=7,s1=3"), (Symbols{{"s0", 7}, {"s1", 3}}));
  EXPECT_THROW(parseSizes("s0"), std::runtime_error);
  EXPECT_THROW(parseSizes("s0=x"), std::runtime_error);
}

}  // namespace
}  // namespace dynrep::replay
