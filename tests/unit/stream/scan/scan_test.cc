#include "stream/scan/scan.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/json.h"
#include "stream/records/json_out.h"

namespace neardup::stream {
namespace {

// Runs scan_stream over `input` and returns its output lines.
std::vector<std::string> scan(const std::string& input, config::Config config = {},
                              ScanStats* stats = nullptr) {
  std::FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  ScanStats result = scan_stream(config, in, out);
  std::fclose(in);
  std::fclose(out);
  std::vector<std::string> lines;
  std::string text(buffer, size);
  std::free(buffer);
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (stats) *stats = result;
  return lines;
}

config::Config jsonl() {
  config::Config config;
  config.input.format = config::InputFormat::json;
  return config;
}

TEST(Scan, OneValidJsonVerdictPerInputLineInOrder) {
  const std::string input =
      "{\"id\":\"a\",\"text\":\"Storm closes the northern highway for two days\"}\n"
      "{\"id\":\"b\",\"text\":\"storm closes the Northern highway for two days!\"}\n"
      "this is not json\n"
      "{\"text\":\"An unrelated story about a local bakery opening\"}\r\n"
      "\n";
  ScanStats stats;
  const auto lines = scan(input, jsonl(), &stats);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(stats.records, 5u);
  simdjson::dom::parser parser;
  std::vector<std::string> verdicts;
  for (const auto& line : lines) {
    simdjson::dom::element element;
    ASSERT_FALSE(parser.parse(line).get(element)) << line;
    verdicts.emplace_back(std::string_view(element["verdict"]));
  }
  EXPECT_EQ(verdicts,
            (std::vector<std::string>{"unique", "duplicate", "invalid", "unique", "invalid"}));
  EXPECT_NE(lines[1].find("\"of\":\"a\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"id\":3"), std::string::npos)
      << "an invalid line is named by its line number";
  EXPECT_NE(lines[3].find("\"id\":4"), std::string::npos)
      << "a record without id gets its line number";
  EXPECT_EQ(stats.unique, 2u);
  EXPECT_EQ(stats.duplicate, 1u);
  EXPECT_EQ(stats.invalid, 2u);
}

TEST(Scan, LinesFormatUsesLineNumbersAndSurvivesBinaryGarbage) {
  std::string input =
      "Hello world, this is a line\n\xff\xfe\xfd\xfc\x80\x81\nhello WORLD this is a line\n";
  const auto lines = scan(input);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("\"verdict\":\"invalid\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("mostly invalid UTF-8"), std::string::npos) << "says why: " << lines[1];
  EXPECT_NE(lines[2].find("\"of\":1"), std::string::npos) << lines[2];
}

TEST(Scan, ARecordWithoutUsableTextKeepsItsOwnId) {
  // Named by its line number instead, the second record would share the first one's id.
  const auto lines = scan(
      "{\"id\":2,\"text\":\"alpha beta gamma "
      "delta\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"text\":[1]}\n",
      jsonl());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("{\"id\":\"b\",\"verdict\":\"invalid\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("{\"id\":\"c\",\"verdict\":\"invalid\""), std::string::npos) << lines[2];
}

TEST(Scan, AFailedWriteStopsTheScanAndSaysSo) {
  std::string input;
  for (int i = 0; i < 20000; ++i)
    input += "record number " + std::to_string(i) + " of a long input\n";
  std::FILE* in = fmemopen(input.data(), input.size(), "r");
  std::FILE* out = std::fopen("/dev/full", "w");  // every write fails: no space left on device
  ASSERT_NE(out, nullptr);
  config::Config config;
  config.input.format = config::InputFormat::text;
  const ScanStats stats = scan_stream(config, in, out);
  std::fclose(in);
  std::fclose(out);
  EXPECT_TRUE(stats.write_error);
  EXPECT_FALSE(stats.write_error_text.empty());
  EXPECT_LT(stats.records, 20000u) << "reading on after the output failed";
}

TEST(Scan, LastLineWithoutNewlineIsARecord) {
  EXPECT_EQ(scan("first text here\nsecond different words").size(), 2u);
}

TEST(Scan, LongLinesBeyondTheReadBufferAreWhole) {
  std::string long_text(200000, 'x');
  long_text += " end";
  const auto lines = scan(long_text + "\n" + long_text + "\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("duplicate"), std::string::npos);
}

TEST(Scan, LinesOverMaxBytesAreInvalidWithTheirSizeAndTheOthersAreWhole) {
  // Such a line is dropped while it is read (not held whole), yet reported with its true size.
  config::Config config;
  config.input.format = config::InputFormat::text;
  config.input.max_bytes = 100000;
  const std::string normal = "the storm closed the northern highway";
  const std::string input = normal + "\n" + std::string(300000, 'x') + "\r\n" + normal + "!\r\n" +
                            std::string(100000, 'y') + "\n" +
                            std::string(250001, 'z');  // the last without "\n"
  const auto lines = scan(input, config);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("\"unique\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("record of 300000 bytes exceeds input.max_bytes (100000)"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("\"verdict\":\"duplicate\",\"of\":1"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3].find("exceeds"), std::string::npos)
      << "exactly max_bytes is allowed: " << lines[3];
  EXPECT_NE(lines[4].find("record of 250001 bytes exceeds input.max_bytes (100000)"),
            std::string::npos)
      << lines[4];
}

// Scans `kept` unrelated records with ids id_of(i) through a window of 50,
// every `every`-th followed by a repeat of a record 1 to 49 back (`every`
// prime to the ring's 50, so the ring's seam falls anywhere), and expects
// every duplicate to name exactly the id of the record it matched, never a
// neighbour's or a piece of one.
template <class IdOf>
void expect_duplicates_name_their_originals(int kept, int every, IdOf id_of) {
  config::Config config = jsonl();
  config.dedup.window.max_entries = 50;
  std::string input;
  auto back = [every](int i) { return 1 + i / every * 7 % 49; };
  auto text_of = [](int i) {  // 8 pseudo-random 6-letter words: unrelated texts
    std::uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(i + 1);
    std::string text;
    for (int w = 0; w < 8; ++w) {
      for (int c = 0; c < 6; ++c) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        text += static_cast<char>('a' + (x >> 33) % 26);
      }
      text += ' ';
    }
    return text;
  };
  int repeats = 0;
  for (int i = 0; i < kept; ++i) {
    input += "{\"id\":\"" + id_of(i) + "\",\"text\":\"" + text_of(i) + "\"}\n";
    if (i % every == every - 1) {
      ++repeats;
      input +=
          "{\"id\":\"dup" + std::to_string(i) + "\",\"text\":\"" + text_of(i - back(i)) + "\"}\n";
    }
  }
  ScanStats stats;
  const auto lines = scan(input, config, &stats);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kept + repeats));
  EXPECT_EQ(stats.duplicate, static_cast<std::uint64_t>(repeats));
  for (const auto& line : lines) {
    if (line.find("\"verdict\":\"duplicate\"") == std::string::npos) continue;
    const auto dup = line.find("\"id\":\"dup");
    ASSERT_NE(dup, std::string::npos) << line;
    const int i = std::stoi(line.substr(dup + 9));  // after "id":"dup
    EXPECT_NE(line.find("\"of\":\"" + id_of(i - back(i)) + "\",\"distance\""), std::string::npos)
        << line;
  }
}

TEST(Scan, DuplicateNamesItsOriginalsIdAfterManyOlderIdsLeftTheWindow) {
  // The ids of evicted records are overwritten (a ring of 50).
  expect_duplicates_name_their_originals(12000, 977, [](int i) { return std::to_string(i) + "r"; });
}

TEST(Scan, DuplicateNamesItsOriginalsIdWhenIdsAreLongAndTheirBytesAreDropped) {
  // Ids of 1 to ~400 bytes (most past a string's 15 inline bytes): the bytes
  // of evicted ids are dropped from the front of the id store every few
  // hundred records (~600 KB of ids through 50 slots), and 30 lookups of
  // every age, many across such a drop, still find whole, right ids.
  expect_duplicates_name_their_originals(3000, 97, [](int i) {
    std::string id = std::to_string(i);
    id.append(static_cast<std::size_t>(i * 7919 % 400), static_cast<char>('a' + i % 26));
    return id;
  });
}

TEST(JsonOut, EscapesControlCharactersAndReplacesInvalidUtf8) {
  std::string out;
  base::append_json_string(out, std::string("a\"b\\c\n\x01\xff\xc3\xa9", 10));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\xEF\xBF\xBD\xc3\xa9\"");
}

}  // namespace
}  // namespace neardup::stream
