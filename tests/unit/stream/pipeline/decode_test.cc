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

config::InputOptions options_of(config::InputFormat format) {
  config::InputOptions options;
  options.format = format;
  return options;
}

TEST(Decoder, TextFormatPassesTheWholeRecord) {
  Decoder decoder(options_of(config::InputFormat::text));
  for (const char* record : {"hello {not json}", R"({"id":7,"text":"an object, whole"})"}) {
    const Decoded decoded = decoder.decode(record);
    ASSERT_TRUE(decoded.ok) << record;
    EXPECT_EQ(decoded.text, record);
    EXPECT_EQ(decoded.id, "");
  }
}

TEST(Decoder, AutoIsTheDefaultFormat) {
  EXPECT_EQ(config::InputOptions{}.format, config::InputFormat::automatic);
}

// Format auto reads a JSON object as format json does: its text fields and id,
// whatever its other fields hold.
TEST(Decoder, AutoReadsAJsonObjectAtItsTextFields) {
  auto options = options_of(config::InputFormat::automatic);
  options.text_fields = {"/title", "/body/text"};
  Decoder decoder(options);
  for (const char* record :
       {R"({"id":"x1","title":"Markets","body":{"text":"rally again"},"ts":1})",
        " \t\r\n{\"id\":\"x1\",\"at\":\"2024-05-01\",\"title\":\"Markets\",\"body\":{\"text\":"
        "\"rally again\"}} \n"}) {
    const Decoded decoded = decoder.decode(record);
    ASSERT_TRUE(decoded.ok) << record << ": " << decoded.error;
    EXPECT_EQ(decoded.text, "Markets rally again") << record;
    EXPECT_EQ(decoded.id, "\"x1\"") << record;
  }
}

// Anything that is not one JSON object is the text, whole: plain text, a JSON
// array, string, number or null, a '{' that does not parse, nothing at all.
TEST(Decoder, AutoTakesAnythingElseWholeAsText) {
  Decoder decoder(options_of(config::InputFormat::automatic));
  for (const char* record :
       {"Storm closes the harbour bridge", "  plain text after spaces",
        R"([{"text":"in an array"}])", R"("a JSON string")", "42", "null", R"({"text": "cut off)",
        R"({"text":"a"} trailing)", "{not json}", "hello {\"text\":\"x\"}", "", "\xff\xfe"}) {
    const Decoded decoded = decoder.decode(record);
    ASSERT_TRUE(decoded.ok) << record << ": " << decoded.error;
    EXPECT_EQ(decoded.text, record);
    EXPECT_EQ(decoded.id, "") << record;
  }
  const Decoded nothing = decoder.decode(std::string_view(nullptr, 0));
  ASSERT_TRUE(nothing.ok);
  EXPECT_TRUE(nothing.text.empty());
}

// An object without a usable text field is invalid in format auto exactly as in
// format json (dead-lettered by `run`, "invalid" in `scan`), named by its id.
TEST(Decoder, AutoRefusesAnObjectWithoutItsTextFieldAsJsonDoes) {
  Decoder automatic(options_of(config::InputFormat::automatic));
  Decoder json(json_options());
  const struct {
    const char* record;
    const char* error;
  } cases[] = {
      {R"({"id":1,"body":"no text field"})", "missing text field /text"},
      {R"({"id":2,"text":null})", "missing text field /text"},
      {R"({"id":3,"text":42})", "text field /text is a number, not a string"},
      {R"({"id":4,"text":["a"]})", "text field /text is an array, not a string"},
  };
  for (const auto& c : cases) {
    const Decoded got = automatic.decode(c.record);
    EXPECT_FALSE(got.ok) << c.record;
    EXPECT_EQ(got.error, c.error) << c.record;
    EXPECT_EQ(got.error, json.decode(c.record).error) << c.record;
    EXPECT_FALSE(got.id.empty()) << c.record;
  }
}

TEST(Decoder, AutoAndJsonGiveTheSameTextForAnObject) {
  Decoder automatic(options_of(config::InputFormat::automatic));
  Decoder json(json_options());
  const std::string record = R"({"id":9,"user":"bob","text":"Council approves the budget"})";
  const std::string via_auto(automatic.decode(record).text);
  EXPECT_EQ(via_auto, "Council approves the budget");
  EXPECT_EQ(via_auto, json.decode(record).text);
}

TEST(Decoder, AutoScopesAnObjectByItsFieldAndOtherValuesByNothing) {
  Decoder decoder(options_of(config::InputFormat::automatic), "/user");
  EXPECT_EQ(decoder.decode(R"({"user":"ann","text":"t"})").scope, dedup::scope_of("ann"));
  EXPECT_EQ(decoder.decode(R"({"text":"t"})").scope, dedup::scope_of(""));
  EXPECT_EQ(decoder.decode("plain text").scope, dedup::scope_of(""));
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
