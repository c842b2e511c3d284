// The page's record (metrics/page/recent_pairs.h) fed by the service where it routes
// verdicts: with the group judge and with each instance's own window, the same
// pairs, texts and counts.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "metrics/page/recent_pairs.h"
#include "tests/integration/broker_fixture.h"
#include "tests/unit/dedup/index/repost_texts.h"

namespace neardup::stream {
namespace {

using namespace testing;  // neardup::stream::testing: the broker fixture

constexpr const char* kStory = "Storm closes the harbour bridge as rivers rise across the county";
constexpr const char* kStoryAgain =
    "STORM closes the harbour bridge, as rivers rise across the county!";
constexpr const char* kOther = "Council approves the new school budget after a long debate";

// A header's value on an output record, or "" when it has none.
std::string header_of(const Record& r, const std::string& name) {
  return r.headers.count(name) ? r.headers.at(name) : std::string();
}

class RecentPairsTest : public BrokerTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    if (!GetParam()) cfg_.kafka.judge_topic = "";
  }

  // Tags `texts` (one partition, in order) with the service and returns its
  // final counts and the output records, after checking that every text came out.
  struct Tagged {
    ServiceSnapshot last;
    std::vector<Record> out;
  };
  Tagged tag(const std::vector<std::string>& texts) {
    cfg_.action = config::Action::tag;
    produce_to("input", texts, 0, std::string("k"));
    auto running = start_service(cfg_);
    EXPECT_TRUE(eventually([&] { return running->committed.load() >= texts.size(); }));
    EXPECT_EQ(running->stop(), 0);
    Tagged tagged{running->last, read_all("output")};
    EXPECT_EQ(tagged.out.size(), texts.size());
    if (tagged.out.size() != texts.size()) tagged.out.resize(texts.size());  // (checks go on)
    return tagged;
  }
};

INSTANTIATE_TEST_SUITE_P(Judge, RecentPairsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "judge" : "local";
                         });

TEST_P(RecentPairsTest, DuplicatesArriveWithTheirOriginalsTextAndTheWindowsCount) {
  metrics::RecentPairs pairs;
  for (const char* text : {kStory, kOther, kStoryAgain, kStory})
    produce_to("input", {text}, 0, std::string("k"));
  auto running = start_service(cfg_, {}, &pairs);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 4; }));
  ASSERT_EQ(running->stop(), 0);

  const metrics::PairsSnapshot s = pairs.snapshot();
  EXPECT_EQ(pairs.texts_held(), 2u);  // the two kept messages
  ASSERT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.recorded, 2u);
  const metrics::RecentPair& second = s.pairs[0];  // newest first
  const metrics::RecentPair& first = s.pairs[1];
  EXPECT_EQ(first.original.topic, "input");
  EXPECT_EQ(first.original.offset, 0);
  EXPECT_EQ(first.duplicate.offset, 2);
  EXPECT_TRUE(first.original_text.held);
  EXPECT_EQ(first.original_text.text, kStory);
  EXPECT_EQ(first.duplicate_text.text, kStoryAgain);
  EXPECT_EQ(first.count, 1u);
  ASSERT_TRUE(first.similarity.has_value());
  EXPECT_EQ(second.original.offset, 0);
  EXPECT_EQ(second.duplicate.offset, 3);
  EXPECT_EQ(second.count, 2u);
  EXPECT_EQ(second.distance, 0);
  ASSERT_EQ(s.top.size(), 1u);
  EXPECT_EQ(s.top[0].duplicates, 2u);
  EXPECT_EQ(s.top[0].text.text, kStory);
}

// J = 40/50, which the 2-bit sketch alone estimates at 0.667: only the
// recent-text stage's exact shingle sets catch this pair, and the group
// judge gets them in its requests.
TEST_P(RecentPairsTest, AShortRepostOnlyTheExactStageCatchesIsADuplicateWithEitherDecider) {
  // (two places: dedup.must_match, on by default, would keep them apart)
  cfg_.dedup.text.must_match = dedup::MustMatch::none;
  const Tagged t = tag({"Accra: the police department suspends the tram line",
                        "Hanoi: the police department suspends the tram line"});
  EXPECT_EQ(t.last.unique, 1u);
  EXPECT_EQ(t.last.duplicate, 1u);
  EXPECT_EQ(header_of(t.out[0], "neardup-verdict"), "");
  EXPECT_EQ(header_of(t.out[1], "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out[1], "neardup-similarity"), "0.800");
}

// Two stories of one template (J 0.879) stay apart with the default
// dedup.must_match on either decider: the judge gets each text's must-match
// keys in its requests; a repost of the first, with a typo in its place name,
// is still its duplicate.
TEST_P(RecentPairsTest, TemplatedStoriesStayApartWithEitherDecider) {
  const Tagged t = tag({"Perth: the police department reviews a flood barrier near the harbour",
                        "Dakar: the police department reviews a flood barrier near the harbour",
                        "Pertth: the police department reviews a flood barrier near the harbour"});
  EXPECT_EQ(t.last.unique, 2u);
  EXPECT_EQ(t.last.duplicate, 1u);
  for (const std::size_t i : {0u, 1u}) EXPECT_EQ(header_of(t.out[i], "neardup-verdict"), "");
  EXPECT_EQ(header_of(t.out[2], "neardup-verdict"), "duplicate");
}

// The story rule and the typo rule on either decider: the judge gets each short
// text's boilerplate marks, markers count and words in its requests. A link added
// (the whole texts share 0.735, the stories 1.000) and a typo (0.704, one word two
// letters swapped) are duplicates at those similarities; a link that is most of a
// short text is not.
TEST_P(RecentPairsTest, ALinkAddedOrATypoIsADuplicateWithEitherDecider) {
  const Tagged t = tag(
      {"Storm closes the north bridge tonight as the river rises",
       "Storm closes the north bridge tonight as the river rises https://t.co/x9Y2ab",
       "Colors may fade in the wash", "Coolrs may fade in the wash", "Dry clean only, then iron.",
       "Dry clean only, then iron. https://news.example.org/2025/11/29/laundry"});
  EXPECT_EQ(t.last.unique, 4u);
  EXPECT_EQ(t.last.duplicate, 2u);
  for (const std::size_t i : {0u, 2u, 4u, 5u})
    EXPECT_EQ(header_of(t.out[i], "neardup-verdict"), "") << t.out[i].value;
  EXPECT_EQ(header_of(t.out[1], "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out[1], "neardup-similarity"), "1.000");
  EXPECT_EQ(header_of(t.out[3], "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out[3], "neardup-similarity"), "0.704");
}

// A repost of a repost: the second is 0.738 from the original and 0.893 from
// the first repost, which is no window entry. Both deciders keep the first
// repost's set among the recent texts, so the second is a duplicate of the
// original, at the first repost's similarity.
TEST_P(RecentPairsTest, ARepostOfARepostIsADuplicateOfTheOriginalWithEitherDecider) {
  const Tagged t = tag({"Storm closes the north bridge tonight as the river rises",
                        "Storm closes the north bridge tonight as the rivers rise",
                        "Storm closes the north bridge tonight as the rivers rise again"});
  EXPECT_EQ(t.last.unique, 1u);
  EXPECT_EQ(t.last.duplicate, 2u);
  EXPECT_EQ(header_of(t.out[0], "neardup-verdict"), "");
  EXPECT_EQ(header_of(t.out[1], "neardup-similarity"), "0.818");
  EXPECT_EQ(header_of(t.out[2], "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out[2], "neardup-similarity"), "0.893");
  EXPECT_EQ(header_of(t.out[2], "neardup-of"), header_of(t.out[1], "neardup-of"));
  EXPECT_EQ(header_of(t.out[2], "neardup-count"), "2");
}

// A long repost of a long repost (tests/unit/dedup/index/repost_texts.h):
// the first repost, a duplicate of the story, is kept in the repost cache of
// either decider (the judge keys its sketch from the request), so the second
// is a duplicate of the story, at its similarity to the first repost. Twelve
// other long stories and their reposts come between: were every repost keyed
// alike, they would have pushed the first out of its lines.
TEST_P(RecentPairsTest, ALongRepostOfALongRepostIsADuplicateOfTheOriginalWithEitherDecider) {
  std::vector<std::string> texts = {std::string(dedup::repost_testing::kStory),
                                    std::string(dedup::repost_testing::kFirst)};
  std::mt19937_64 rng(29);
  for (int story = 0; story < 12; ++story) {
    std::vector<std::string> words;
    for (int w = 0; w < 90; ++w) {
      std::string word;
      for (int c = 0; c < 7; ++c) word += static_cast<char>('a' + rng() % 26);
      words.push_back(word);
    }
    for (int edit = 0; edit < 2; ++edit) {  // the story, then its repost with two words changed
      if (edit == 1) words[10] = "changed", words[50] = "edited";
      std::string text;
      for (const std::string& w : words) text += (text.empty() ? "" : " ") + w;
      texts.push_back(text);
    }
  }
  texts.emplace_back(dedup::repost_testing::kSecond);
  const Tagged t = tag(texts);
  EXPECT_EQ(t.last.unique, 13u);
  EXPECT_EQ(t.last.duplicate, 14u);
  EXPECT_EQ(header_of(t.out[0], "neardup-verdict"), "");
  EXPECT_EQ(header_of(t.out[1], "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out.back(), "neardup-verdict"), "duplicate");
  EXPECT_EQ(header_of(t.out.back(), "neardup-similarity"), "0.771");
  EXPECT_EQ(header_of(t.out.back(), "neardup-of"), header_of(t.out[1], "neardup-of"));
  EXPECT_EQ(header_of(t.out.back(), "neardup-count"), "2");
}

// Short texts carry their shingle sets to the judge (up to ~600 bytes each):
// a poll of 2,000 of them goes out as several request records, each well under
// the 1 MB librdkafka and brokers take by default, and every message comes out.
TEST_P(RecentPairsTest, APollOfManyShortTextsFitsTheJudgesRecords) {
  std::mt19937_64 rng(17);
  std::vector<std::string> texts;
  for (int i = 0; i < 2500; ++i) {  // 14 random words: ~107 shingles, each its own story
    std::string text;
    for (int w = 0; w < 14; ++w) {
      if (w) text += ' ';
      for (int c = 0; c < 7; ++c) text += static_cast<char>('a' + rng() % 26);
    }
    texts.push_back(text);
  }
  produce_to("input", texts, 0);
  auto running = start_service(cfg_);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= texts.size(); },
                         std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.unique, texts.size());
  EXPECT_EQ(running->last.dead_letters, 0u);
  if (GetParam()) {
    EXPECT_EQ(running->last.judge_request_entries, texts.size());
    EXPECT_GE(running->last.judge_requests, 3u);  // 2,500 x ~560 bytes in records of ~512 KiB
    EXPECT_LE(running->last.judge_request_bytes / running->last.judge_requests, 600u * 1024);
  }
}

}  // namespace
}  // namespace neardup::stream
