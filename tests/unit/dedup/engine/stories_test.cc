// Story bookkeeping (dedup/engine/stories.h) against a real window, and the summary
// record it becomes (stream/records/story_record.h).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/engine/stories.h"
#include "stream/records/story_record.h"

namespace neardup {
namespace {

using dedup::EventTime;
using dedup::Match;
using dedup::RecordRef;
using dedup::Story;
using dedup::StoryBook;

Match original_at(std::uint64_t sequence, std::uint64_t ref, std::int64_t ms, int distance = 2) {
  Match m;
  m.sequence = sequence;
  m.of = RecordRef{ref};
  m.time = EventTime{ms};
  m.distance = distance;
  return m;
}

TEST(StoryBook, CountsDuplicatesTimesAndRangesPerOriginal) {
  StoryBook book;
  book.count(original_at(3, 30, 1000, 1), RecordRef{31}, EventTime{1500}, 0.9);
  book.count(original_at(3, 30, 1000, 4), RecordRef{32}, EventTime{1200}, 0.75);
  const Story& s = book.count(original_at(3, 30, 1000, 2), RecordRef{33}, EventTime{1400}, {});
  EXPECT_EQ(s.original, RecordRef{30});
  EXPECT_EQ(s.duplicates, 3u);
  EXPECT_EQ(s.first_seen, EventTime{1000});
  EXPECT_EQ(s.last_seen, EventTime{1500});  // the latest duplicate's, not the last counted
  EXPECT_TRUE(s.has_similarity);
  EXPECT_DOUBLE_EQ(s.min_similarity, 0.75);
  EXPECT_DOUBLE_EQ(s.max_similarity, 0.9);
  EXPECT_EQ(s.min_distance, 1);
  EXPECT_EQ(s.max_distance, 4);
  ASSERT_EQ(s.sampled, 3);
  EXPECT_EQ(s.samples[2], RecordRef{33});
  EXPECT_EQ(book.size(), 1u);
}

TEST(StoryBook, KeepsTheFirstFiveSamplesAndALastSeenNeverBeforeTheOriginal) {
  StoryBook book;
  for (std::uint64_t i = 0; i < 8; ++i)
    book.count(original_at(0, 1, 5000), RecordRef{100 + i}, EventTime{4000}, {});
  std::vector<Story> closed;
  book.close(1, [&](const Story& s) { closed.push_back(s); });
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].duplicates, 8u);
  EXPECT_EQ(closed[0].sampled, Story::kSamples);
  EXPECT_EQ(closed[0].samples[4], RecordRef{104});
  EXPECT_EQ(closed[0].last_seen, EventTime{5000});  // duplicates stamped earlier: the original's
  EXPECT_FALSE(closed[0].has_similarity);
}

TEST(StoryBook, ClosesExactlyTheStoriesBelowTheOldestLiveSequenceOldestFirst) {
  StoryBook book;
  for (std::uint64_t seq : {7, 2, 5})
    book.count(original_at(seq, seq * 10, 0), RecordRef{seq * 10 + 1}, EventTime{1}, {});
  std::vector<std::uint64_t> closed;
  auto note = [&](const Story& s) { closed.push_back(s.original.value); };
  EXPECT_EQ(book.close(5, note), 1u);  // sequence 5 is still live
  EXPECT_EQ(closed, (std::vector<std::uint64_t>{20}));
  EXPECT_EQ(book.close(8, note), 2u);
  EXPECT_EQ(closed, (std::vector<std::uint64_t>{20, 50, 70}));
  EXPECT_TRUE(book.empty());
  EXPECT_EQ(book.close(100, note), 0u);
}

TEST(StoryBook, ReportsOnlyStoriesThatGrewSinceTheirLastReport) {
  StoryBook book;
  book.count(original_at(1, 10, 0), RecordRef{11}, EventTime{1}, {});
  book.count(original_at(2, 20, 0), RecordRef{21}, EventTime{1}, {});
  std::vector<std::uint64_t> seen;
  auto note = [&](const Story& s) { seen.push_back(s.original.value); };
  EXPECT_EQ(book.report_changed(note), 2u);
  EXPECT_EQ(book.report_changed(note), 0u);
  book.count(original_at(2, 20, 0), RecordRef{22}, EventTime{2}, {});
  EXPECT_EQ(book.report_changed(note), 1u);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{10, 20, 20}));
}

TEST(StoryBook, FollowsAnOriginalRenewedByARefresh) {
  StoryBook book;
  book.count(original_at(4, 40, 100), RecordRef{41}, EventTime{200}, {}, /*renewed=*/9);
  // The next duplicate finds the renewed entry (sequence 9, the original's ref).
  const Story& s = book.count(original_at(9, 40, 200), RecordRef{42}, EventTime{300}, {});
  EXPECT_EQ(s.duplicates, 2u);
  EXPECT_EQ(s.first_seen, EventTime{100});
  std::size_t closed = 0;
  EXPECT_EQ(book.close(9, [&](const Story&) { ++closed; }), 0u);  // 4 left, 9 is live
  EXPECT_EQ(book.close(10, [&](const Story&) { ++closed; }), 1u);
  EXPECT_EQ(closed, 1u);
}

TEST(StoryBook, ClosesAStoryWhenItsOriginalIsEvictedFromAnEngineWindow) {
  dedup::DedupOptions options;
  options.window.max_entries = 4;
  dedup::Engine engine(options);
  StoryBook book;
  const std::string story = "the council approved the new harbour budget late on tuesday night";
  auto decide = [&](const std::string& text, std::uint64_t ref) {
    const dedup::Verdict v =
        engine.process(text, EventTime{static_cast<std::int64_t>(ref)}, RecordRef{ref});
    if (v.kind == dedup::VerdictKind::duplicate && v.match)
      book.count(*v.match, RecordRef{ref}, EventTime{static_cast<std::int64_t>(ref)}, v.similarity);
    return v.kind;
  };
  ASSERT_EQ(decide(story, 1), dedup::VerdictKind::unique);
  ASSERT_EQ(decide(story + " updated", 2), dedup::VerdictKind::duplicate);
  ASSERT_EQ(decide(story + " again", 3), dedup::VerdictKind::duplicate);
  std::vector<Story> closed;
  auto note = [&](const Story& s) { closed.push_back(s); };
  const char* others[] = {"zebra crossings painted blue across the old town square",
                          "quarterly shipping volumes fell for the third month running",
                          "a rare comet is visible from the northern hemisphere this week",
                          "the orchestra announced a free concert series for the summer"};
  std::uint64_t ref = 10;
  for (const char* text : others) {
    ASSERT_EQ(decide(text, ref++), dedup::VerdictKind::unique);
    book.close(engine.oldest_live(), note);
    if (ref < 14) {
      EXPECT_TRUE(closed.empty()) << "closed after " << ref - 10 << " others";
    }
  }
  ASSERT_EQ(closed.size(), 1u);  // the fourth other text evicted the story's original
  EXPECT_EQ(closed[0].original, RecordRef{1});
  EXPECT_EQ(closed[0].duplicates, 2u);
  EXPECT_EQ(closed[0].last_seen, EventTime{3});
}

// What every story holds, oldest first: (original ref, duplicates, changed).
std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>> contents(StoryBook book) {
  std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>> out;
  book.close(~std::uint64_t{0},
             [&](const Story& s) { out.emplace_back(s.original.value, s.duplicates, s.changed); });
  return out;
}

TEST(StoryBook, RollsBackCountsClosesReportsAndRenewalsToTheLastCheckpoint) {
  StoryBook book;
  book.count(original_at(1, 10, 0), RecordRef{11}, EventTime{1}, {});
  book.count(original_at(2, 20, 0), RecordRef{21}, EventTime{1}, {});
  book.count(original_at(3, 30, 0), RecordRef{31}, EventTime{1}, {});
  book.count(original_at(4, 40, 0), RecordRef{41}, EventTime{1}, {});
  book.report_changed([](const Story&) {});
  book.count(original_at(4, 40, 0), RecordRef{42}, EventTime{1}, {});
  book.checkpoint();
  const auto at_checkpoint = contents(book);
  ASSERT_EQ(at_checkpoint.size(), 4u);
  // A transaction: every kind of change, some stories changed twice.
  book.count(original_at(2, 20, 0), RecordRef{22}, EventTime{2}, {});
  book.count(original_at(2, 20, 0), RecordRef{23}, EventTime{3}, {});
  book.count(original_at(5, 50, 0), RecordRef{51}, EventTime{2}, {});                 // a new story
  book.count(original_at(3, 30, 0), RecordRef{32}, EventTime{2}, {}, /*renewed=*/8);  // 3 -> 8
  book.count(original_at(8, 30, 0), RecordRef{33}, EventTime{3}, {});
  std::size_t reported = book.report_changed([](const Story&) {});
  EXPECT_EQ(reported, 4u);  // 2, 4 (changed at the checkpoint), 5, 8
  std::size_t closed = book.close(3, [](const Story&) {});
  EXPECT_EQ(closed, 2u);  // 1 and 2
  book.rollback();
  EXPECT_EQ(contents(book), at_checkpoint);
  // The same transaction again, then a commit: it holds.
  book.count(original_at(2, 20, 0), RecordRef{22}, EventTime{2}, {});
  book.checkpoint();
  book.rollback();
  const auto after = contents(book);
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(after[1], std::make_tuple(std::uint64_t{20}, std::uint64_t{2}, true));
}

TEST(StoryBook, RollsBackNothingWithoutACheckpoint) {
  StoryBook book;
  book.count(original_at(1, 10, 0), RecordRef{11}, EventTime{1}, {});
  book.rollback();
  EXPECT_EQ(contents(book),
            (std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>>{{10, 1, true}}));
}

TEST(StoryRecord, EncodesVersionOneWithKeyExcerptAndSamples) {
  Story s;
  s.first_seen = EventTime{1000};
  s.last_seen = EventTime{2500};
  s.duplicates = 2;
  s.has_similarity = true;
  s.min_similarity = 0.8125;
  s.max_similarity = 1.0;
  s.min_distance = 0;
  s.max_distance = 5;
  const stream::StoryPosition samples[] = {{"in", 1, 8}, {"in", 0, 9}};
  stream::StoryContext context;
  context.original = {"in", 1, 7};
  context.samples = samples;
  context.key = "k\"1";
  context.excerpt = "Hello";
  context.final = true;
  std::string key, value;
  stream::story_key(context.original, key);
  stream::encode_story(s, context, value);
  EXPECT_EQ(key, "in/1/7");
  EXPECT_EQ(value,
            "{\"version\":1,\"original\":{\"topic\":\"in\",\"partition\":1,\"offset\":7},"
            "\"key\":\"k\\\"1\",\"first_seen\":1000,\"last_seen\":2500,\"duplicates\":2,"
            "\"similarity\":{\"min\":0.813,\"max\":1.000},\"distance\":{\"min\":0,\"max\":5},"
            "\"samples\":[{\"topic\":\"in\",\"partition\":1,\"offset\":8},"
            "{\"topic\":\"in\",\"partition\":0,\"offset\":9}],\"excerpt\":\"Hello\","
            "\"final\":true}");
}

TEST(StoryRecord, LeavesOutWhatIsNotKnownAndCutsTheExcerptAtACharacter) {
  Story s;
  s.duplicates = 1;
  stream::StoryContext context;
  context.original = {"in", 0, 1};
  std::string value;
  stream::encode_story(s, context, value);
  EXPECT_NE(value.find("\"key\":null"), std::string::npos);
  EXPECT_EQ(value.find("similarity"), std::string::npos);
  EXPECT_EQ(value.find("excerpt"), std::string::npos);
  EXPECT_NE(value.find("\"final\":false"), std::string::npos);
  const std::string text = std::string(199, 'a') + "\xc3\xa9" + "tail";  // é across byte 200
  context.excerpt = text;
  stream::encode_story(s, context, value);
  EXPECT_NE(value.find("\"excerpt\":\"" + std::string(199, 'a') + "\","), std::string::npos);
}

TEST(StoryRecord, ReadsBackWhatItWrites) {
  Story s;
  s.first_seen = EventTime{1000};
  s.last_seen = EventTime{2500};
  s.duplicates = 7;
  s.has_similarity = true;
  s.min_similarity = 0.75;
  s.max_similarity = 0.9;
  s.min_distance = 1;
  s.max_distance = 9;
  const stream::StoryPosition samples[] = {{"in", 1, 8}, {"other", 0, 9}};
  stream::StoryContext context;
  context.original = {"in", 1, 7};
  context.samples = samples;
  context.key = "k";
  context.excerpt = "caf\xc3\xa9 \"quoted\"";
  std::string value, error;
  stream::encode_story(s, context, value);
  stream::DecodedStory d;
  ASSERT_TRUE(stream::decode_story(value, d, &error)) << error;
  EXPECT_EQ(d.original.topic, "in");
  EXPECT_EQ(d.original.partition, 1);
  EXPECT_EQ(d.original.offset, 7);
  EXPECT_EQ(d.first_seen, 1000);
  EXPECT_EQ(d.last_seen, 2500);
  EXPECT_EQ(d.duplicates, 7u);
  EXPECT_DOUBLE_EQ(*d.min_similarity, 0.75);
  EXPECT_DOUBLE_EQ(*d.max_similarity, 0.9);
  EXPECT_EQ(d.min_distance, 1);
  EXPECT_EQ(d.max_distance, 9);
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[1].topic, "other");
  EXPECT_EQ(d.samples[1].offset, 9);
  EXPECT_EQ(d.key, std::optional<std::string>("k"));
  EXPECT_EQ(d.excerpt, std::optional<std::string>("caf\xc3\xa9 \"quoted\""));
  EXPECT_FALSE(d.final);
}

TEST(StoryRecord, RefusesWhatIsNotAVersionOneSummary) {
  stream::DecodedStory d;
  std::string error;
  EXPECT_FALSE(stream::decode_story("", d, &error));
  EXPECT_FALSE(stream::decode_story("{\"version\":2}", d, &error));
  EXPECT_FALSE(stream::decode_story("{\"version\":1,\"original\":{\"topic\":\"a\"}}", d, &error));
  EXPECT_FALSE(stream::decode_story(std::string("\xff\x00{", 3), d, &error));
  EXPECT_FALSE(error.empty());
}

TEST(StoryBook, ASeedGoesOnCountingAndClosesLikeAnyStory) {
  StoryBook book;
  Story seeded;
  seeded.original = RecordRef{50};
  seeded.first_seen = EventTime{10};
  seeded.last_seen = EventTime{20};
  seeded.duplicates = 4;
  EXPECT_TRUE(book.seed(6, seeded));
  EXPECT_FALSE(book.seed(6, seeded));  // counted already: left as it is
  const Story& s = book.count(original_at(6, 50, 10), RecordRef{51}, EventTime{30}, {});
  EXPECT_EQ(s.duplicates, 5u);
  EXPECT_EQ(s.last_seen, EventTime{30});
  std::vector<std::uint64_t> sizes;
  book.close(7, [&](const Story& story) { sizes.push_back(story.duplicates); });
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{5}));
}

}  // namespace
}  // namespace neardup
