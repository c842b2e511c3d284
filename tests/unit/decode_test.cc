#include "stream/decode.h"

#include <gtest/gtest.h>

#include <string>

namespace neardup::stream {
namespace {

config::InputOptions json_options() {
  config::InputOptions options;
  options.format = config::InputFormat::json;
  return options;
}

TEST(Decoder, TextFormatPassesTheWholeRecord) {
  Decoder decoder(config::InputOptions{});
  const Decoded decoded = decoder.decode("hello {not json}");
  ASSERT_TRUE(decoded.ok);
  EXPECT_EQ(decoded.text, "hello {not json}");
}

TEST(Decoder, JoinsSeveralPointerFieldsWithASpace) {
  auto options = json_options();
  options.text_fields = {"/title", "/body/text"};
  Decoder decoder(options);
  const Decoded decoded =
      decoder.decode(R"({"id":"x1","title":"Markets","body":{"text":"rally again"}})");
  ASSERT_TRUE(decoded.ok) << decoded.error;
  EXPECT_EQ(decoded.text, "Markets rally again");
  EXPECT_EQ(decoded.id, "\"x1\"");
}

TEST(Decoder, SkipsAbsentFieldsButNeedsOne) {
  auto options = json_options();
  options.text_fields = {"/title", "/body"};
  Decoder decoder(options);
  EXPECT_EQ(decoder.decode(R"({"body":"only body"})").text, "only body");
  const Decoded none = decoder.decode(R"({"other":1})");
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.error.find("none of the text fields"), std::string::npos);
}

TEST(Decoder, NumericIdKeepsItsJsonForm) {
  Decoder decoder(json_options());
  EXPECT_EQ(decoder.decode(R"({"id":42,"text":"t"})").id, "42");
  EXPECT_EQ(decoder.decode(R"({"text":"t"})").id, "");
}

TEST(Decoder, MalformedJsonIsAnErrorNotACrash) {
  Decoder decoder(json_options());
  for (const char* bad :
       {"", "{", "not json", "[1,2]", "{\"text\":}", "{\"text\":\"a\"} trailing", "\xff\xfe"}) {
    const Decoded decoded = decoder.decode(bad);
    EXPECT_FALSE(decoded.ok) << bad;
    EXPECT_FALSE(decoded.error.empty()) << bad;
  }
}

// A Kafka message with a null value reaches the decoder as (nullptr, 0):
// UBSan stopped the service on it (memcpy from null), on every restart.
TEST(Decoder, ANullValueIsMalformedJsonNotACrash) {
  Decoder decoder(json_options());
  const Decoded decoded = decoder.decode(std::string_view(nullptr, 0));
  EXPECT_FALSE(decoded.ok);
  EXPECT_EQ(decoded.error, "malformed JSON: Empty: no JSON found");
}

TEST(Decoder, MissingAndNonStringTextFieldsAreNamed) {
  Decoder decoder(json_options());
  EXPECT_EQ(decoder.decode(R"({"id":1})").error, "missing text field /text");
  EXPECT_EQ(decoder.decode(R"({"text":{"a":1}})").error, "text field /text is not a string");
}

TEST(Decoder, OversizedRecordIsRejectedWithItsSize) {
  auto options = json_options();
  options.max_bytes = 16;
  Decoder decoder(options);
  const Decoded decoded = decoder.decode(R"({"text":"this is longer than sixteen bytes"})");
  EXPECT_FALSE(decoded.ok);
  EXPECT_NE(decoded.error.find("exceeds input.max_bytes (16)"), std::string::npos);
}

TEST(Decoder, RejectsPointerWithoutLeadingSlash) {
  auto options = json_options();
  options.text_fields = {"text"};
  EXPECT_THROW(Decoder{options}, config::ConfigError);
}

}  // namespace
}  // namespace neardup::stream
