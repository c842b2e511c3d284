#include "stream/pipeline/decode.h"

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
  EXPECT_EQ(decoder.decode(R"({"text":{"a":1}})").error,
            "text field /text is an object, not a string");
}

// A number is not a text: two records with {"title": 42} are not near-duplicates
// of each other, they are both invalid, in scan and run alike.
TEST(Decoder, ATextFieldThatIsNotAStringMakesTheRecordInvalid) {
  auto options = json_options();
  options.text_fields = {"/title"};
  Decoder decoder(options);
  const struct {
    const char* record;
    const char* error;
  } cases[] = {
      {R"({"id":1,"title":42})", "text field /title is a number, not a string"},
      {R"({"id":2,"title":-4.5e3})", "text field /title is a number, not a string"},
      {R"({"id":3,"title":18446744073709551615})", "text field /title is a number, not a string"},
      {R"({"id":4,"title":true})", "text field /title is a boolean, not a string"},
      {R"({"id":5,"title":["a","b"]})", "text field /title is an array, not a string"},
      {R"({"id":6,"title":{"en":"a"}})", "text field /title is an object, not a string"},
  };
  for (const auto& c : cases) {
    const Decoded decoded = decoder.decode(c.record);
    EXPECT_FALSE(decoded.ok) << c.record;
    EXPECT_EQ(decoded.error, c.error) << c.record;
    EXPECT_FALSE(decoded.id.empty()) << c.record;  // still named by its id
  }
  // A string of digits is a text; null is an absent field.
  const Decoded digits = decoder.decode(R"({"title":"42"})");
  ASSERT_TRUE(digits.ok) << digits.error;
  EXPECT_EQ(digits.text, "42");
  EXPECT_EQ(decoder.decode(R"({"title":null})").error, "missing text field /title");
}

TEST(Decoder, ANonStringFieldAmongSeveralIsNamedEvenAfterAGoodOne) {
  auto options = json_options();
  options.text_fields = {"/title", "/body"};
  Decoder decoder(options);
  const Decoded decoded = decoder.decode(R"({"title":"Markets rally","body":7})");
  EXPECT_FALSE(decoded.ok);
  EXPECT_EQ(decoded.error, "text field /body is a number, not a string");
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
