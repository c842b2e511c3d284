#include "base/json.h"

#include <string>

#include <gtest/gtest.h>

namespace neardup::base {
namespace {

std::string as_json(std::string_view text, JsonEscape mode = JsonEscape::plain) {
  std::string out;
  append_json_string(out, text, mode);
  return out;
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(as_json(std::string("a\"b\\c\n\r\t\x01\x1f\x7f", 11)),
            "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(as_json(std::string("\0", 1)), "\"\\u0000\"");
}

TEST(JsonString, KeepsValidUtf8AndReplacesEveryInvalidByte) {
  EXPECT_EQ(as_json("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"),
            "\"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\"");
  // A stray continuation byte, a lone lead byte, an overlong '/', a surrogate
  // (U+D800), past U+10FFFF, and a sequence cut short by the end.
  EXPECT_EQ(as_json("\x80"), "\"\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xC3x"), "\"\xEF\xBF\xBDx\"");
  EXPECT_EQ(as_json("\xC0\xAF"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xED\xA0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xF4\x90\x80\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xE4\xB8"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(JsonString, HtmlSafeModeAlsoEscapesMarkupAndLineSeparators) {
  EXPECT_EQ(as_json("</script>&\xE2\x80\xA8\xE2\x80\xA9", JsonEscape::html_safe),
            "\"\\u003c/script\\u003e\\u0026\\u2028\\u2029\"");
  EXPECT_EQ(as_json("</script>&\xE2\x80\xA8", JsonEscape::plain), "\"</script>&\xE2\x80\xA8\"");
}

TEST(Utf8SequenceLength, CountsValidSequencesAndRefusesInvalidOnes) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1U);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2U);
  EXPECT_EQ(utf8_sequence_length("\xE4\xB8\xAD", 0), 3U);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4U);
  EXPECT_EQ(utf8_sequence_length("\xE0\x80\x80", 0), 0U);  // overlong
  EXPECT_EQ(utf8_sequence_length("\xF5\x80\x80\x80", 0), 0U);
}

}  // namespace
}  // namespace neardup::base
