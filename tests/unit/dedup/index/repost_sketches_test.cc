#include "dedup/index/repost_sketches.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/fingerprint/sketch.h"
#include "tests/unit/dedup/engine/engine_feed.h"
#include "tests/unit/dedup/index/repost_texts.h"

namespace neardup::dedup {
namespace {

RepostSketches::Keys random_keys(std::mt19937_64& rng) {
  RepostSketches::Keys keys;
  for (auto& key : keys) key = rng();
  return keys;
}

std::vector<std::uint64_t> visited(const RepostSketches& cache, const RepostSketches::Keys& probe,
                                   std::uint64_t self = ~std::uint64_t{0}) {
  std::vector<std::uint64_t> refs;
  cache.for_each_candidate(probe, self,
                           [&](const RepostSketches::Repost& r) { refs.push_back(r.ref); });
  return refs;
}

TEST(RepostSketches, VisitsARepostSharingEveryBandOnce) {
  std::mt19937_64 rng(1);
  RepostSketches cache(16);
  const RepostSketches::Keys keys = random_keys(rng);
  cache.insert({Sketch{}, 5, 7, 6}, keys);
  cache.insert({Sketch{}, 6, 8, 7}, random_keys(rng));
  EXPECT_EQ(visited(cache, keys), std::vector<std::uint64_t>{7});
  RepostSketches::Keys one_band = random_keys(rng);  // one band key in common is enough
  one_band[5] = keys[5];
  EXPECT_EQ(visited(cache, one_band), std::vector<std::uint64_t>{7});
  EXPECT_TRUE(visited(cache, random_keys(rng)).empty());
}

TEST(RepostSketches, TheRingKeepsItsNewestCapacityInFixedMemory) {
  std::mt19937_64 rng(2);
  RepostSketches cache(4);
  const std::size_t bytes = cache.bytes();
  EXPECT_EQ(bytes, RepostSketches::max_bytes(4));
  std::vector<RepostSketches::Keys> keys;
  for (std::uint64_t i = 0; i < 10; ++i) {
    keys.push_back(random_keys(rng));
    cache.insert({Sketch{}, i, i, i + 1}, keys.back());
  }
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.bytes(), bytes);
  for (std::uint64_t i = 0; i < 10; ++i)
    EXPECT_EQ(visited(cache, keys[i]).size(), i >= 6 ? 1u : 0u) << i;
}

// A crowded key keeps its newest reposts: 1,000 with the same keys leave the
// newest kLineEntries in every band's line, visited newest first.
TEST(RepostSketches, AStormOfOneRepostKeepsItsNewestInEachLine) {
  std::mt19937_64 rng(3);
  RepostSketches cache(1024);
  const RepostSketches::Keys keys = random_keys(rng);
  for (std::uint64_t i = 0; i < 1000; ++i) cache.insert({Sketch{}, 0, i, 1}, keys);
  EXPECT_EQ(visited(cache, keys),
            (std::vector<std::uint64_t>{999, 998, 997, 996, 995, 994, 993, 992}));
  // Reposts each in one band's crowd: at most kMaxVisits of them, the newest.
  RepostSketches wide(1024);
  for (std::uint64_t i = 0; i < 64; ++i) {
    RepostSketches::Keys one = random_keys(rng);
    one[i % RepostSketches::kBands] = keys[i % RepostSketches::kBands];
    wide.insert({Sketch{}, 0, i, 1}, one);
  }
  const auto refs = visited(wide, keys);
  ASSERT_EQ(refs.size(), RepostSketches::kMaxVisits);
  EXPECT_EQ(refs.front(), 63u);
  EXPECT_EQ(refs.back(), 32u);
}

TEST(RepostSketches, ARecordDecidedAgainMeetsNothingKeptAfterItsOwnRepost) {
  std::mt19937_64 rng(4);
  RepostSketches cache(16);
  const RepostSketches::Keys keys = random_keys(rng);
  for (std::uint64_t ref = 1; ref <= 3; ++ref) cache.insert({Sketch{}, 0, ref, 1}, keys);
  EXPECT_EQ(visited(cache, keys, 2), std::vector<std::uint64_t>{1});
  EXPECT_EQ(visited(cache, keys, 9), (std::vector<std::uint64_t>{3, 2, 1}));
}

using engine_testing::Feed;
using repost_testing::kFirst;
using repost_testing::kSecond;
using repost_testing::kStory;

TEST(EngineRepostSketches, ALongRepostOfARepostIsADuplicateOfTheOriginal) {
  Feed feed{DedupOptions{}};
  ASSERT_EQ(feed(kStory).kind, VerdictKind::unique);
  const Verdict first = feed(kFirst);
  ASSERT_EQ(first.kind, VerdictKind::duplicate);
  EXPECT_EQ(first.match->of.value, 1u);
  EXPECT_DOUBLE_EQ(*first.similarity, 35.0 / 48.0);
  EXPECT_EQ(feed.engine.stats().long_reposts, 1u);
  const Verdict second = feed(kSecond);
  ASSERT_EQ(second.kind, VerdictKind::duplicate);
  EXPECT_EQ(second.match->of.value, 1u) << "of the kept story, through the dropped repost";
  EXPECT_DOUBLE_EQ(*second.similarity, 37.0 / 48.0) << "to the repost it is close to";
  EXPECT_EQ(second.match->distance, 13);
  EXPECT_EQ(second.count, 2u);
  EXPECT_EQ(feed.engine.stats().repost_matches, 1u);
  EXPECT_EQ(feed.engine.stats().long_reposts, 2u) << "the second is a repost too";
  EXPECT_EQ(feed.engine.stats().window.entries, 1u) << "reposts are no window entries";

  // Without the first repost, the second is another story.
  Feed direct{DedupOptions{}};
  direct(kStory);
  EXPECT_EQ(direct(kSecond).kind, VerdictKind::unique);
}

TEST(EngineRepostSketches, RecordsDecidedAgainGetTheirFirstVerdicts) {
  Engine engine{DedupOptions{}};
  const std::int64_t t = 1'700'000'000'000;
  ASSERT_EQ(engine.process(kStory, EventTime{t}, RecordRef{1}).kind, VerdictKind::unique);
  ASSERT_EQ(engine.process(kFirst, EventTime{t + 1}, RecordRef{2}).kind, VerdictKind::duplicate);
  ASSERT_EQ(engine.process(kSecond, EventTime{t + 2}, RecordRef{3}).kind, VerdictKind::duplicate);
  for (int round = 0; round < 2; ++round) {  // aborted twice
    EXPECT_EQ(engine.process(kStory, EventTime{t}, RecordRef{1}).kind, VerdictKind::unique)
        << "its reposts, judged after it, do not count";
    const Verdict first = engine.process(kFirst, EventTime{t + 1}, RecordRef{2});
    ASSERT_EQ(first.kind, VerdictKind::duplicate);
    EXPECT_DOUBLE_EQ(*first.similarity, 35.0 / 48.0);
    const Verdict second = engine.process(kSecond, EventTime{t + 2}, RecordRef{3});
    ASSERT_EQ(second.kind, VerdictKind::duplicate);
    EXPECT_EQ(second.match->of.value, 1u);
    EXPECT_DOUBLE_EQ(*second.similarity, 37.0 / 48.0) << "not 1.0 against its own repost";
  }
}

// An Analysis made another way than by analyze() (the judge decodes one from
// a request, without repost keys) gets from key_reposts() the keys analyze()
// makes, and is judged alike; a short text, or any text of an engine without
// a repost cache, gets none.
TEST(EngineRepostSketches, AnAnalysisMadeElsewhereIsKeyedAsAnalyzeKeysIt) {
  Feed feed{DedupOptions{}};
  ASSERT_EQ(feed(kStory).kind, VerdictKind::unique);
  ASSERT_EQ(feed(kFirst).kind, VerdictKind::duplicate);
  const Analysis analyzed = feed.engine.analyze(kSecond);
  ASSERT_TRUE(analyzed.summary.exact.empty());
  EXPECT_EQ(analyzed.repost_keys, RepostSketches::keys_of(analyzed.summary.sketch.sketch));
  Analysis decoded;
  decoded.summary.fingerprint = analyzed.summary.fingerprint;
  decoded.summary.features = analyzed.summary.features;
  decoded.summary.chars = analyzed.summary.chars;
  decoded.summary.sketch = analyzed.summary.sketch;
  decoded.text_bytes = analyzed.text_bytes;
  feed.engine.key_reposts(decoded);
  EXPECT_EQ(decoded.repost_keys, analyzed.repost_keys);
  const Verdict v = feed.engine.decide(decoded, EventTime{feed.now + 1000}, RecordRef{3});
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_EQ(v.match->of.value, 1u) << "through the repost";
  EXPECT_DOUBLE_EQ(*v.similarity, 37.0 / 48.0);

  const Analysis short_text = feed.engine.analyze("rain closes the bridge south of town tonight");
  ASSERT_FALSE(short_text.summary.exact.empty());
  EXPECT_EQ(short_text.repost_keys, RepostSketches::Keys{});

  DedupOptions no_cache;
  no_cache.sketch.recent = 0;
  Engine without{no_cache};
  Analysis long_text = without.analyze(kSecond);
  ASSERT_NE(long_text.summary.sketch.shingles, 0u);
  EXPECT_EQ(long_text.repost_keys, RepostSketches::Keys{});
  without.key_reposts(long_text);
  EXPECT_EQ(long_text.repost_keys, RepostSketches::Keys{});
}

// A window rebuilt from the changelog (fingerprint and sketch of each kept
// entry) starts with the cache empty: the reposts judged after the restart
// fill it, and a repost of one of them is found as before.
TEST(EngineRepostSketches, ARebuiltWindowFindsRepostsOfRepostsJudgedAfterIt) {
  Engine live{DedupOptions{}};
  const std::int64_t t = 1'700'000'000'000;
  const Verdict kept = live.process(kStory, EventTime{t}, RecordRef{1});
  ASSERT_EQ(kept.kind, VerdictKind::unique);
  Engine rebuilt{DedupOptions{}};
  rebuilt.remember(kept.fingerprint, EventTime{t}, RecordRef{1}, live.last_kept_sketch());
  EXPECT_EQ(rebuilt.stats().bytes, live.stats().bytes);
  ASSERT_EQ(rebuilt.process(kFirst, EventTime{t + 1}, RecordRef{2}).kind, VerdictKind::duplicate);
  const Verdict v = rebuilt.process(kSecond, EventTime{t + 2}, RecordRef{3});
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_EQ(v.match->of.value, 1u);
  EXPECT_DOUBLE_EQ(*v.similarity, 37.0 / 48.0);
  EXPECT_EQ(rebuilt.stats().repost_matches, 1u);
}

// 3,000 distinct reposts of one long story (one word of 90 replaced each):
// every one a duplicate of it, and the memory fixed by the cache's capacity
// (64 texts). A repost whose sketch equals the story's is not kept.
TEST(EngineRepostSketches, ARepostStormKeepsTheMemoryFixed) {
  DedupOptions options;
  options.sketch.recent = 64;
  Feed feed{options};
  ASSERT_EQ(feed(kStory).kind, VerdictKind::unique);
  std::vector<std::string> words;
  for (std::size_t at = 0, end = 0; at < kStory.size(); at = end + 1) {
    end = std::min(kStory.find(' ', at), kStory.size());
    words.emplace_back(kStory.substr(at, end - at));
  }
  std::size_t bytes = 0;
  std::uint64_t differing = 0;  // reposts whose sketch differs from the story's
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::string> edited = words;
    edited[static_cast<std::size_t>(i) % words.size()] = "storm" + std::to_string(i);
    std::string text;
    for (const std::string& w : edited) text += (text.empty() ? "" : " ") + w;
    const Verdict v = feed(text);
    ASSERT_EQ(v.kind, VerdictKind::duplicate) << i;
    ASSERT_EQ(v.match->of.value, 1u) << i;
    differing += *v.similarity < 1.0;
    if (i == 0) bytes = feed.engine.bytes();
    ASSERT_EQ(feed.engine.bytes(), bytes) << i;
  }
  EXPECT_EQ(differing, 2499u);
  EXPECT_EQ(feed.engine.stats().long_reposts, differing);
  EXPECT_EQ(feed.engine.stats().window.entries, 1u);
}

}  // namespace
}  // namespace neardup::dedup
