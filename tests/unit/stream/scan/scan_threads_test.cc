// `neardup scan --threads N`: the output of every thread count is the one
// thread's, byte for byte (scan_stream's contract), on generated feeds with
// near-duplicates, the e2e fixture, oversized and invalid lines, a learned IDF
// (analyzed on one thread) and a failing output.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "stream/scan/scan.h"

namespace neardup::stream {
namespace {

/// scan_stream over `in` (closed here) with `threads`; the whole output.
std::string scan_from(std::FILE* in, const config::Config& config, unsigned threads,
                      ScanStats* stats) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  const ScanStats result = scan_stream(config, in, out, threads);
  std::fclose(in);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  if (stats) *stats = result;
  return text;
}

/// scan_stream over `input` with `threads`; the whole output.
std::string scan(const std::string& input, const config::Config& config, unsigned threads,
                 ScanStats* stats = nullptr) {
  std::string copy = input;  // fmemopen wants a writable buffer, and a non-empty one
  std::FILE* in =
      copy.empty() ? std::fopen("/dev/null", "r") : fmemopen(copy.data(), copy.size(), "r");
  return scan_from(in, config, threads, stats);
}

config::Config jsonl() {
  config::Config config;
  config.input.format = config::InputFormat::json;
  return config;
}

/// splitmix64: the same numbers on every platform.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

std::string random_word(Random& random) {
  std::string word;
  const std::size_t letters = 3 + random.below(7);
  for (std::size_t i = 0; i < letters; ++i)
    word.push_back(static_cast<char>('a' + random.below(26)));
  return word;
}

/// A generated JSON Lines feed: `bases` unrelated 40-word texts; a third of
/// them come back 1 to 60 records later with other case and punctuation (the
/// same normalized text: a duplicate at distance 0), another third with one
/// word replaced (an edited repost); every 97th line is invalid (malformed,
/// no text, or empty). Ids: strings, numbers, or absent (the line number).
struct Feed {
  std::string text;
  std::uint64_t records = 0, unique = 0, duplicate = 0, invalid = 0;
};

Feed generate(std::size_t bases, std::uint64_t seed) {
  Random random(seed);
  Feed feed;
  struct Pending {
    std::size_t due;  // the output index it is due at
    std::string line;
  };
  std::vector<Pending> pending;
  auto id_of = [](std::size_t i, const char* prefix) -> std::string {
    switch (i % 3) {
      case 0:
        return "\"id\":\"" + std::string(prefix) + std::to_string(i) + "\",";
      case 1:
        return "\"id\":" + std::to_string(i * 10 + (prefix[0] == 'r' ? 1 : 0)) + ",";
      default:
        return "";  // named by its line number
    }
  };
  auto emit = [&](const std::string& line) {
    feed.text += line;
    feed.text += '\n';
    ++feed.records;
  };
  std::size_t emitted = 0;
  for (std::size_t i = 0; i < bases; ++i) {
    std::vector<std::string> words;
    for (int w = 0; w < 40; ++w) words.push_back(random_word(random));
    std::string text;
    for (const auto& word : words) text += word + " ";
    text.pop_back();
    emit("{" + id_of(i, "b") + "\"text\":\"" + text + "\"}");
    ++feed.unique;
    ++emitted;
    if (i % 3 == 0) {  // case and punctuation only
      std::string shout = text;
      for (std::size_t c = 0; c < shout.size(); c += 7)
        if (shout[c] >= 'a' && shout[c] <= 'z') shout[c] = static_cast<char>(shout[c] - 'a' + 'A');
      pending.push_back(
          {emitted + 1 + random.below(60), "{" + id_of(i, "r") + "\"text\":\"" + shout + "!!\"}"});
      ++feed.duplicate;
    } else if (i % 3 == 1) {  // one of 40 words replaced
      words[random.below(words.size())] = random_word(random);
      std::string edited;
      for (const auto& word : words) edited += word + " ";
      edited.pop_back();
      pending.push_back(
          {emitted + 1 + random.below(60), "{" + id_of(i, "r") + "\"text\":\"" + edited + "\"}"});
      ++feed.duplicate;
    }
    for (std::size_t p = 0; p < pending.size();) {
      if (pending[p].due <= emitted) {
        emit(pending[p].line);
        ++emitted;
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(p));
      } else {
        ++p;
      }
    }
    if (i % 97 == 96) {
      static const char* const kBad[] = {"{\"id\":\"bad\",\"text\":", "{\"id\":7}", ""};
      emit(kBad[i / 97 % 3]);
      ++emitted;
      ++feed.invalid;
    }
  }
  for (const auto& rest : pending) emit(rest.line);
  return feed;
}

// `missed`: one-word edits whose sketch estimate falls under the threshold, so
// they come out unique. The accuracy decides those (docs/ACCURACY.md), not the
// threads; pinned for the feed of each test so that any change shows.
void expect_counts(const ScanStats& stats, const Feed& feed, std::uint64_t missed) {
  EXPECT_EQ(stats.records, feed.records);
  EXPECT_EQ(stats.unique, feed.unique + missed);
  EXPECT_EQ(stats.duplicate, feed.duplicate - missed);
  EXPECT_EQ(stats.invalid, feed.invalid);
}

TEST(ScanThreads, GeneratedFeedIsTheSameOnOneToFourThreadsWithExactCounts) {
  const Feed feed = generate(3000, 18);
  ASSERT_EQ(feed.records, 5030u) << "ten chunks of 512 records";
  constexpr std::uint64_t kMissed = 5;  // of the 1000 edits
  ScanStats one;
  const std::string expected = scan(feed.text, jsonl(), 1, &one);
  expect_counts(one, feed, kMissed);
  EXPECT_EQ(one.analysis_threads, 1u);
  for (unsigned threads : {2u, 3u, 4u}) {
    ScanStats stats;
    const std::string output = scan(feed.text, jsonl(), threads, &stats);
    EXPECT_TRUE(output == expected) << threads << " threads: the output differs from one thread's";
    expect_counts(stats, feed, kMissed);
    EXPECT_EQ(stats.analysis_threads, threads);
    EXPECT_FALSE(stats.read_error || stats.write_error);
  }
}

/// scan_stream over `input` written to a regular file (unlinked), read from
/// byte `from` on: a file's size lets scan size its window at once.
std::string scan_file(const std::string& input, const config::Config& config, unsigned threads,
                      long from = 0, ScanStats* stats = nullptr) {
  std::FILE* in = std::tmpfile();
  EXPECT_NE(in, nullptr);
  if (in == nullptr) return {};
  EXPECT_EQ(std::fwrite(input.data(), 1, input.size(), in), input.size());
  std::fseek(in, from, SEEK_SET);
  return scan_from(in, config, threads, stats);
}

TEST(ScanThreads, ARegularFileSizedAtOnceJudgesAsAStreamDoes) {
  const Feed feed = generate(3000, 18);
  config::Config small = jsonl();
  small.dedup.window.max_entries = 700;  // sized past its capacity: the capacity holds
  for (const config::Config& config : {jsonl(), small}) {
    const std::string streamed = scan(feed.text, config, 1);
    for (unsigned threads : {1u, 2u}) {
      ScanStats stats;
      EXPECT_TRUE(scan_file(feed.text, config, threads, 0, &stats) == streamed)
          << threads << " thread(s), window " << config.dedup.window.max_entries;
      EXPECT_EQ(stats.records, feed.records);
    }
  }
  // A file handed over part read is sized by what is left of it.
  const std::size_t half = feed.text.find('\n', feed.text.size() / 2) + 1;
  const std::string rest = feed.text.substr(half);
  EXPECT_TRUE(scan_file(feed.text, jsonl(), 1, static_cast<long>(half)) == scan(rest, jsonl(), 1));
}

TEST(ScanThreads, ASmallWindowAndTheClassicRuleAreTheSameOnEveryThreadCount) {
  // Evictions name originals through the kept-id ring: the ids must follow.
  config::Config config = jsonl();
  config.dedup.window.max_entries = 300;
  config.dedup.sketch.enabled = false;
  const Feed feed = generate(2500, 7);
  ScanStats one;
  const std::string expected = scan(feed.text, config, 1, &one);
  EXPECT_EQ(one.records, feed.records);
  EXPECT_GT(one.duplicate, feed.duplicate / 3) << "at least the distance-0 repeats";
  for (unsigned threads : {2u, 3u, 4u}) {
    ScanStats stats;
    EXPECT_TRUE(scan(feed.text, config, threads, &stats) == expected) << threads << " threads";
    EXPECT_EQ(stats.duplicate, one.duplicate);
    EXPECT_EQ(stats.unique, one.unique);
    EXPECT_EQ(stats.invalid, one.invalid);
  }
}

TEST(ScanThreads, TheE2eFixtureIsTheSameOnOneToFourThreads) {
  std::ifstream file(std::string(NEARDUP_SOURCE_DIR) + "/tests/e2e/fixtures/scan.jsonl",
                     std::ios::binary);
  ASSERT_TRUE(file) << "tests/e2e/fixtures/scan.jsonl";
  std::stringstream content;
  content << file.rdbuf();
  ScanStats one;
  const std::string expected = scan(content.str(), jsonl(), 1, &one);
  ASSERT_GT(one.records, 10u);
  EXPECT_GT(one.duplicate, 0u);
  EXPECT_GT(one.invalid, 0u);
  for (unsigned threads : {2u, 3u, 4u}) {
    ScanStats stats;
    EXPECT_TRUE(scan(content.str(), jsonl(), threads, &stats) == expected) << threads;
    EXPECT_EQ(stats.records, one.records);
    EXPECT_EQ(stats.unique, one.unique);
    EXPECT_EQ(stats.duplicate, one.duplicate);
    EXPECT_EQ(stats.invalid, one.invalid);
  }
}

TEST(ScanThreads, OversizedLinesCarriageReturnsAndChunksCutByBytesAreTheSame) {
  // Lines of 1 to ~40 KB fill chunks by bytes (256 KiB), not by count; some
  // are over input.max_bytes (dropped while read, reported with their size),
  // some end in "\r\n", and the last has no newline.
  config::Config config;
  config.input.format = config::InputFormat::text;
  config.input.max_bytes = 30000;
  Random random(5);
  std::string input;
  std::size_t oversized = 0;
  for (int i = 0; i < 600; ++i) {
    std::string line;
    const std::size_t words = 1 + random.below(i % 10 == 0 ? 6000 : 30);
    for (std::size_t w = 0; w < words; ++w) line += random_word(random) + " ";
    if (line.size() > config.input.max_bytes) ++oversized;
    if (i % 5 == 0 && i > 0) input += input.substr(input.rfind('\n', input.size() - 2) + 1);
    input += line + (i % 4 == 0 ? "\r\n" : "\n");
  }
  input += "the last line has no newline";
  ASSERT_GT(oversized, 5u);
  ScanStats one;
  const std::string expected = scan(input, config, 1, &one);
  EXPECT_GE(one.invalid, oversized);
  EXPECT_GT(one.duplicate, 50u);
  for (unsigned threads : {2u, 3u, 4u}) {
    ScanStats stats;
    EXPECT_TRUE(scan(input, config, threads, &stats) == expected) << threads;
    EXPECT_EQ(stats.records, one.records);
    EXPECT_EQ(stats.invalid, one.invalid);
  }
}

TEST(ScanThreads, ThreadsMeetingTheEndOfTheInputLoseNoChunkAndJudgeNoneTwice) {
  // Inputs longer than the chunk pool (2N + 2 chunks of 512 lines), so chunks
  // are reused, ending at every place in a chunk: threads that look for more
  // input just as another meets its end must not queue a stale chunk.
  config::Config config;
  config.input.format = config::InputFormat::text;
  Random random(11);
  for (int round = 0; round < 12; ++round) {
    const std::size_t lines = 5200 + random.below(6000);
    std::string input;
    for (std::size_t i = 0; i < lines; ++i) {
      std::string line =
          random_word(random) + " " + random_word(random) + " " + random_word(random);
      input += line + "\n";
      if (random.below(4) == 0) input += line + "!\n";  // a duplicate
    }
    const std::string expected = scan(input, config, 1);
    for (unsigned threads : {2u, 4u}) {
      ScanStats stats;
      ASSERT_TRUE(scan(input, config, threads, &stats) == expected)
          << threads << " threads, round " << round << ", " << input.size() << " bytes";
    }
  }
}

TEST(ScanThreads, EmptyAndOneLineInputs) {
  for (unsigned threads : {1u, 2u, 4u}) {
    ScanStats stats;
    EXPECT_EQ(scan("", jsonl(), threads, &stats), "");
    EXPECT_EQ(stats.records, 0u);
    const std::string one = scan("{\"id\":1,\"text\":\"one lonely record\"}\n", jsonl(), threads);
    EXPECT_EQ(one.rfind("{\"id\":1,\"verdict\":\"unique\"", 0), 0u) << one;
  }
}

TEST(ScanThreads, ALearnedIdfIsAnalyzedOnOneThread) {
  config::Config config = jsonl();
  config.dedup.text.weighting = dedup::Weighting::tf_idf;
  config.dedup.text.idf_source = dedup::IdfSource::stream;
  ASSERT_TRUE(analysis_depends_on_history(config));
  const Feed feed = generate(800, 3);
  const std::string expected = scan(feed.text, config, 1);
  ScanStats stats;
  EXPECT_TRUE(scan(feed.text, config, 4, &stats) == expected);
  EXPECT_EQ(stats.analysis_threads, 1u) << "the analysis depends on the history";

  config.dedup.text.weighting = dedup::Weighting::tf;
  EXPECT_FALSE(analysis_depends_on_history(config));
}

TEST(ScanThreads, AFailedWriteStopsEveryThread) {
  std::string input;
  for (int i = 0; i < 50000; ++i)
    input += "record number " + std::to_string(i) + " of a long input\n";
  for (unsigned threads : {2u, 4u}) {
    std::FILE* in = fmemopen(input.data(), input.size(), "r");
    std::FILE* out = std::fopen("/dev/full", "w");  // every write fails: no space left on device
    ASSERT_NE(out, nullptr);
    config::Config config;
    config.input.format = config::InputFormat::text;
    const ScanStats stats = scan_stream(config, in, out, threads);
    std::fclose(in);
    std::fclose(out);
    EXPECT_TRUE(stats.write_error);
    EXPECT_FALSE(stats.write_error_text.empty());
    EXPECT_LT(stats.records, 50000u) << "judging on after the output failed";
  }
}

TEST(ScanThreads, AvailableCoresIsAtLeastOne) { EXPECT_GE(available_cores(), 1u); }

}  // namespace
}  // namespace neardup::stream
