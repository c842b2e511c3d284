// dedup.scope, duplicate counts and window.refresh_on_duplicate in the window
// and the engine.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "dedup/engine/engine.h"
#include "dedup/index/window.h"

namespace neardup::dedup {
namespace {

constexpr std::string_view kPost =
    "Just finished my first marathon in under four hours, legs are gone but so happy";
// The same post in other punctuation and case: SimHash distance 0 (normalized).
constexpr std::string_view kEdited =
    "JUST finished my first marathon in under four hours -- legs are gone, but so happy!!";
// One word changed: found by the sketch stage, at a SimHash distance above 0.
constexpr std::string_view kOneWord =
    "Just finished my first marathon in under four hours, legs are dead but so happy";

WindowOptions scoped_window() {
  WindowOptions w;
  w.max_entries = 1000;
  w.scoped = true;
  return w;
}

TEST(ScopedWindow, FindsOnlyEntriesOfTheProbesScope) {
  Window window(IndexOptions{}, scoped_window());
  window.insert(Fingerprint{0xabcdef}, EventTime{0}, RecordRef{1}, ScopeId{7});
  EXPECT_FALSE(window.probe(Fingerprint{0xabcdef}, EventTime{0}, RecordRef{2}, ScopeId{8}));
  const auto hit = window.probe(Fingerprint{0xabcdef ^ 1}, EventTime{0}, RecordRef{2}, ScopeId{7});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of, RecordRef{1});
  EXPECT_EQ(hit->scope, ScopeId{7});
  EXPECT_EQ(hit->distance, 1);
}

TEST(ScopedWindow, AnUnscopedWindowIgnoresScopesAndCostsNoScopeBytes) {
  WindowOptions plain = scoped_window();
  plain.scoped = false;
  Window unscoped(IndexOptions{}, plain);
  Window scoped(IndexOptions{}, scoped_window());
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    unscoped.insert(Fingerprint{i * 0x9e3779b97f4a7c15ULL}, EventTime{0}, RecordRef{i}, ScopeId{3});
    scoped.insert(Fingerprint{i * 0x9e3779b97f4a7c15ULL}, EventTime{0}, RecordRef{i}, ScopeId{3});
  }
  const auto hit =
      unscoped.probe(Fingerprint{0x9e3779b97f4a7c15ULL}, EventTime{0}, RecordRef{0}, ScopeId{4});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->scope, ScopeId{0});
  // 1000 entries fill the ring (max_entries): 4 bytes each for the scopes, in 4 KiB pages.
  EXPECT_EQ(scoped.stats().bytes - unscoped.stats().bytes, 4096u);
}

TEST(WindowCounts, CountDuplicatesPerEntryAndSaturate) {
  Window window(IndexOptions{}, scoped_window());
  const auto seq = window.insert(Fingerprint{42}, EventTime{5}, RecordRef{1});
  EXPECT_EQ(window.count_duplicate(seq), 1u);
  EXPECT_EQ(window.count_duplicate(seq), 2u);
  EXPECT_EQ(window.entry(seq)->duplicates, 2u);
  EXPECT_EQ(window.entry(seq)->time, EventTime{5}) << "the count shares the time's word";
  EXPECT_EQ(window.count_duplicate(seq + 1), 0u) << "not an entry";
  for (int i = 0; i < 70'000; ++i) window.count_duplicate(seq);
  EXPECT_EQ(window.entry(seq)->duplicates, 65'534u);
  const auto carried = window.insert(Fingerprint{43}, EventTime{6}, RecordRef{2}, {}, 9);
  EXPECT_EQ(window.count_duplicate(carried), 10u);
}

TEST(WindowCounts, ARetiredEntryNoLongerMatches) {
  Window window(IndexOptions{}, scoped_window());
  const auto seq = window.insert(Fingerprint{42}, EventTime{5}, RecordRef{1});
  window.retire(seq);
  EXPECT_FALSE(window.entry(seq));
  EXPECT_FALSE(window.probe(Fingerprint{42}, EventTime{5}, RecordRef{9}));
  EXPECT_EQ(window.count_duplicate(seq), 0u);
  EXPECT_EQ(window.size(), 1u) << "it keeps its slot until evicted";
}

TEST(WindowTimes, TimesBeyond2To47MillisecondsAreClamped) {
  Window window(IndexOptions{}, scoped_window());
  const std::int64_t far = std::int64_t{1} << 50;
  const auto seq = window.insert(Fingerprint{42}, EventTime{far}, RecordRef{1});
  EXPECT_EQ(window.entry(seq)->time, EventTime{(std::int64_t{1} << 47) - 1});
  const auto past = window.insert(Fingerprint{43}, EventTime{-far}, RecordRef{2});
  EXPECT_EQ(window.entry(past)->time, EventTime{-(std::int64_t{1} << 47)});
}

DedupOptions options(bool sketch, bool scoped, bool refresh) {
  DedupOptions o;
  o.sketch.enabled = sketch;
  o.window.scoped = scoped;
  o.window.refresh_on_duplicate = refresh;
  o.window.duration = std::chrono::seconds(10);
  return o;
}

Verdict run(Engine& engine, std::string_view text, std::int64_t ms, std::uint64_t ref,
            ScopeId scope = {}) {
  Analysis a = engine.analyze(text);
  a.scope = scope;
  return engine.decide(a, EventTime{ms}, RecordRef{ref});
}

TEST(EngineScope, ACopyInAnotherScopeIsUniqueInEveryStage) {
  for (bool sketch : {false, true}) {
    Engine engine(options(sketch, true, false));
    const ScopeId alice = scope_of("alice"), bob = scope_of("bob");
    EXPECT_EQ(run(engine, kPost, 0, 1, alice).kind, VerdictKind::unique);
    EXPECT_EQ(run(engine, kPost, 1, 2, bob).kind, VerdictKind::unique) << "sketch " << sketch;
    const Verdict again = run(engine, kPost, 2, 3, alice);
    ASSERT_EQ(again.kind, VerdictKind::duplicate);
    EXPECT_EQ(again.match->of, RecordRef{1});
    const Verdict bobs = run(engine, kEdited, 3, 4, bob);
    ASSERT_EQ(bobs.kind, VerdictKind::duplicate);
    EXPECT_EQ(bobs.match->of, RecordRef{2});
    EXPECT_EQ(engine.stats().unique, 2u);
  }
}

TEST(EngineScope, TheSketchBandStageKeepsToTheScope) {
  // max_distance 0: the edited post is only found through a shared sketch band.
  for (bool scoped : {false, true}) {
    DedupOptions o = options(true, scoped, false);
    o.index.max_distance = 0;
    Engine engine(o);
    EXPECT_EQ(run(engine, kPost, 0, 1, scope_of("a")).kind, VerdictKind::unique);
    const Verdict v = run(engine, kOneWord, 1, 2, scope_of(scoped ? "b" : "a"));
    if (!scoped) {
      ASSERT_EQ(v.kind, VerdictKind::duplicate);
      EXPECT_GT(v.match->distance, 0) << "found by the band stage, not SimHash";
      EXPECT_EQ(engine.stats().sketch_matches, 1u);
    } else {
      EXPECT_EQ(v.kind, VerdictKind::unique);
    }
  }
}

TEST(EngineCounts, EachDuplicateCarriesItsOriginalsCount) {
  for (bool sketch : {false, true}) {
    Engine engine(options(sketch, false, false));
    EXPECT_EQ(run(engine, kPost, 0, 1).count, 0u);
    EXPECT_EQ(run(engine, kPost, 1, 2).count, 1u);
    EXPECT_EQ(run(engine, kEdited, 2, 3).count, 2u);
    EXPECT_EQ(run(engine, "An unrelated post about baking bread at home today", 3, 4).count, 0u);
    EXPECT_EQ(run(engine, kPost, 4, 5).count, 3u);
  }
}

// Event time: the window lasts 10 s. A story reposted every 8 s stays suppressed
// with refresh, and its original expires after 10 s without.
TEST(EngineRefresh, ARepostedStoryStaysSuppressedWhileItKeepsComing) {
  for (bool sketch : {false, true}) {
    for (bool refresh : {false, true}) {
      Engine engine(options(sketch, false, refresh));
      EXPECT_EQ(run(engine, kPost, 0, 1).kind, VerdictKind::unique);
      const Verdict at8 = run(engine, kEdited, 8'000, 2);
      ASSERT_EQ(at8.kind, VerdictKind::duplicate);
      EXPECT_EQ(at8.count, 1u);
      const Verdict at16 = run(engine, kPost, 16'000, 3);
      if (refresh) {
        ASSERT_EQ(at16.kind, VerdictKind::duplicate) << "renewed at 8 s";
        EXPECT_EQ(at16.match->of, RecordRef{1}) << "the original's ref stays";
        EXPECT_EQ(at16.match->time, EventTime{8'000});
        EXPECT_EQ(at16.count, 2u);
        const Verdict at24 = run(engine, kPost, 24'000, 4);
        ASSERT_EQ(at24.kind, VerdictKind::duplicate);
        EXPECT_EQ(at24.count, 3u);
        EXPECT_EQ(engine.stats().refreshed, 3u);
        EXPECT_EQ(run(engine, kPost, 34'001, 5).kind, VerdictKind::unique) << "a gap of 10 s";
      } else {
        EXPECT_EQ(at16.kind, VerdictKind::unique) << "the original expired at 10 s";
        EXPECT_EQ(engine.stats().refreshed, 0u);
      }
    }
  }
}

// A flood of copies: with refresh, at most one entry per half window is
// retired, so a probe still examines a handful of cells, not one per copy; the
// same text kept in 2000 scopes is spread over buckets and bands by scope.
TEST(EngineCosts, AFloodOfCopiesOrOfScopesKeepsProbesShort) {
  for (bool sketch : {false, true}) {
    DedupOptions o = options(sketch, false, true);
    o.window.duration = std::chrono::hours(24);
    Engine engine(o);
    Verdict last;
    for (std::uint64_t i = 1; i <= 2000; ++i)
      last = run(engine, kPost, static_cast<std::int64_t>(i), i);
    EXPECT_EQ(last.count, 1999u);
    EXPECT_LE(last.candidates, 2u) << "sketch " << sketch;
    EXPECT_EQ(engine.stats().refreshed, 0u) << "no copy reached half the window's age";

    Engine scoped(options(sketch, true, false));
    for (std::uint64_t i = 1; i <= 2000; ++i)
      last = run(scoped, kPost, static_cast<std::int64_t>(i), i,
                 ScopeId{static_cast<std::uint32_t>(i)});
    EXPECT_EQ(last.kind, VerdictKind::unique);
    EXPECT_LE(last.candidates, 8u) << "sketch " << sketch;
    EXPECT_EQ(run(scoped, kEdited, 3000, 9999, ScopeId{1234}).match->of, RecordRef{1234});
  }
}

// With max_entries as the bound, a refresh renews an original once it is older
// than half the window's entries.
TEST(EngineRefresh, RenewsAnOriginalInTheOlderHalfOfAFullWindow) {
  DedupOptions o = options(false, false, true);
  o.window.duration = std::chrono::hours(24);
  o.window.max_entries = 4;
  Engine engine(o);
  EXPECT_EQ(run(engine, kPost, 0, 1).kind, VerdictKind::unique);
  EXPECT_FALSE(run(engine, kEdited, 1, 2).refreshed) << "the newest entry: not renewed";
  run(engine, "An unrelated post about baking bread at home today", 2, 3);
  const Verdict renewed = run(engine, kEdited, 3, 4);
  EXPECT_TRUE(renewed.refreshed) << "2 of 4 entries newer";
  EXPECT_EQ(renewed.count, 2u);
  run(engine, "Weather: a cold front brings snow to the hills on sunday", 4, 5);
  run(engine, "The museum opens a new wing of modern art next month", 5, 6);
  run(engine, "Local team wins the cup after extra time in a tense final", 6, 7);
  const Verdict still = run(engine, kPost, 7, 8);
  ASSERT_EQ(still.kind, VerdictKind::duplicate) << "renewed: still among the newest 4";
  EXPECT_EQ(still.match->of, RecordRef{1});
}

TEST(ScopeOf, IsAFixedHashOfTheBytes) {
  EXPECT_EQ(scope_of("alice"), scope_of(std::string("alice")));
  EXPECT_NE(scope_of("alice"), scope_of("alicf"));
  EXPECT_NE(scope_of(""), scope_of(std::string_view("\0", 1)));
  // Fixed values: instances and the changelog must agree across builds.
  EXPECT_EQ(scope_of("").value, 0xa9b5e89bu);
  EXPECT_EQ(scope_of("channel-1").value, 0xe8a1638eu);
}

}  // namespace
}  // namespace neardup::dedup
