#include "dedup/engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dedup/index/memory.h"
#include "tests/unit/dedup/engine/engine_feed.h"

namespace neardup::dedup {
namespace {

DedupOptions defaults() { return DedupOptions{}; }

DedupOptions classic() {
  DedupOptions o;
  o.sketch.enabled = false;
  return o;
}

using engine_testing::Feed;

constexpr std::string_view kPost =
    "Just finished my first marathon in under four hours, legs are gone but so happy";
constexpr std::string_view kOtherPost =
    "Training for my first marathon, four hours of running this weekend and my legs are gone";

TEST(Engine, AVerdictCountsTheIndexCellsItsProbeExamined) {
  for (const DedupOptions& options : {defaults(), classic()}) {
    Feed feed(options);
    EXPECT_EQ(feed(kPost).candidates, 0u) << "an empty window has nothing to examine";
    const Verdict copy = feed(kPost);
    ASSERT_EQ(copy.kind, VerdictKind::duplicate);
    EXPECT_GE(copy.candidates, 1u) << "the copy's own entry was examined";
    const std::uint64_t before = feed.engine.stats().window.candidates;
    const Verdict other = feed(kOtherPost);
    EXPECT_EQ(other.candidates, feed.engine.stats().window.candidates - before);
  }
}

TEST(Engine, ShortPostWithOneChangedWordIsADuplicate) {
  Feed feed(defaults());
  ASSERT_EQ(feed(kPost).kind, VerdictKind::unique);
  const Verdict v =
      feed("Just finished my first marathon in under four hours, legs are dead but so happy");
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_EQ(v.match->of, RecordRef{1});
  ASSERT_TRUE(v.similarity.has_value());
  EXPECT_GE(*v.similarity, 0.7);
  EXPECT_EQ(v.match->distance, hamming_distance(v.fingerprint, v.match->fingerprint));
}

TEST(Engine, ShortPostWithAppendedUrlIsADuplicate) {
  Feed feed(defaults());
  ASSERT_EQ(feed(kPost).kind, VerdictKind::unique);
  EXPECT_EQ(feed(std::string(kPost) + " https://t.co/x7Kq2").kind, VerdictKind::duplicate);
}

TEST(Engine, SameTopicDifferentPostIsNotADuplicate) {
  Feed feed(defaults());
  ASSERT_EQ(feed(kPost).kind, VerdictKind::unique);
  EXPECT_EQ(feed(kOtherPost).kind, VerdictKind::unique);
  EXPECT_EQ(feed.engine.stats().unique, 2U);
}

TEST(Engine, ChineseTraditionalVariantIsADuplicate) {
  Feed feed(defaults());
  ASSERT_EQ(feed("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。床前明月光，疑是地上霜。").kind,
            VerdictKind::unique);
  // 觉 -> 覺 (traditional), full-width punctuation -> ASCII.
  const Verdict v = feed("春眠不覺晓,处处闻啼鸟. 夜来风雨声,花落知多少. 床前明月光,疑是地上霜.");
  EXPECT_EQ(v.kind, VerdictKind::duplicate);
  // A different poem by the same author is not.
  EXPECT_EQ(feed("举头望明月，低头思故乡。白日依山尽，黄河入海流。欲穷千里目，更上一层楼。").kind,
            VerdictKind::unique);
}

TEST(Engine, ExactCopyIsADuplicateWithSimilarityOne) {
  Feed feed(defaults());
  feed(kOtherPost);
  const Verdict v = feed(kOtherPost);
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_EQ(v.match->distance, 0);
  EXPECT_DOUBLE_EQ(*v.similarity, 1.0);
}

TEST(Engine, SketchFindsMatchesBeyondTheSimHashRadius) {
  // One changed word in a short text moves the SimHash by several bits: the
  // match comes from a band and is reported with its true distance.
  // Every variant is such a match (a duplicate is not kept, so each is
  // compared with the base alone): six variants, six sketch matches. The
  // recent-text stage is off: it would judge these gray pairs (J 0.75-0.84)
  // by their exact Jaccard against 0.8 (tests/unit/dedup/index/recent_texts_test.cc).
  DedupOptions options;
  options.sketch.recent = 0;
  Feed feed(options);
  const std::string base = "the night train to the coast was late again and nobody told us why";
  ASSERT_EQ(feed(base).kind, VerdictKind::unique);
  const int max_distance = feed.engine.options().index.max_distance;
  const std::vector<std::string> words = {"bus", "ferry", "tram", "plane", "boat", "coach"};
  for (const auto& word : words) {
    std::string text = base;
    text.replace(text.find("train"), 5, word);
    const Verdict v = feed(text);
    ASSERT_EQ(v.kind, VerdictKind::duplicate) << text;
    EXPECT_EQ(v.match->of, RecordRef{1}) << text;
    EXPECT_GT(v.match->distance, max_distance) << text << ": within the SimHash radius";
    EXPECT_EQ(v.match->distance, hamming_distance(v.fingerprint, v.match->fingerprint)) << text;
  }
  EXPECT_EQ(feed.engine.stats().duplicate, words.size());
  EXPECT_EQ(feed.engine.stats().sketch_matches, words.size());
}

TEST(Engine, ClassicModeHasNoSimilarityAndStaysWithinK) {
  Feed feed(classic());
  feed(kPost);
  const Verdict v = feed(kPost);
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_FALSE(v.similarity.has_value());
  EXPECT_EQ(feed.engine.stats().sketch.bytes, 0U);
}

TEST(Engine, ExpiredEntriesAreNeverMatched) {
  DedupOptions o = defaults();
  o.window.duration = std::chrono::minutes(1);
  Feed feed(o);
  feed(kPost);
  EXPECT_EQ(feed(std::string(kPost) + " #running", 61'000).kind, VerdictKind::unique);

  DedupOptions small = defaults();
  small.window.max_entries = 1;
  Feed bounded(small);
  bounded(kPost);
  bounded(kOtherPost);  // evicts kPost
  EXPECT_EQ(bounded(std::string(kPost) + " #running").kind, VerdictKind::unique);
}

TEST(Engine, ReplayOfTheSameRecordIsNotItsOwnDuplicate) {
  Engine engine(defaults());
  EXPECT_EQ(engine.process(kPost, EventTime{1}, RecordRef{5}).kind, VerdictKind::unique);
  EXPECT_EQ(engine.process(kPost, EventTime{2}, RecordRef{5}).kind, VerdictKind::unique);
  EXPECT_EQ(engine.process(kPost, EventTime{3}, RecordRef{6}).kind, VerdictKind::duplicate);
}

TEST(Engine, RememberedFingerprintsMatchBySimHashAlone) {
  Engine source(classic());
  const Verdict kept = source.process(kPost, EventTime{1}, RecordRef{1});
  Engine engine(defaults());
  engine.remember(kept.fingerprint, EventTime{1}, RecordRef{1});
  const Verdict v = engine.process(kPost, EventTime{2}, RecordRef{2});
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_EQ(v.match->of, RecordRef{1});
  EXPECT_FALSE(v.similarity.has_value());
}

TEST(Engine, InvalidSketchOptionsThrow) {
  DedupOptions o;
  o.sketch.bits = 3;
  EXPECT_THROW(Engine{o}, std::invalid_argument);
}

// window.max_memory over the whole engine: the window, the sketch index and
// the recent-text cache.
std::string distinct_text(std::mt19937_64& rng) {
  std::string text;
  for (int w = 0; w < 12; ++w) {
    std::uint64_t r = rng();
    if (!text.empty()) text += ' ';
    for (int c = 0; c < 6; ++c, r /= 26) text += static_cast<char>('a' + r % 26);
  }
  return text;
}

TEST(EngineMemory, BytesNeverExceedMaxMemoryWhileTheWindowFills) {
  constexpr std::size_t kMaxMemory = std::size_t{1} << 20;
  for (const bool sketch : {true, false}) {
    SCOPED_TRACE(sketch ? "sketch on" : "sketch off");
    DedupOptions options;
    options.sketch.enabled = sketch;
    options.sketch.recent = 256;
    options.window.max_memory = kMaxMemory;
    Engine engine(options);
    const std::size_t capacity = engine.capacity();
    EXPECT_EQ(capacity, engine_capacity(options));
    EXPECT_GE(capacity, sketch ? 4'000U : 7'000U);
    const MemoryFootprint full = memory_footprint(options, capacity);
    EXPECT_LE(full.total(), kMaxMemory);
    EXPECT_GT(memory_footprint(options, capacity + 1).total(), kMaxMemory);
    std::mt19937_64 rng(sketch ? 1 : 2);
    std::size_t most = 0;
    for (std::uint64_t i = 1; i <= 3 * capacity; ++i) {
      engine.process(distinct_text(rng), EventTime{0}, RecordRef{i});
      most = std::max(most, engine.bytes());
      ASSERT_LE(engine.bytes(), kMaxMemory) << "after text " << i;
    }
    const EngineStats stats = engine.stats();
    EXPECT_EQ(stats.bytes, engine.bytes());
    EXPECT_GE(stats.unique, 3 * capacity - 3) << "the texts are distinct";
    EXPECT_LE(stats.window.entries, capacity);
    EXPECT_GE(stats.window.entries, capacity - capacity / 100);
    EXPECT_GT(most, kMaxMemory / 2);
  }
}

TEST(EngineMemory, TheTightestOfMaxEntriesAndMaxMemoryWins) {
  DedupOptions options;
  options.sketch.recent = 256;
  options.window.max_memory = std::size_t{1} << 20;
  const std::size_t by_memory = engine_capacity(options);
  options.window.max_entries = 1'000;
  EXPECT_EQ(engine_capacity(options), 1'000U);
  EXPECT_EQ(Engine(options).capacity(), 1'000U);
  options.window.max_entries = 10 * by_memory;
  EXPECT_EQ(Engine(options).capacity(), by_memory);
  options.window.max_memory = 0;
  EXPECT_EQ(Engine(options).capacity(), 10 * by_memory);
}

TEST(EngineMemory, TheRecentTextCacheTakesAtMostASixteenthOfMaxMemory) {
  DedupOptions options;  // dedup.sketch.recent 8192: 8.5 MiB at its fullest
  const std::size_t whole = memory_footprint(options, 1'000).recent;
  EXPECT_GT(whole, std::size_t{7} << 20);
  EXPECT_EQ(recent_capacity(options), 8192U) << "no bound in bytes: the whole cache";
  options.window.max_memory = 16 * whole;  // a sixteenth is the whole cache
  EXPECT_EQ(recent_capacity(options), 8192U);
  options.window.max_memory = 16 * whole - 1;
  EXPECT_EQ(recent_capacity(options), 4096U);
  options.window.max_memory = std::size_t{12} << 20;
  EXPECT_EQ(recent_capacity(options), 512U);
  EXPECT_LE(memory_footprint(options, 1'000).recent, options.window.max_memory / 16);
  EXPECT_EQ(engine_capacity(options), 81'920U) << "12 MiB: the window keeps the rest";
  EXPECT_EQ(memory_footprint(options, 1'000).reposts, RepostSketches::max_bytes(512));
  EXPECT_LE(memory_footprint(options, engine_capacity(options)).total(), options.window.max_memory);
  options.window.max_memory = std::size_t{4} << 20;  // less than the whole cache
  EXPECT_EQ(recent_capacity(options), 128U);
  EXPECT_NO_THROW(validate_memory(options));
  EXPECT_GE(Engine(options).capacity(), 20'000U);
  options.window.max_memory = std::size_t{64} << 10;  // not even 1,024 entries
  EXPECT_THROW(validate_memory(options), std::invalid_argument);
  EXPECT_THROW(Engine{options}, std::invalid_argument);
  options.sketch.recent = 0;
  options.window.max_memory = std::size_t{12} << 20;
  EXPECT_EQ(recent_capacity(options), 0U);
  EXPECT_EQ(memory_footprint(options, 1'000).recent, 0U);
  options.sketch.recent = 8192;
  options.sketch.enabled = false;
  EXPECT_EQ(recent_capacity(options), 0U);
}

// Filled past its capacity with distinct texts, an engine bounded to 12 MiB
// keeps its capacity's entries (within the early evictions of its spills)
// and its bytes within the bound.
TEST(EngineMemory, TwelveMebibytesHoldTheirCapacityOfDistinctTexts) {
  DedupOptions options;
  options.window.max_memory = std::size_t{12} << 20;
  Engine engine(options);
  std::mt19937_64 rng(12);
  std::size_t most = 0;
  const std::size_t texts = engine.capacity() + engine.capacity() / 2;
  for (std::uint64_t i = 1; i <= texts; ++i) {
    engine.process(distinct_text(rng), EventTime{0}, RecordRef{i});
    most = std::max(most, engine.bytes());
  }
  EXPECT_LE(most, options.window.max_memory);
  EXPECT_GE(engine.stats().window.entries, engine.capacity() - engine.capacity() / 50);
}

}  // namespace
}  // namespace neardup::dedup
