// metrics/page/recent_pairs.h and metrics/page/page.h: the bounded record of recent
// duplicate pairs behind the page on the metrics port, the word diff, the
// escaping of untrusted message text, and the HTML and JSON renderings.

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include "base/json.h"
#include "metrics/page/page.h"
#include "metrics/page/recent_pairs.h"

namespace neardup::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

DuplicateSeen dup_of(std::uint64_t original_key, std::int64_t original_offset, std::int64_t offset,
                     std::string_view text, int distance = 3) {
  DuplicateSeen seen;
  seen.original_key = original_key;
  seen.original = {"in", 0, original_offset};
  seen.duplicate = {"in", 0, offset};
  seen.duplicate_text = text;
  seen.distance = distance;
  return seen;
}

/// The changed pieces of one side, in order.
std::vector<std::string> changed(const std::vector<DiffSegment>& side) {
  std::vector<std::string> out;
  for (const auto& s : side)
    if (s.changed) out.emplace_back(s.text);
  return out;
}

std::string joined(const std::vector<DiffSegment>& side) {
  std::string out;
  for (const auto& s : side) out += s.text;
  return out;
}

TEST(RecentPairs, PairsCarryTheOriginalTextNewestFirst) {
  RecentPairs pairs;
  pairs.kept(10, "the original text");
  pairs.kept(11, "another one");
  auto seen = dup_of(10, 0, 2, "the original text!", 2);
  seen.similarity = 0.875;
  pairs.duplicate(seen);
  pairs.duplicate(dup_of(11, 1, 3, "another one?"));
  const PairsSnapshot s = pairs.snapshot();
  ASSERT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.recorded, 2u);
  EXPECT_EQ(s.pairs[0].seq, 2u);
  EXPECT_EQ(s.pairs[0].original_text.text, "another one");
  EXPECT_EQ(s.pairs[1].original_text.text, "the original text");
  EXPECT_TRUE(s.pairs[1].original_text.held);
  EXPECT_EQ(s.pairs[1].duplicate_text.text, "the original text!");
  EXPECT_EQ(s.pairs[1].distance, 2);
  EXPECT_EQ(s.pairs[1].similarity, 0.875);
  EXPECT_EQ(s.pairs[1].original.offset, 0);
  EXPECT_EQ(s.pairs[1].duplicate.offset, 2);
  EXPECT_EQ(s.pairs[1].count, 1u);
}

TEST(RecentPairs, RingKeepsOnlyTheLastPairs) {
  RecentPairs pairs(RecentPairs::Limits{.ring = 3});
  pairs.kept(1, "x");
  for (int i = 0; i < 10; ++i) pairs.duplicate(dup_of(1, 0, 100 + i, "x " + std::to_string(i)));
  const PairsSnapshot s = pairs.snapshot();
  ASSERT_EQ(s.pairs.size(), 3u);
  EXPECT_EQ(s.recorded, 10u);
  EXPECT_EQ(s.pairs[0].duplicate_text.text, "x 9");
  EXPECT_EQ(s.pairs[1].duplicate_text.text, "x 8");
  EXPECT_EQ(s.pairs[2].duplicate_text.text, "x 7");
  EXPECT_EQ(s.pairs[0].count, 10u);  // counted here (no count from the window)
}

TEST(RecentPairs, EvictedOriginalIsNotHeldRatherThanGuessed) {
  RecentPairs pairs(RecentPairs::Limits{.texts = 4});
  for (std::uint64_t key = 0; key < 6; ++key) pairs.kept(key, "text " + std::to_string(key));
  EXPECT_EQ(pairs.texts_held(), 4u);
  pairs.duplicate(dup_of(0, 0, 50, "text 0"));  // keys 0 and 1 were pushed out
  pairs.duplicate(dup_of(1, 1, 51, "text 1"));
  pairs.duplicate(dup_of(2, 2, 52, "text 2"));
  pairs.duplicate(dup_of(99, 9, 53, "never kept here"));
  const PairsSnapshot s = pairs.snapshot();
  ASSERT_EQ(s.pairs.size(), 4u);
  EXPECT_FALSE(s.pairs[0].original_text.held);
  EXPECT_EQ(s.pairs[1].original_text.text, "text 2");
  EXPECT_TRUE(s.pairs[1].original_text.held);
  EXPECT_FALSE(s.pairs[2].original_text.held);
  EXPECT_EQ(s.pairs[2].original_text.text, "");
  EXPECT_FALSE(s.pairs[3].original_text.held);
}

TEST(RecentPairs, TextCacheStaysConsistentUnderChurn) {
  // Many keys through a small cache: whatever is held must be the newest texts,
  // each under its own key (the open-addressing index survives deletions).
  RecentPairs pairs(RecentPairs::Limits{.texts = 37});
  for (std::uint64_t key = 0; key < 5000; ++key) pairs.kept(key * 7919, std::to_string(key));
  EXPECT_EQ(pairs.texts_held(), 37u);
  for (std::uint64_t key = 5000 - 37; key < 5000; ++key)
    pairs.duplicate(dup_of(key * 7919, static_cast<std::int64_t>(key), 1, "d"));
  pairs.duplicate(dup_of((5000 - 38) * 7919, 0, 1, "d"));
  const PairsSnapshot s = pairs.snapshot();
  ASSERT_EQ(s.pairs.size(), 38u);
  EXPECT_FALSE(s.pairs[0].original_text.held);
  for (std::size_t i = 1; i < s.pairs.size(); ++i) {
    ASSERT_TRUE(s.pairs[i].original_text.held) << i;
    EXPECT_EQ(s.pairs[i].original_text.text, std::to_string(s.pairs[i].original.offset));
  }
}

TEST(RecentPairs, KeptAgainReplacesItsOwnText) {
  RecentPairs pairs(RecentPairs::Limits{.texts = 2});
  pairs.kept(5, "first");
  pairs.kept(5, "second");
  pairs.kept(6, "other");
  EXPECT_EQ(pairs.texts_held(), 2u);
  pairs.duplicate(dup_of(5, 0, 1, "d"));
  EXPECT_EQ(pairs.snapshot().pairs[0].original_text.text, "second");
}

TEST(RecentPairs, TopOriginalsByDuplicatesAmongTheRecentlyDuplicated) {
  RecentPairs pairs(RecentPairs::Limits{.originals = 3, .top = 2});
  pairs.kept(1, "one");
  pairs.kept(2, "two");
  pairs.kept(3, "three");
  pairs.kept(4, "four");
  for (int i = 0; i < 3; ++i) pairs.duplicate(dup_of(2, 2, 10 + i, "two!"));
  pairs.duplicate(dup_of(1, 1, 20, "one!"));
  PairsSnapshot s = pairs.snapshot();
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].original.offset, 2);
  EXPECT_EQ(s.top[0].duplicates, 3u);
  EXPECT_EQ(s.top[0].text.text, "two");
  EXPECT_EQ(s.top[1].original.offset, 1);
  pairs.duplicate(dup_of(3, 3, 21, "three!"));
  pairs.duplicate(dup_of(3, 3, 22, "three?"));
  // The table is full: the least recently duplicated original (2) makes room.
  pairs.duplicate(dup_of(4, 4, 23, "four!"));
  s = pairs.snapshot();
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].original.offset, 3);
  EXPECT_EQ(s.top[0].duplicates, 2u);
  EXPECT_EQ(s.top[1].original.offset, 4);          // ties: the most recent first
  pairs.duplicate(dup_of(2, 2, 24, "two again"));  // forgotten: counted from 1 again
  EXPECT_EQ(pairs.snapshot().pairs[0].count, 1u);
}

TEST(RecentPairs, CountFromTheWindowWins) {
  RecentPairs pairs;
  pairs.kept(1, "one");
  auto seen = dup_of(1, 1, 2, "one!");
  seen.count = 7;
  pairs.duplicate(seen);
  const PairsSnapshot s = pairs.snapshot();
  EXPECT_EQ(s.pairs[0].count, 7u);
  EXPECT_EQ(s.top[0].duplicates, 7u);
}

TEST(RecentPairs, TextsAreCutAtCharacterBoundariesAndMadeValid) {
  RecentPairs pairs(RecentPairs::Limits{.text_bytes = 8});
  pairs.kept(1, "ab\xE4\xB8\xAD\xE6\x96\x87xyz");  // "ab中文xyz": 中 ends at byte 5, 文 at 8
  pairs.duplicate(dup_of(1, 0, 1,
                         "a\xFF"
                         "b"));
  const PairsSnapshot s = pairs.snapshot();
  EXPECT_EQ(s.pairs[0].original_text.text, "ab\xE4\xB8\xAD\xE6\x96\x87");
  EXPECT_TRUE(s.pairs[0].original_text.truncated);
  EXPECT_EQ(s.pairs[0].duplicate_text.text,
            "a\xEF\xBF\xBD"
            "b");  // U+FFFD
  EXPECT_FALSE(s.pairs[0].duplicate_text.truncated);
  std::string out;
  EXPECT_TRUE(copy_shown_text("ab\xE4\xB8\xAD", 4, out));
  EXPECT_EQ(out, "ab");                                     // 中 does not fit whole
  EXPECT_FALSE(copy_shown_text("\xED\xA0\x80", 100, out));  // a surrogate: 3 invalid bytes
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(copy_shown_text("\xC0\xAF", 100, out));  // overlong '/'
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(WordDiff, MarksOnlyTheWordsTheOtherSideLacks) {
  const WordDiff d =
      word_diff("Markets rally as rates fall in Oslo", "Markets rally as rates drop in Oslo today");
  EXPECT_THAT(changed(d.original), ::testing::ElementsAre("fall"));
  EXPECT_THAT(changed(d.duplicate), ::testing::ElementsAre("drop", "today"));
  EXPECT_EQ(joined(d.original), "Markets rally as rates fall in Oslo");
  EXPECT_EQ(joined(d.duplicate), "Markets rally as rates drop in Oslo today");
}

TEST(WordDiff, AdjacentChangedWordsAreOneMark) {
  const WordDiff d = word_diff("a b c", "a x y c");
  EXPECT_THAT(changed(d.duplicate), ::testing::ElementsAre("x y"));
  EXPECT_THAT(changed(d.original), ::testing::ElementsAre("b"));
}

TEST(WordDiff, AsciiCaseIsNoDifference) {
  const WordDiff d = word_diff("Graz: the council", "GRAZ: THE COUNCIL, again");
  EXPECT_TRUE(changed(d.original).empty());
  EXPECT_THAT(changed(d.duplicate), ::testing::ElementsAre(", again"));
}

TEST(WordDiff, ChineseDiffersByCharacter) {
  const WordDiff d = word_diff("南京地铁新线今天开通", "南京地铁新線今天开通");
  EXPECT_THAT(changed(d.original), ::testing::ElementsAre("线"));
  EXPECT_THAT(changed(d.duplicate), ::testing::ElementsAre("線"));
}

TEST(WordDiff, IdenticalAndEmptyTexts) {
  EXPECT_TRUE(changed(word_diff("same words", "same words").duplicate).empty());
  const WordDiff d = word_diff("", "new words");
  EXPECT_TRUE(d.original.empty());
  EXPECT_THAT(changed(d.duplicate), ::testing::ElementsAre("new words"));
}

TEST(Escaping, HtmlEscapesMarkup) {
  std::string out;
  append_html_escaped(out, "<script>alert('x')</script> & \"q\"");
  EXPECT_EQ(out, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
}

TEST(Escaping, JsonEscapesControlsQuotesAndMarkup) {
  std::string out;
  base::append_json_string(out, "a\"b\\c\n\x01</script>\xE2\x80\xA8\xE4\xB8\xAD",
                           base::JsonEscape::html_safe);
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\\u003c/script\\u003e\\u2028\xE4\xB8\xAD\"");
}

TEST(RateMeter, RatesOverTheSpan) {
  RateMeter meter(std::chrono::seconds(10));
  const auto t0 = RateMeter::Clock::time_point{} + std::chrono::hours(1);
  PageCounts c;
  meter.fill(c);
  EXPECT_EQ(c.rate_seconds, 0);
  meter.add(t0, 0, 0);
  for (int i = 1; i <= 40; ++i)
    meter.add(t0 + std::chrono::milliseconds(500 * i), 100u * i, 10u * i);
  meter.fill(c);
  EXPECT_DOUBLE_EQ(c.rate_seconds, 10.0);  // 20 s of samples, the last 10 s used
  EXPECT_DOUBLE_EQ(c.in_per_second, 200.0);
  EXPECT_DOUBLE_EQ(c.duplicates_per_second, 20.0);
}

PairsSnapshot sample_pairs() {
  RecentPairs pairs;
  pairs.kept(1, "Oslo: the orchestra cancels the old bridge; 324 people signed up");
  auto seen =
      dup_of(1, 4, 9, "Oslo: the orchestra cancels the old bridge; 333 people signed up", 4);
  seen.similarity = 0.98;
  pairs.duplicate(seen);
  pairs.duplicate(dup_of(77, 5, 10, "<img src=x onerror=alert(1)> \"quoted\" & more"));
  return pairs.snapshot();
}

TEST(Page, ShowsCountsPairsAndHighlightedWords) {
  PageCounts c;
  c.unique = 196;
  c.duplicate = 93;
  c.invalid = 2;
  c.ready = true;
  const PairsSnapshot pairs = sample_pairs();
  const std::string html = render_page(c, &pairs);
  EXPECT_THAT(html, HasSubstr("<span class=\"n\" id=\"count-in\">291</span>"));
  EXPECT_THAT(html, HasSubstr("<span class=\"n\" id=\"count-duplicate\">93</span>"));
  EXPECT_THAT(html, HasSubstr("<mark class=\"del\">324</mark>"));
  EXPECT_THAT(html, HasSubstr("<mark class=\"add\">333</mark>"));
  EXPECT_THAT(html, HasSubstr("distance <b class=\"distance\">4</b>"));
  EXPECT_THAT(html, HasSubstr("similarity <b class=\"similarity\">0.980</b>"));
  EXPECT_THAT(html, HasSubstr("original no longer held"));
  // Untrusted text never becomes markup.
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, HasSubstr("&lt;img src=x onerror=alert(1)&gt; &quot;quoted&quot; &amp; more"));
  EXPECT_THAT(html,
              Not(HasSubstr("src=\"http")));  // self-contained: nothing fetched from elsewhere
}

TEST(Page, JsonHasTheSameDataAndParses) {
  PageCounts c;
  c.unique = 196;
  c.duplicate = 93;
  c.invalid = 2;
  const PairsSnapshot pairs = sample_pairs();
  const std::string json = render_summary_json(c, &pairs);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::uint64_t(doc["counts"]["in"]), 291u);
  EXPECT_EQ(std::uint64_t(doc["counts"]["duplicate"]), 93u);
  simdjson::dom::array list = doc["pairs"];
  ASSERT_EQ(list.size(), 2u);
  simdjson::dom::element newest = list.at(0), older = list.at(1);
  EXPECT_EQ(std::string_view(newest["duplicate"]["text"]),
            "<img src=x onerror=alert(1)> \"quoted\" & more");
  EXPECT_FALSE(bool(newest["original"]["held"]));
  EXPECT_TRUE(newest["original"]["text"].is_null());
  EXPECT_EQ(std::int64_t(older["distance"]), 4);
  EXPECT_DOUBLE_EQ(double(older["similarity"]), 0.98);
  EXPECT_EQ(std::int64_t(older["original"]["offset"]), 4);
  std::vector<std::string> marked;
  for (simdjson::dom::element seg : older["duplicate"]["segments"].get_array())
    if (bool(seg["changed"])) marked.emplace_back(std::string_view(seg["text"]));
  EXPECT_THAT(marked, ::testing::ElementsAre("333"));
  EXPECT_THAT(json, Not(HasSubstr("<img")));  // escaped as \u003c, safe in a <script> too
}

TEST(Page, WithoutPairsSaysSo) {
  const std::string html = render_page(PageCounts{}, nullptr);
  EXPECT_THAT(html, HasSubstr("Pairs are not recorded"));
  EXPECT_THAT(render_summary_json(PageCounts{}, nullptr), HasSubstr("\"pairs_recorded\":false"));
}

}  // namespace
}  // namespace neardup::metrics
