// core/text: the small parsers and case folding the command line and the file dialog share.
#include "core/text.hpp"

#include <gtest/gtest.h>

namespace sharelens {
namespace {

// Only A-Z change: a format name or an extension typed in any case ("PNG", ".Svg") matches its lower-case
// spelling, and bytes of UTF-8 text (here "É", 0xC3 0x89) are left as they are.
TEST(Text, AsciiLowerFoldsOnlyAsciiLetters) {
  EXPECT_EQ(asciiLower("PNG"), "png");
  EXPECT_EQ(asciiLower(".Svg"), ".svg");
  EXPECT_EQ(asciiLower("a-Z_09@[`{"), "a-z_09@[`{");
  EXPECT_EQ(asciiLower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");
  EXPECT_EQ(asciiLower(""), "");
}

TEST(Text, SplitListTrimsAndDropsEmptyPieces) {
  const std::vector<std::string_view> want = {"png", "svg", "pdf"};
  EXPECT_EQ(splitList(" png,svg,, pdf\t", ','), want);
  EXPECT_TRUE(splitList(" , ,", ',').empty());
}

}  // namespace
}  // namespace sharelens
