// metrics/page/recent_pairs.h StoryMinutes: the per-minute count of duplicates per
// original over the last hour behind the page's "biggest stories" (clock
// injected), and how RecentPairs and the page carry it.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include "metrics/page/page.h"
#include "metrics/page/recent_pairs.h"

namespace neardup::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kMinute = 60'000;
// A minute boundary (2023-11-14 22:13 UTC), so that T(m, s) is minute m, second s.
constexpr std::int64_t kStart = 28'333'333LL * kMinute;
constexpr std::int64_t T(std::int64_t minute, std::int64_t second = 0) {
  return kStart + minute * kMinute + second * 1000;
}

ShownText held(std::string text) { return {true, std::move(text), false}; }

void record(StoryMinutes& s, std::uint64_t key, std::int64_t at, int times = 1) {
  const std::string topic = "in";
  for (int i = 0; i < times; ++i)
    s.record(key, {topic, 0, static_cast<std::int64_t>(key)}, held("story " + std::to_string(key)),
             at);
}

/// per_minute as {index: count} of the nonzero minutes.
std::vector<std::pair<int, std::uint32_t>> nonzero(const HourStory& story) {
  std::vector<std::pair<int, std::uint32_t>> out;
  for (int i = 0; i < kStoryMinutes; ++i)
    if (story.per_minute[static_cast<std::size_t>(i)])
      out.emplace_back(i, story.per_minute[static_cast<std::size_t>(i)]);
  return out;
}

using Minutes = std::vector<std::pair<int, std::uint32_t>>;

TEST(StoryMinutes, CountsEachMinuteExactly) {
  StoryMinutes s(8, 64);
  record(s, 7, T(0, 1), 3);
  record(s, 7, T(0, 59), 1);
  record(s, 7, T(5, 30), 2);
  record(s, 7, T(59, 0), 1);
  const auto top = s.top(10, T(59, 40));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hour, 7u);
  EXPECT_EQ(nonzero(top[0]), (Minutes{{0, 4}, {5, 2}, {59, 1}}));
  EXPECT_EQ(top[0].original.offset, 7);
  EXPECT_EQ(top[0].text.text, "story 7");
  EXPECT_EQ(top[0].last_ms, T(59, 0));
}

TEST(StoryMinutes, MinutesLeaveTheHourAfterSixtyMinutes) {
  StoryMinutes s(8, 64);
  record(s, 7, T(0, 10), 4);
  record(s, 7, T(5), 2);
  record(s, 7, T(59), 1);
  // Minute 60: minute 0 has left; the chart moved one to the left.
  auto top = s.top(10, T(60));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hour, 3u);
  EXPECT_EQ(nonzero(top[0]), (Minutes{{4, 2}, {58, 1}}));
  // Minute 118: only minute 59 is left, in the oldest bucket.
  top = s.top(10, T(118, 59));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hour, 1u);
  EXPECT_EQ(nonzero(top[0]), (Minutes{{0, 1}}));
  // Minute 119: nothing in the hour, so no story.
  EXPECT_TRUE(s.top(10, T(119)).empty());
  // A duplicate after a quiet hour starts from an empty chart.
  record(s, 7, T(130, 5), 2);
  top = s.top(10, T(130, 6));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hour, 2u);
  EXPECT_EQ(nonzero(top[0]), (Minutes{{59, 2}}));
  // Two minutes later the same two are two buckets from the end.
  EXPECT_EQ(nonzero(s.top(10, T(132))[0]), (Minutes{{57, 2}}));
}

TEST(StoryMinutes, BiggestFirstAndAtMostN) {
  StoryMinutes s(8, 64);
  record(s, 1, T(0), 2);
  record(s, 2, T(1), 5);
  record(s, 3, T(2), 3);
  record(s, 4, T(3), 3);  // ties with 3: the more recent last duplicate first
  const auto top = s.top(3, T(10));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].original.offset, 2);
  EXPECT_EQ(top[0].hour, 5u);
  EXPECT_EQ(top[1].original.offset, 4);
  EXPECT_EQ(top[2].original.offset, 3);
  EXPECT_EQ(s.top(10, T(10)).size(), 4u);
}

TEST(StoryMinutes, FullTableDropsTheSmallestOfTheHour) {
  StoryMinutes s(3, 64);
  record(s, 1, T(0), 5);
  record(s, 2, T(1), 3);
  record(s, 3, T(2), 2);
  EXPECT_EQ(s.size(), 3u);
  record(s, 4, T(3), 1);  // takes the place of 3 (2 in the hour)
  EXPECT_EQ(s.size(), 3u);
  auto top = s.top(10, T(3));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].original.offset, 1);
  EXPECT_EQ(top[1].original.offset, 2);
  EXPECT_EQ(top[2].original.offset, 4);
  EXPECT_EQ(top[2].hour, 1u);
  // 3 comes back: 4 is now the smallest and makes room; 3 starts from its own duplicate.
  record(s, 3, T(4), 1);
  top = s.top(10, T(4));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[2].original.offset, 3);
  EXPECT_EQ(top[2].hour, 1u);
  EXPECT_EQ(top[2].text.text, "story 3");
  // At minute 61, 1's five duplicates (minute 0) and 2's three (minute 1) have
  // left the hour: the table is judged by the last hour, so the newcomer 5
  // takes the place of 1 (none in the hour), not of 2 (one, at minute 59).
  record(s, 2, T(59), 1);
  record(s, 3, T(60), 1);
  record(s, 5, T(61), 1);
  top = s.top(10, T(61));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].original.offset, 3);  // 1 at minute 4 and 1 at 60; 2 has 1 at 59 left
  EXPECT_EQ(top[0].hour, 2u);
  std::vector<std::int64_t> offsets;
  for (const auto& story : top) offsets.push_back(story.original.offset);
  EXPECT_THAT(offsets, ::testing::UnorderedElementsAre(2, 3, 5));
}

TEST(StoryMinutes, AClockThatStepsBackCountsIntoTheNewestMinute) {
  StoryMinutes s(4, 64);
  record(s, 1, T(10), 1);
  record(s, 1, T(8), 2);
  const auto top = s.top(10, T(10));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hour, 3u);
  EXPECT_EQ(nonzero(top[0]), (Minutes{{59, 3}}));
}

TEST(StoryMinutes, TextIsTakenOnceHeld) {
  StoryMinutes s(4, 64);
  const std::string topic = "in";
  s.record(9, {topic, 0, 9}, ShownText{}, T(0));
  EXPECT_FALSE(s.top(1, T(0))[0].text.held);
  s.record(9, {topic, 0, 9}, held("now held"), T(0));
  EXPECT_EQ(s.top(1, T(0))[0].text.text, "now held");
  s.record(9, {topic, 0, 9}, ShownText{}, T(0));  // an evicted text does not unset it
  EXPECT_EQ(s.top(1, T(0))[0].text.text, "now held");
  EXPECT_EQ(s.top(1, T(0))[0].hour, 3u);
}

DuplicateSeen dup_of(std::uint64_t original_key, std::int64_t original_offset, std::int64_t offset,
                     std::string_view text) {
  DuplicateSeen seen;
  seen.original_key = original_key;
  seen.original = {"in", 0, original_offset};
  seen.duplicate = {"in", 0, offset};
  seen.duplicate_text = text;
  seen.distance = 2;
  return seen;
}

PairsSnapshot sample() {
  RecentPairs::Limits limits;
  limits.top = 2;
  RecentPairs pairs(limits);
  pairs.kept(1, "Lima: <b>the</b> port reopens");
  pairs.kept(2, "Oslo: the bridge closes");
  pairs.kept(3, "Rome: a third story");
  for (int i = 0; i < 3; ++i) pairs.duplicate(dup_of(1, 10, 20 + i, "Lima: the port reopens!"));
  pairs.duplicate(dup_of(2, 11, 30, "Oslo: the bridge closes!"));
  pairs.duplicate(dup_of(3, 12, 31, "Rome: a third story!"));
  pairs.duplicate(dup_of(2, 11, 32, "Oslo: the bridge closes?"));
  return pairs.snapshot();
}

TEST(StoryMinutes, RecentPairsListsTheTopStoriesOfTheHour) {
  const PairsSnapshot s = sample();
  ASSERT_EQ(s.stories.size(), 2u);  // Limits::top
  EXPECT_EQ(s.story_originals, 64u);
  EXPECT_EQ(s.stories[0].hour, 3u);
  EXPECT_EQ(s.stories[0].original.offset, 10);
  EXPECT_EQ(s.stories[0].text.text, "Lima: <b>the</b> port reopens");
  EXPECT_EQ(s.stories[1].hour, 2u);
  // All in the current minute, or the one before when the minute turned meanwhile.
  const auto last = s.stories[0].per_minute[kStoryMinutes - 1];
  const auto before = s.stories[0].per_minute[kStoryMinutes - 2];
  EXPECT_EQ(last + before, 3u);
  EXPECT_EQ(s.stories_minute_ms % kMinute, 0);
}

TEST(StoryMinutes, PageShowsStoriesWithAChartAndRespectsRedaction) {
  PairsSnapshot s = sample();
  const std::string html = render_page(PageCounts{}, &s);
  EXPECT_THAT(html, HasSubstr("<section id=\"stories\"><h2>Biggest stories of the last hour</h2>"));
  EXPECT_THAT(html,
              HasSubstr("<tr class=\"story\"><td class=\"hour\">3</td><td><svg class=\"spark\""));
  EXPECT_THAT(html, HasSubstr("Lima: &lt;b&gt;the&lt;/b&gt; port reopens"));
  EXPECT_THAT(html, Not(HasSubstr("style=")));  // the policy allows no style attribute
  const std::string json = render_summary_json(PageCounts{}, &s);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array stories = doc["stories"];
  ASSERT_EQ(stories.size(), 2u);
  EXPECT_EQ(std::uint64_t(stories.at(0)["hour"]), 3u);
  EXPECT_EQ(simdjson::dom::array(stories.at(0)["per_minute"]).size(), 60u);
  EXPECT_EQ(std::string_view(stories.at(0)["original"]["text"]), "Lima: <b>the</b> port reopens");
  EXPECT_EQ(std::uint64_t(doc["limits"]["stories"]), 64u);

  redact_texts(s);
  EXPECT_TRUE(s.stories[0].text.text.empty());
  const std::string redacted = render_page(PageCounts{}, &s);
  EXPECT_THAT(redacted, Not(HasSubstr("Lima")));
  EXPECT_THAT(redacted,
              HasSubstr("<td class=\"excerpt\"><span class=\"redacted\">withheld</span>"));
  EXPECT_THAT(render_summary_json(PageCounts{}, &s), Not(HasSubstr("Lima")));
}

}  // namespace
}  // namespace neardup::metrics
