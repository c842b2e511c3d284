#include "dedup/index/recent_texts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/text/normalize.h"
#include "tests/unit/dedup/engine/engine_feed.h"

namespace neardup::dedup {
namespace {

constexpr std::uint64_t kNobody = ~std::uint64_t{0};  // a record that kept nothing

ExactShingles exact_of(std::string_view text, int bits = 2) {
  SketchOptions options;
  options.bits = bits;
  Normalizer normalizer;
  Sketcher sketcher(options);
  sketcher.run(normalizer.run(text));
  ExactShingles out;
  sketcher.exact_of_last(out);
  return out;
}

// Jaccard figures below: bench/quality/ground_truth.py's shingles() and jaccard().
TEST(ExactShingles, JaccardIsTheGroundTruthsOne) {
  EXPECT_DOUBLE_EQ(
      exact_jaccard(exact_of("the quick brown fox jumps"), exact_of("the quick brown fox jumped")),
      20.0 / 23.0);
  EXPECT_DOUBLE_EQ(
      exact_jaccard(exact_of("床前明月光疑是地上霜"), exact_of("床前明月光疑似地上霜")),
      7.0 / 11.0);
  EXPECT_DOUBLE_EQ(exact_jaccard(exact_of("Storm closes the north bridge tonight"),
                                 exact_of("storm closes the north bridge tonite!")),
                   30.0 / 35.0);
  EXPECT_EQ(exact_of("the quick brown fox jumps").hashes().size(), 21u);
}

// The early-stopping merge gives the exact figure at or above its threshold and
// something below the threshold otherwise: every pair of 300 random sets (no
// boilerplate, no words: the figure is the Jaccard), every threshold.
TEST(ExactShingles, SimilarityAtLeastAThresholdIsExactAtOrAboveIt) {
  std::mt19937 rng(9);
  std::vector<ExactShingles> sets;
  for (int n = 0; n < 300; ++n) {
    std::set<std::uint32_t> hashes;
    const std::size_t size = 1 + rng() % 60;
    // (even hashes: bit 0 marks boilerplate; a small range: many shared)
    while (hashes.size() < size) hashes.insert(2 * (rng() % 80));
    ExactShingles e;
    e.assign(std::vector<std::uint32_t>(hashes.begin(), hashes.end()), {});
    sets.push_back(e);
  }
  std::size_t above = 0;
  for (const ExactShingles& a : sets)
    for (const ExactShingles& b : sets)
      for (const double floor : {0.05, 0.5, 0.7, 0.8, 0.85, 1.0}) {
        const double exact = exact_jaccard(a, b);
        const double at_least = exact_similarity_at_least(a, b, floor).value;
        if (exact >= floor) {
          ++above;
          ASSERT_EQ(at_least, exact);
        } else {
          ASSERT_LT(at_least, floor);
        }
      }
  EXPECT_GT(above, 1000u);  // both sides of the floor were tried
  // With boilerplate marked in half of the sets (every fourth shingle not in the
  // story) and repost markers in a third: the same verdict and figures as the
  // whole merge wherever the whole merge says duplicate, none otherwise.
  std::size_t duplicates = 0;
  for (std::size_t n = 0; n < sets.size(); ++n) {
    const auto h = sets[n].hashes();
    if (n % 2 == 0 && h.size() >= 4) {
      std::vector<std::uint32_t> kept;
      for (std::size_t i = 0; i < h.size(); ++i)
        if (i % 4 != 3) kept.push_back(h[i]);
      ExactShingles story;
      story.assign(kept, {});
      sets[n].mark_boilerplate(story);
    }
    if (n % 3 == 0) sets[n].set_markers(1 + n % 5);
  }
  for (const ExactShingles& a : sets)
    for (const ExactShingles& b : sets)
      for (const double threshold : {0.5, 0.7, 0.8, 0.85}) {
        const ExactSimilarity whole = exact_similarity(a, b);
        const ExactSimilarity early = exact_similarity_at_least(a, b, threshold);
        if (exact_duplicate(whole, threshold)) {
          ++duplicates;
          ASSERT_EQ(early.value, whole.value);
          ASSERT_EQ(early.typo, whole.typo);
        } else {
          ASSERT_FALSE(exact_duplicate(early, threshold));
        }
      }
  EXPECT_GT(duplicates, 1000u);
}

TEST(ExactShingles, HashesAreSortedAndDistinct) {
  for (const std::string_view text :
       {"ha ha ha ha ha ha ha ha ha ha ha ha", "the quick brown fox jumps over the lazy dog",
        "床前明月光，疑是地上霜。举头望明月，低头思故乡。床前明月光", "x"}) {
    const ExactShingles e = exact_of(text);
    const auto h = e.hashes();
    ASSERT_FALSE(h.empty()) << text;
    EXPECT_TRUE(std::adjacent_find(h.begin(), h.end(), std::greater_equal<>()) == h.end())
        << text << ": not strictly increasing";
  }
  EXPECT_EQ(exact_of("ha ha ha ha ha ha ha ha ha ha ha ha").hashes().size(), 3u)
      << "'ha ha', 'a ha ', ' ha h' repeat";
}

// The story rule's figures on hand-made sets (odd hashes are boilerplate shingles).
TEST(ExactShingles, StorySimilarityLeavesOutBoilerplateWhenTheWholeTextsShareEnough) {
  auto set = [](std::vector<std::uint32_t> hashes, std::size_t markers = 0) {
    ExactShingles e;
    e.assign(hashes, {});
    e.set_markers(markers);
    return e;
  };
  const ExactShingles story = set({2, 4, 6, 8});
  const ExactShingles linked = set({2, 4, 6, 8, 11, 13});
  EXPECT_EQ(linked.boilerplate(), 2u);
  ExactSimilarity s = exact_similarity(story, linked);
  EXPECT_DOUBLE_EQ(s.whole, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.story, 1.0);
  EXPECT_DOUBLE_EQ(s.texts, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.value, 1.0);
  EXPECT_DOUBLE_EQ(exact_similarity_at_least(story, linked, 0.8).value, 1.0);
  // Its repost marker's 2 shingles count as not shared: the whole texts share 4 of 8.
  const ExactShingles marked = set({2, 4, 6, 8, 11, 13}, 2);
  s = exact_similarity(story, marked);
  EXPECT_DOUBLE_EQ(s.texts, 0.5);
  EXPECT_DOUBLE_EQ(s.value, 4.0 / 6.0) << "below kStoryGuard the whole sets decide";
  EXPECT_FALSE(exact_duplicate(exact_similarity_at_least(story, marked, 0.8), 0.8));
  // A shingle is the same marked or not (a word in a hashtag and in the text) for
  // the whole sets, and not part of the story of the text that marks it.
  s = exact_similarity(story, set({3, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(s.whole, 1.0);
  EXPECT_DOUBLE_EQ(s.story, 0.75);
  EXPECT_DOUBLE_EQ(s.value, 1.0);
  // Without boilerplate on either side, the figure is the exact Jaccard.
  EXPECT_DOUBLE_EQ(exact_similarity_at_least(story, set({2, 4, 6, 10}), 0.5).value,
                   exact_jaccard(story, set({2, 4, 6, 10})));
}

// The Fingerprinter marks a short text's link, hashtag and mention shingles and
// counts its repost markers' shingles.
TEST(ExactShingles, TheFingerprinterMarksBoilerplateAndCountsMarkers) {
  Engine engine{DedupOptions{}};
  const ExactShingles plain = engine.analyze("Dry clean only, then iron.").summary.exact;
  EXPECT_EQ(plain.boilerplate(), 0u);
  EXPECT_EQ(plain.markers(), 0u);
  const ExactShingles tagged = engine.analyze("Dry clean only, then iron. #laundry").summary.exact;
  EXPECT_GT(tagged.boilerplate(), 0u);
  EXPECT_EQ(tagged.hashes().size() - tagged.boilerplate(), plain.hashes().size());
  EXPECT_EQ(tagged.markers(), 0u);
  const ExactShingles passed_on =
      engine.analyze("RT @newsdesk: Dry clean only, then iron.").summary.exact;
  EXPECT_EQ(passed_on.boilerplate(), 0u);
  EXPECT_GT(passed_on.markers(), 0u);
  EXPECT_TRUE(std::ranges::equal(passed_on.hashes(), plain.hashes()));
  for (int band = kRecentBands / 2; band < kRecentBands; ++band)
    EXPECT_EQ(tagged.band_key(band), plain.band_key(band)) << "the story's bands: " << band;
  // The words of the story, for the typo rule: ASCII texts only.
  EXPECT_EQ(plain.words(), "dry clean only then iron");
  EXPECT_EQ(tagged.words(), "dry clean only then iron");
  EXPECT_EQ(passed_on.words(), "dry clean only then iron");
  EXPECT_EQ(engine.analyze("今日有雨，注意出行").summary.exact.words(), "");
}

TEST(ExactShingles, ALongTextHasNone) {
  std::string words;
  for (int i = 0; i < 40; ++i) words += "word" + std::to_string(i) + " ";
  EXPECT_TRUE(exact_of(words).empty()) << "more than kMaxExactShingles shingles";
  SketchOptions off;
  off.recent = 0;
  Normalizer normalizer;
  Sketcher sketcher(off);
  sketcher.run(normalizer.run("short text"));
  ExactShingles out = exact_of("another short text");
  ASSERT_FALSE(out.empty());
  sketcher.exact_of_last(out);
  EXPECT_TRUE(out.empty()) << "recent = 0 keeps no sets";
}

ExactShingles with_keys(std::initializer_list<std::uint32_t> keys) {
  ExactShingles e = exact_of("any short text");
  const std::vector<std::uint32_t> sorted(keys);
  e.set_keys(sorted);
  return e;
}

TEST(ExactShingles, MustMatchConflictNeedsATokenOnEachSide) {
  EXPECT_TRUE(must_match_conflict(with_keys({1, 5}), with_keys({1, 6})));
  EXPECT_FALSE(must_match_conflict(with_keys({1, 5}), with_keys({1, 5, 9}))) << "one side adds";
  EXPECT_FALSE(must_match_conflict(with_keys({}), with_keys({3})));
  EXPECT_FALSE(must_match_conflict(with_keys({2, 4}), with_keys({2, 4})));
  EXPECT_TRUE(must_match_conflict(with_keys({7}), with_keys({3})));
}

std::uint32_t name_key(std::string_view name) {
  std::uint32_t letters = 0;
  for (const char c : name) letters |= 1U << ((c | 0x20) - 'a');
  return kNameKeyBit | (static_cast<std::uint32_t>(name.size()) << 26) | letters;
}

TEST(ExactShingles, NamesConflictUnlessOneTypoApart) {
  const auto names = [](std::initializer_list<std::string_view> words, std::uint32_t number = 0) {
    std::vector<std::uint32_t> keys;
    if (number) keys.push_back(number);
    for (const std::string_view w : words) keys.push_back(name_key(w));
    std::sort(keys.begin(), keys.end());
    ExactShingles e = exact_of("any short text");
    e.set_keys(keys);
    return e;
  };
  EXPECT_TRUE(must_match_conflict(names({"Dakar"}), names({"Perth"})));
  EXPECT_TRUE(must_match_conflict(names({"Dakar"}), names({"Dallas"}))) << "four letters apart";
  EXPECT_FALSE(must_match_conflict(names({"Dakar"}), names({"Dkaar"}))) << "two letters swapped";
  EXPECT_FALSE(must_match_conflict(names({"Alex"}), names({"Avlex"}))) << "a letter inserted";
  EXPECT_FALSE(must_match_conflict(names({"Luke"}), names({"Lukt"}))) << "a letter substituted";
  EXPECT_FALSE(must_match_conflict(names({"Maria", "Lopez"}), names({"Lopez"})))
      << "one side's names all near the other's";
  EXPECT_TRUE(must_match_conflict(names({"Lopez"}, 7), names({"Lopez"}, 9)))
      << "a number alone on each side";
  EXPECT_TRUE(must_match_conflict(names({"Lopez"}, 7), names({"Chen"})))
      << "a number on one side, a name on the other";
}

TEST(RecentTexts, FindsAKeptTextBySequenceUntilItIsEvicted) {
  RecentTexts recent(4, kRecentBands);
  for (std::uint64_t s = 10; s < 16; ++s)
    recent.insert(s * 2, s, exact_of("text " + std::to_string(s)));
  EXPECT_EQ(recent.find(20), nullptr) << "evicted: capacity 4";
  EXPECT_EQ(recent.find(22), nullptr);
  ASSERT_NE(recent.find(24), nullptr);
  ASSERT_NE(recent.find(30), nullptr);
  const auto kept = recent.find(30)->hashes();
  const ExactShingles expected = exact_of("text 15");
  EXPECT_TRUE(
      std::equal(kept.begin(), kept.end(), expected.hashes().begin(), expected.hashes().end()));
  EXPECT_EQ(recent.find(25), nullptr) << "never kept";
  EXPECT_EQ(recent.find(32), nullptr);
}

TEST(RecentTexts, CandidatesShareABandAndAreVisitedOnce) {
  RecentTexts recent(8, kRecentBands);
  recent.insert(1, 1, exact_of("Storm closes the north bridge tonight"));
  recent.insert(2, 2, exact_of("A completely different message about lunch"));
  recent.insert(3, 3, exact_of("Storm closes the north bridge tonight"));
  std::multiset<std::uint64_t> seen;
  recent.for_each_candidate(exact_of("Storm closes the north bridge tonight"), 0.8, kNobody,
                            [&](std::uint64_t s, auto&&...) { seen.insert(s); });
  EXPECT_EQ(seen, (std::multiset<std::uint64_t>{1, 3}));
}

TEST(RecentTexts, ARepostIsVisitedAsItsOriginalAndFindReturnsTheOriginalOnly) {
  RecentTexts recent(8, kRecentBands);
  const ExactShingles original = exact_of("Storm closes the north bridge tonight");
  const ExactShingles repost = exact_of("Storm closes the north bridge tonight!! #storm");
  recent.insert(4, 4, original);
  recent.insert(6, 6, exact_of("A completely different message about lunch"));
  recent.insert_repost(4, 104, repost);
  recent.insert_repost(6, 106, exact_of("A completely different message about dinner"));
  recent.insert(9, 9, exact_of("Yet another message, about the weather"));
  // (sequence, shingles, ref, repost)
  std::vector<std::tuple<std::uint64_t, std::size_t, std::uint64_t, bool>> seen;
  recent.for_each_candidate(
      repost, 0.5, kNobody,
      [&](std::uint64_t s, const ExactShingles& text, const RecentTexts::Visited& v) {
        seen.emplace_back(s, text.hashes().size(), v.ref, v.repost);
      });
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 2u) << "the original and its repost, each once";
  EXPECT_EQ(seen[0],
            std::make_tuple(std::uint64_t{4}, original.hashes().size(), std::uint64_t{4}, false));
  EXPECT_EQ(seen[1],
            std::make_tuple(std::uint64_t{4}, repost.hashes().size(), std::uint64_t{104}, true))
      << "kept by record 104";

  // Decided again, record 104 meets neither its own repost nor anything kept
  // after its first decision but kept texts; record 4 does not meet its own text.
  std::vector<std::uint64_t> refs;
  auto refs_seen = [&](std::uint64_t self) {
    refs.clear();
    recent.for_each_candidate(
        repost, 0.5, self, [&](std::uint64_t, const ExactShingles&, const RecentTexts::Visited& v) {
          refs.push_back(v.ref);
        });
    std::sort(refs.begin(), refs.end());
    return refs;
  };
  EXPECT_EQ(refs_seen(104), std::vector<std::uint64_t>{4});
  EXPECT_TRUE(refs_seen(4).empty()) << "its own text, and the repost kept after it";
  EXPECT_EQ(refs_seen(kNobody), (std::vector<std::uint64_t>{4, 104}));
  auto same = [](const ExactShingles* a, const ExactShingles& b) {
    return a && std::ranges::equal(a->hashes(), b.hashes());
  };
  EXPECT_TRUE(same(recent.find(4), original)) << "the original, not its repost";
  EXPECT_TRUE(same(recent.find(6), exact_of("A completely different message about lunch")));
  EXPECT_TRUE(same(recent.find(9), exact_of("Yet another message, about the weather")));
  EXPECT_EQ(recent.find(5), nullptr);
  EXPECT_EQ(recent.find(7), nullptr);

  RecentTexts small(2, kRecentBands);
  small.insert(4, 4, original);
  small.insert_repost(4, 104, repost);
  small.insert(5, 5, exact_of("one"));
  EXPECT_EQ(small.find(4), nullptr) << "evicted";
  int visits = 0;
  small.for_each_candidate(repost, 0.5, kNobody, [&](auto&&...) { ++visits; });
  EXPECT_EQ(visits, 1) << "the repost outlives its original's slot";
}

TEST(RecentTexts, AWalkVisitsAtMostKMaxVisitsTexts) {
  RecentTexts recent(1024, kRecentBands);
  const ExactShingles story = exact_of("Storm closes the north bridge tonight");
  for (std::uint64_t s = 1; s <= 200; ++s) recent.insert_repost(1, 1000 + s, story);
  std::vector<std::uint64_t> refs;
  recent.for_each_candidate(
      story, 0.8, kNobody, [&](std::uint64_t, const ExactShingles&, const RecentTexts::Visited& v) {
        refs.push_back(v.ref);
      });
  ASSERT_EQ(refs.size(), RecentTexts::kMaxVisits);
  EXPECT_EQ(refs.front(), 1200u) << "newest first";
  EXPECT_EQ(refs.back(), 1200u - RecentTexts::kMaxVisits + 1);
}

TEST(RecentTexts, EvictedTextsAreNoCandidates) {
  RecentTexts recent(2, kRecentBands);
  recent.insert(1, 1, exact_of("Storm closes the north bridge tonight"));
  recent.insert(2, 2, exact_of("one"));
  recent.insert(3, 3, exact_of("two"));
  int visits = 0;
  recent.for_each_candidate(exact_of("Storm closes the north bridge tonight"), 0.8, kNobody,
                            [&](auto&&...) { ++visits; });
  EXPECT_EQ(visits, 0);
}

TEST(RecentTexts, BytesCountEachSlotsSetAsTheLargestItHasHeld) {
  RecentTexts recent(1, kRecentBands);  // one slot: each text replaces the last
  const std::size_t empty = recent.bytes();
  const ExactShingles large = exact_of("Storm closes the north bridge tonight as rivers rise");
  const ExactShingles small = exact_of("one");
  const ExactShingles larger =
      exact_of("Storm closes the north bridge tonight as rivers rise across the whole county");
  // A slot's set is a copy: its capacity is the size of the largest set it held.
  const std::size_t large_set = ExactShingles(large).capacity_bytes();
  const std::size_t larger_set = ExactShingles(larger).capacity_bytes();
  ASSERT_LT(ExactShingles(small).capacity_bytes(), large_set);
  ASSERT_LT(large_set, larger_set);
  const std::size_t record = 4 * sizeof(std::uint64_t);  // the map entry of the record kept
  recent.insert(2, 1, large);
  EXPECT_EQ(recent.bytes(), empty + record + large_set);
  recent.insert(4, 2, small);
  EXPECT_EQ(recent.bytes(), empty + record + large_set) << "a smaller set keeps the allocation";
  recent.insert(6, 3, larger);
  EXPECT_EQ(recent.bytes(), empty + record + larger_set);
  recent.insert(8, 4, large);
  EXPECT_EQ(recent.bytes(), empty + record + larger_set);
}

using engine_testing::Feed;

TEST(EngineRecentTexts, ExactJaccardDecidesBetweenShortTexts) {
  Feed feed{DedupOptions{}};
  feed("Storm closes the north bridge tonight");
  const Verdict repost = feed("storm closes the north bridge tonite!");  // J = 30/35
  ASSERT_EQ(repost.kind, VerdictKind::duplicate);
  EXPECT_DOUBLE_EQ(*repost.similarity, 30.0 / 35.0) << "the exact figure, not an estimate";
  EXPECT_EQ(feed("床前明月光疑似地上霜").kind, VerdictKind::unique);
  EXPECT_EQ(feed("床前明月光疑是地上霜").kind, VerdictKind::unique) << "J = 7/11 < 0.8";
}

TEST(EngineRecentTexts, ExactThresholdIsTheBoundary) {
  DedupOptions options;
  options.sketch.exact_threshold = 0.87;  // 20/23 = 0.8696 just below
  Feed feed{options};
  feed("the quick brown fox jumps");
  EXPECT_EQ(feed("the quick brown fox jumped").kind, VerdictKind::unique);
  options.sketch.exact_threshold = 0.869;
  Feed lower{options};
  lower("the quick brown fox jumps");
  EXPECT_EQ(lower("the quick brown fox jumped").kind, VerdictKind::duplicate);
}

TEST(EngineRecentTexts, MustMatchTellsTemplatedStoriesApartAndKeepsReposts) {
  DedupOptions options;
  options.text.strip_boilerplate = true;
  options.text.must_match = MustMatch::numbers_and_names;
  Feed feed{options};
  const std::string_view story =
      "Perth: the city council approves the new flood barrier for the harbour";
  feed(story);
  EXPECT_EQ(feed("Dakar: the city council approves the new flood barrier for the harbour").kind,
            VerdictKind::unique)
      << "J = 0.866, but another place";
  EXPECT_EQ(
      feed("Alert: disk usage on db-12.prod.example.net is high, check the cleanup job now").kind,
      VerdictKind::unique);
  EXPECT_EQ(
      feed("Alert: disk usage on db-13.prod.example.net is high, check the cleanup job now").kind,
      VerdictKind::unique)
      << "J = 0.870, but another host number";
  EXPECT_EQ(
      feed("via @CityWire: Perth: the city council approves the new flood barrier for the harbour "
           "https://t.co/xyz #news")
          .kind,
      VerdictKind::duplicate);
  EXPECT_EQ(feed("perth: the city council approves the new flood barrier for the harbour!!").kind,
            VerdictKind::duplicate)
      << "a name lost to lower case is no conflict";

  DedupOptions plain;
  plain.text.must_match = MustMatch::none;
  Feed without{plain};
  without(story);
  EXPECT_EQ(without("Dakar: the city council approves the new flood barrier for the harbour").kind,
            VerdictKind::duplicate)
      << "without must_match the shingles alone decide";
}

TEST(EngineRecentTexts, DefaultJudgesShortTextsWithoutTheirRepostMarkers) {
  Feed feed{DedupOptions{}};
  feed("Dry clean only.");
  feed("Live free or die.");
  feed("今日有雨，注意出行");
  EXPECT_EQ(feed("RT @bob_smith: Dry clean only.").kind, VerdictKind::duplicate);
  EXPECT_EQ(feed("Live free or die. (via @newsdesk)").kind, VerdictKind::duplicate);
  EXPECT_EQ(feed("转发 @人民日报：今日有雨，注意出行").kind, VerdictKind::duplicate);
  EXPECT_EQ(feed("今日有雨，注意出行 //@每日一句:").kind, VerdictKind::duplicate);
  feed("Kilroy was here!");
  EXPECT_EQ(feed("@bob_smith Kilroy was here!").kind, VerdictKind::unique)
      << "a mention that addresses someone is part of the text (J = 0.52)";
  EXPECT_EQ(feed("Kilroy was here! https://t.co/abcdefgh").kind, VerdictKind::unique)
      << "a URL stays (dedup.strip_boilerplate removes it)";
}

// A link, hashtags or a mention added to a short text: the texts are judged
// without them when the whole texts share at least kStoryGuard (0.6), where the
// ground truth's gray zone begins. Each pair on an engine of its own.
TEST(EngineRecentTexts, DefaultJudgesALinkOrHashtagsAddedByTheStory) {
  auto second = [](const std::string& first, const std::string& then) {
    Feed feed{DedupOptions{}};
    feed(first);
    return feed(then);
  };
  const std::string storm = "Storm closes the north bridge tonight as the river rises";
  const Verdict link = second(storm, storm + " https://t.co/x9Y2ab");
  ASSERT_EQ(link.kind, VerdictKind::duplicate) << "the whole texts share 0.735";
  EXPECT_DOUBLE_EQ(*link.similarity, 1.0);
  EXPECT_EQ(second(storm, storm + " #storm #bridge").kind, VerdictKind::duplicate);
  EXPECT_EQ(second(storm, "RT @newsdesk: " + storm + " #storm").kind, VerdictKind::duplicate);
  const std::string dry = "Dry clean only, then iron.";
  EXPECT_EQ(second(dry, dry + " #laundry #tips").kind, VerdictKind::duplicate)
      << "the whole texts share 0.606";
  EXPECT_EQ(second(dry, "RT @newsdesk: " + dry + " #laundry #tips").kind, VerdictKind::unique)
      << "with the marker's shingles the whole texts share less than 0.6";
  EXPECT_EQ(second(dry, dry + " https://news.example.org/2025/11/29/laundry").kind,
            VerdictKind::unique)
      << "the link is most of the text (0.323)";
  EXPECT_EQ(second(dry + " #laundry #tips", dry).kind, VerdictKind::duplicate)
      << "either way round";
}

// One typo in a word of 4 letters or more (a letter replaced, added or left out,
// two swapped) leaves a short text a duplicate whatever the Jaccard, when the
// whole texts share at least kStoryGuard. Each pair on an engine of its own.
TEST(EngineRecentTexts, DefaultTakesATypoForARepost) {
  auto second = [](std::string_view first, std::string_view then) {
    Feed feed{DedupOptions{}};
    feed(first);
    return feed(then);
  };
  const Verdict swapped = second("Colors may fade in the wash", "Coolrs may fade in the wash");
  ASSERT_EQ(swapped.kind, VerdictKind::duplicate);
  EXPECT_NEAR(*swapped.similarity, 0.704, 0.0005) << "the exact Jaccard, below 0.8";
  const std::string_view bridge = "The police department reviews the north bridge";
  for (const std::string_view typo : {"The police department reivews the north bridge",
                                      "The police department reviews the nort bridge",
                                      "The police department reviews the northh bridge",
                                      "The police department reviewz the north bridge"})
    EXPECT_EQ(second(bridge, typo).kind, VerdictKind::duplicate) << typo;
  EXPECT_EQ(second("The police department reviews the north bridge #flood tonight",
                   "The police department reviews the nrth bridge tonight")
                .kind,
            VerdictKind::duplicate)
      << "a typo, and a hashtag inside the other text";
  EXPECT_EQ(second("Avoid contact with skin today", "Avoid contact with eyes today").kind,
            VerdictKind::unique)
      << "another word, not a typo";
  EXPECT_EQ(
      second("Ferry service resumes at pier 45 today", "Ferry service resumes at pier 46 today")
          .kind,
      VerdictKind::unique)
      << "a number is no typo";
  EXPECT_EQ(second("Colors may fade in the wash", "Colors may fade in the wahs").kind,
            VerdictKind::duplicate);
  EXPECT_EQ(second("The police department reviews the north bridge",
                   "The police department reviews the bridge north")
                .kind,
            VerdictKind::unique)
      << "two words, not one";
  EXPECT_EQ(second("Colors may fade.", "Coolrs may fade.").kind, VerdictKind::unique)
      << "the whole texts share 0.467 < 0.6";
  EXPECT_EQ(second("Ice on the road at dawn", "Ice in the road at dawn").kind, VerdictKind::unique)
      << "a word of fewer than 4 letters";
}

TEST(EngineRecentTexts, DefaultKeepsTemplatedStoriesApart) {
  Feed feed{DedupOptions{}};
  const std::string score =
      "The final score at the old stadium in the north of the city was 21 to 17 tonight before "
      "a record crowd";
  feed(score);
  EXPECT_EQ(feed("The final score at the old stadium in the north of the city was 17 to 21 "
                 "tonight before a record crowd")
                .kind,
            VerdictKind::unique)
      << "J = 0.845, the same numbers in another order";
  EXPECT_EQ(feed(score + " (via @jdoe42)").kind, VerdictKind::duplicate)
      << "a number added after the others";
  EXPECT_EQ(feed("2024 " + score).kind, VerdictKind::duplicate)
      << "a number added before the others";
  feed("Weather warning for Zagreb: wind gusts up to 130 km/h expected on Sunday");
  EXPECT_EQ(feed("Weather warning for Zagreb: wind gusts up to 17 km/h expected on Sunday").kind,
            VerdictKind::unique);
  feed("Perth: the police department reviews a flood barrier near the harbour");
  EXPECT_EQ(feed("Dakar: the police department reviews a flood barrier near the harbour").kind,
            VerdictKind::unique);
  EXPECT_EQ(feed("Porto: the police department reviews a flood barrier near the harbour").kind,
            VerdictKind::unique)
      << "J = 0.853, a name with three letters the other lacks";
  EXPECT_EQ(feed("Pertth: the police department reviews a flood barrier near the harbour").kind,
            VerdictKind::duplicate)
      << "a typo in the name";
  feed("Celebrity voices impersonated for the show tonight.");
  EXPECT_EQ(feed("All celebrity voices impersonated for the show tonight.").kind,
            VerdictKind::duplicate)
      << "a sentence's first word is no name";
}

TEST(EngineRecentTexts, StrippedUrlLeavesAChinesePostADuplicate) {
  DedupOptions options;
  options.text.strip_boilerplate = true;
  Feed feed{options};
  feed("床前明月光，疑是地上霜。举头望明月");
  EXPECT_EQ(feed("床前明月光，疑是地上霜。举头望明月 http://t.cn/A6xYz9k").kind,
            VerdictKind::duplicate);
  Feed plain{DedupOptions{}};
  plain("床前明月光，疑是地上霜。举头望明月");
  EXPECT_EQ(plain("床前明月光，疑是地上霜。举头望明月 http://t.cn/A6xYz9k").kind,
            VerdictKind::unique)
      << "the URL's ASCII makes it a 5-gram text: J is low";
}

}  // namespace
}  // namespace neardup::dedup

namespace neardup::dedup {
namespace {

TEST(EngineRecentTexts, ListedWordsMustMatchInAnyScript) {
  const std::string path = ::testing::TempDir() + "/must_match_words.txt";
  {
    std::ofstream out(path);
    out << "# places\n成都\n青岛\nPerth\n";
  }
  DedupOptions options;
  options.text.must_match_words = path;
  Feed feed{options};
  feed("成都警方通报：608名嫌疑人已被抓获，案件正在审理");
  EXPECT_EQ(feed("青岛警方通报：608名嫌疑人已被抓获，案件正在审理").kind, VerdictKind::unique)
      << "another listed place";
  EXPECT_EQ(feed("【转发】成都警方通报：608名嫌疑人已被抓获，案件正在审理").kind,
            VerdictKind::duplicate);

  DedupOptions missing;
  missing.text.must_match_words = path + ".absent";
  EXPECT_THROW(Engine{missing}, std::runtime_error);
}

}  // namespace
}  // namespace neardup::dedup

namespace neardup::dedup {
namespace {

// J = 40/50 (ground_truth.py); the 2-bit sketch estimates 0.667, and the two
// share sketch bands but no recent-text band: the exact stage still judges them.
TEST(EngineRecentTexts, ASketchCandidateBelowTheEstimateIsJudgedExactly) {
  constexpr std::string_view kept = "Accra: the police department suspends the tram line";
  constexpr std::string_view incoming = "Hanoi: the police department suspends the tram line";
  DedupOptions options;
  options.text.must_match =
      MustMatch::none;  // (the two places differ: must_match tells them apart)
  Feed feed{options};
  feed(kept);
  const Verdict v = feed(incoming);
  ASSERT_EQ(v.kind, VerdictKind::duplicate);
  EXPECT_DOUBLE_EQ(*v.similarity, 0.8);
  EXPECT_EQ(feed.engine.stats().exact_matches, 1u);

  DedupOptions sketch_only;
  sketch_only.sketch.recent = 0;
  Feed without{sketch_only};
  without(kept);
  EXPECT_EQ(without(incoming).kind, VerdictKind::unique) << "the estimate alone is below 0.7";
}

// A repost of a repost, each with its own edit: J(original, second) = 0.738,
// J(first, second) = 0.893 (ground_truth.py). The first repost is no window
// entry, but it stays a recent text standing for the original.
TEST(EngineRecentTexts, ARepostOfARepostIsADuplicateOfTheOriginal) {
  constexpr std::string_view original = "Storm closes the north bridge tonight as the river rises";
  constexpr std::string_view first = "Storm closes the north bridge tonight as the rivers rise";
  constexpr std::string_view second =
      "Storm closes the north bridge tonight as the rivers rise again";
  Feed feed{DedupOptions{}};
  ASSERT_EQ(feed(original).kind, VerdictKind::unique);
  const Verdict v1 = feed(first);
  ASSERT_EQ(v1.kind, VerdictKind::duplicate);
  EXPECT_EQ(v1.match->of.value, 1u);
  EXPECT_EQ(feed.engine.stats().recent_reposts, 1u);
  EXPECT_EQ(feed(first).kind, VerdictKind::duplicate);
  EXPECT_EQ(feed.engine.stats().recent_reposts, 1u) << "a copy with the same shingles adds nothing";
  const Verdict v2 = feed(second);
  ASSERT_EQ(v2.kind, VerdictKind::duplicate);
  EXPECT_EQ(v2.match->of.value, 1u) << "of the kept original, not of the repost";
  EXPECT_NEAR(*v2.similarity, 0.893, 0.0005) << "to the repost it is close to";
  EXPECT_EQ(v2.count, 3u);
  EXPECT_EQ(feed.engine.stats().recent_reposts, 2u);
  EXPECT_EQ(feed.engine.stats().window.entries, 1u) << "reposts are no window entries";

  // A copy of a recent text is not kept again, even when its original's own
  // set is gone from the ring (here: the original fell out of a ring of 2).
  DedupOptions small;
  small.sketch.recent = 2;
  Feed copies{small};
  copies(original);
  copies(first);  // a repost: kept
  copies("A completely different message about the school lunch menu");
  EXPECT_EQ(copies.engine.stats().recent_reposts, 1u);
  EXPECT_EQ(copies(first).kind, VerdictKind::duplicate);
  EXPECT_EQ(copies.engine.stats().recent_reposts, 1u) << "the same shingles as a recent repost";

  // Without the first repost, the second is another story.
  Feed direct{DedupOptions{}};
  direct(original);
  EXPECT_EQ(direct(second).kind, VerdictKind::unique);
}

// After an aborted transaction the same records are decided again, and the
// window and the recent texts keep what the first pass added: a record kept
// then is kept again, and a repost is judged as the first time.
// J(story, late) = 0.855, J(kept, late) = 0.844, J(story, kept) = 0.721.
TEST(EngineRecentTexts, RecordsDecidedAgainAfterARewindGetTheirFirstVerdicts) {
  constexpr std::string_view story =
      "the quick brown fox jumps over the lazy dog near the river bank";
  constexpr std::string_view kept =
      "the quick brown fox jumps over the lazy dogs near the rivers banks";
  constexpr std::string_view late =
      "the quick brown fox jumps over the lazy dogs near the river bank";
  Engine engine{DedupOptions{}};
  const std::int64_t t = 1'700'000'000'000;
  ASSERT_EQ(engine.process(story, EventTime{t}, RecordRef{1}).kind, VerdictKind::unique);
  ASSERT_EQ(engine.process(kept, EventTime{t + 1}, RecordRef{2}).kind, VerdictKind::unique);
  const Verdict first = engine.process(late, EventTime{t + 2}, RecordRef{3});
  ASSERT_EQ(first.kind, VerdictKind::duplicate);
  ASSERT_EQ(first.match->of.value, 1u);
  ASSERT_NEAR(*first.similarity, 0.855, 0.0005);
  ASSERT_EQ(engine.stats().recent_reposts, 1u);

  for (int round = 0; round < 2; ++round) {  // aborted twice
    const Verdict again = engine.process(kept, EventTime{t + 1}, RecordRef{2});
    EXPECT_EQ(again.kind, VerdictKind::unique)
        << "the later repost (0.844 to it, standing for the story) does not count";
    const Verdict late_again = engine.process(late, EventTime{t + 2}, RecordRef{3});
    ASSERT_EQ(late_again.kind, VerdictKind::duplicate);
    EXPECT_EQ(late_again.match->of.value, 1u);
    EXPECT_NEAR(*late_again.similarity, 0.855, 0.0005) << "not 1.0 against its own repost";
  }
}

}  // namespace
}  // namespace neardup::dedup
