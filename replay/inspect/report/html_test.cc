// html::escape keeps store text inert (markup, quotes, bad UTF-8, control characters) and
// html::renderJson escapes keys and values alike.
#include "report/html.h"

#include <sstream>

#include <gtest/gtest.h>

namespace dynrep::replay::html {
namespace {

TEST(Html, EscapesMarkupAndQuotes) {
  EXPECT_EQ(escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
}

TEST(Html, KeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(escape("µs → ok"), "µs → ok");
  EXPECT_EQ(escape("a\xff"
                   "b"),
            "a\xEF\xBF\xBD"
            "b");                                                             // not a lead byte
  EXPECT_EQ(escape("\xC3"), "\xEF\xBF\xBD");                                  // truncated sequence
  EXPECT_EQ(escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(escape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(escape(std::string("a\0b\x07\tc\n", 7)), "a\xEF\xBF\xBD"
                                                     "b\xEF\xBF\xBD\tc\n");
}

TEST(Html, RendersJsonEscapedWithChosenKeysFirst) {
  std::ostringstream out;
  renderJson(out,
             {{"zeta", "<b>"}, {"advice", {{"kind", "check"}, {"edit", "torch._check(x > 0)\nnext"}}}, {"<k>", {1, 2}}},
             {"advice"});
  std::string html = out.str();
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("<dt>&lt;k&gt;</dt><dd>1, 2</dd>"), std::string::npos);
  EXPECT_LT(html.find("advice"), html.find("zeta"));
  EXPECT_NE(html.find("<pre>torch._check(x &gt; 0)\nnext</pre>"), std::string::npos);
}

}  // namespace
}  // namespace dynrep::replay::html
