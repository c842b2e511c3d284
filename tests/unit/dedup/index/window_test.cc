#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dedup/index/index.h"
#include "dedup/index/window.h"

namespace neardup::dedup {
namespace {

using std::chrono::milliseconds;

// The brute-force oracle: the window semantics of dedup/index/window.h, written as plainly as
// possible.
class OracleWindow {
 public:
  OracleWindow(int k, WindowOptions options) : k_(k), options_(options) {}

  std::optional<Match> probe(Fingerprint fp, EventTime now, RecordRef self,
                             const std::function<bool(const Match&)>& accept = {}) {
    advance(now);
    std::optional<Match> best;
    for (const Entry& e : entries_) {  // oldest first, so a strict < keeps the oldest among equals
      const int d = hamming_distance(fp, e.fp);
      if (d > k_ || e.ref == self) continue;
      Match m{e.ref, d, e.time, e.fp, 0, {}, 0};
      if (accept && !accept(m)) continue;
      if (!best || d < best->distance) best = m;
    }
    return best;
  }

  void insert(Fingerprint fp, EventTime time, RecordRef ref) {
    advance(time);
    if (options_.max_entries == 0) return;
    if (entries_.size() == options_.max_entries) {
      entries_.pop_front();
      ++evictions_;
    }
    entries_.push_back({fp, time, ref});
  }

  std::size_t size() const { return entries_.size(); }
  std::uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    Fingerprint fp;
    EventTime time;
    RecordRef ref;
  };
  void advance(EventTime now) {
    if (!started_ || now > newest_) newest_ = now;
    started_ = true;
    while (!entries_.empty() && entries_.front().time.ms < newest_.ms - options_.duration.count()) {
      entries_.pop_front();
      ++evictions_;
    }
  }

  int k_;
  WindowOptions options_;
  std::deque<Entry> entries_;
  EventTime newest_;
  bool started_ = false;
  std::uint64_t evictions_ = 0;
};

void expect_same(const std::optional<Match>& got, const std::optional<Match>& want,
                 const std::string& where) {
  ASSERT_EQ(got.has_value(), want.has_value()) << where;
  if (!got) return;
  EXPECT_EQ(got->of.value, want->of.value) << where;
  EXPECT_EQ(got->distance, want->distance) << where;
  EXPECT_EQ(got->time.ms, want->time.ms) << where;
  EXPECT_EQ(got->fingerprint.bits, want->fingerprint.bits) << where;
}

// Fingerprint generators that stress the index in different ways.
class Generator {
 public:
  Generator(std::uint64_t seed, const PigeonholeLayout& layout) : rng_(seed), layout_(layout) {
    for (int i = 0; i < 6; ++i) centers_.push_back(rng_());
  }

  Fingerprint next(int mode) {
    const int k = layout_.max_distance();
    switch (mode) {
      case 0:  // uniform random
        return Fingerprint{rng_()};
      case 1: {  // clustered: within k+2 bits of a few centers
        std::uint64_t fp = centers_[rng_() % centers_.size()];
        const int flips = static_cast<int>(rng_() % static_cast<std::uint64_t>(k + 3));
        for (int i = 0; i < flips; ++i) fp ^= 1ULL << (rng_() % 64);
        return Fingerprint{fp};
      }
      case 2: {  // many share all but one block
        std::uint64_t fp = centers_[0];
        const int b = static_cast<int>(rng_() % static_cast<std::uint64_t>(layout_.blocks()));
        const int w = layout_.block_width(b);
        const std::uint64_t mask = (w == 64 ? ~0ULL : (1ULL << w) - 1) << layout_.block_start(b);
        return Fingerprint{(fp & ~mask) | (rng_() & mask)};
      }
      default: {  // adversarial: flips on block boundaries, exactly k or k+1 bits from a center
        std::uint64_t fp = centers_[rng_() % 2];
        const int flips = k + static_cast<int>(rng_() % 2);
        std::uint64_t flipped = 0;
        for (int attempt = 0; std::popcount(flipped) < flips && attempt < 200; ++attempt) {
          const int b = static_cast<int>(rng_() % static_cast<std::uint64_t>(layout_.blocks()));
          const int edge = rng_() % 2 == 0 ? layout_.block_start(b)
                                           : layout_.block_start(b) + layout_.block_width(b) - 1;
          flipped |= 1ULL << edge;
        }
        for (int bit = 0; std::popcount(flipped) < flips; ++bit)
          flipped |= 1ULL << bit;  // rare fallback
        return Fingerprint{fp ^ flipped};
      }
    }
  }

  std::uint64_t operator()() { return rng_(); }

 private:
  std::mt19937_64 rng_;
  const PigeonholeLayout& layout_;
  std::vector<std::uint64_t> centers_;
};

// Interleaves probes (engine style: insert only when unique), forced inserts of
// near copies, and time jumps that expire entries, checking every answer.
void run_against_oracle(int blocks, int k, int ops, std::uint64_t first_sequence = 0,
                        std::size_t max_entries = 96) {
  WindowOptions options;
  options.max_entries = max_entries;
  options.duration = milliseconds(400);
  Window window(IndexOptions{k, blocks}, options, first_sequence);
  OracleWindow oracle(k, options);
  const PigeonholeLayout layout(blocks, k, options.max_entries);
  Generator gen(static_cast<std::uint64_t>(blocks * 131 + k), layout);

  std::int64_t now = 1'000'000;
  std::uint64_t next_ref = 1;
  for (int i = 0; i < ops; ++i) {
    const int mode = static_cast<int>(gen() % 4);
    const Fingerprint fp = gen.next(mode);
    now += static_cast<std::int64_t>(gen() % 12);
    if (gen() % 64 == 0) now += 300;  // a jump that expires a good part of the window
    const EventTime at{now};
    const RecordRef ref{next_ref++};
    // Sometimes probe as a replay of an existing ref, to exercise the self skip.
    const RecordRef self = gen() % 8 == 0 ? RecordRef{ref.value - 1 - gen() % 8} : ref;
    const std::string where =
        "m=" + std::to_string(blocks) + " k=" + std::to_string(k) + " op " + std::to_string(i);
    const auto got = window.probe(fp, at, self);
    const auto want = oracle.probe(fp, at, self);
    expect_same(got, want, where);
    if (testing::Test::HasFatalFailure() || testing::Test::HasNonfatalFailure()) return;
    if (!want || gen() % 4 == 0) {
      // Out-of-order event times now and then: the clock must not move back.
      const EventTime insert_at{gen() % 16 == 0 ? now - 200 : now};
      window.insert(fp, insert_at, ref);
      oracle.insert(fp, insert_at, ref);
    }
    ASSERT_EQ(window.stats().entries, oracle.size()) << where;
    ASSERT_EQ(window.stats().evictions, oracle.evictions()) << where;
  }
}

TEST(Window, MatchesBruteForceForEverySupportedLayout) {
  for (int k = 0; k <= PigeonholeLayout::kMaxDistance; ++k) {
    for (int m = k + 1; m <= PigeonholeLayout::kMaxBlocks; ++m) {
      const PigeonholeLayout layout(m, k, 96);
      // Bound the work per layout: wide layouts have thousands of tables.
      // Those run fewer operations over a smaller window, so that evictions still happen.
      const int ops =
          static_cast<int>(std::clamp<std::size_t>(100'000 / layout.tables(), 80, 1500));
      run_against_oracle(m, k, ops, 0, ops < 200 ? 24 : 96);
      if (HasFailure()) return;
    }
  }
}

TEST(Window, MatchesBruteForceWithTheDefaultLayout) {
  for (int k = 0; k <= PigeonholeLayout::kMaxDistance; ++k) {
    run_against_oracle(0, k, 1500);
    if (HasFailure()) return;
  }
}

TEST(Window, MatchesBruteForceAcrossTheCellSequenceWrap) {
  // The cells keep 32 sequence bits: start just below 2^32 (and 2^33) so the window straddles the
  // wrap.
  run_against_oracle(4, 3, 3000, (std::uint64_t{1} << 32) - 500);
  run_against_oracle(5, 2, 3000, (std::uint64_t{1} << 33) - 700);
  run_against_oracle(1, 0, 3000, (std::uint64_t{1} << 32) - 1);
}

WindowOptions small_window(std::size_t max_entries, milliseconds duration) {
  WindowOptions options;
  options.max_entries = max_entries;
  options.duration = duration;
  return options;
}

TEST(Window, KeepsAnEntryExactlyAtTheTimeBoundaryAndDropsOneMillisecondOlder) {
  Window window(IndexOptions{3, 0}, small_window(100, milliseconds(1000)));
  const Fingerprint fp{0xfeedULL};
  window.insert(fp, EventTime{5000}, RecordRef{1});
  auto hit = window.probe(fp, EventTime{6000}, RecordRef{2});  // 5000 == 6000 - 1000: inclusive
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 1U);
  EXPECT_EQ(window.stats().entries, 1U);
  EXPECT_FALSE(window.probe(fp, EventTime{6001}, RecordRef{2}));
  EXPECT_EQ(window.stats().entries, 0U);
  EXPECT_EQ(window.stats().evictions, 1U);
}

TEST(Window, ClockDoesNotMoveBackwards) {
  Window window(IndexOptions{3, 0}, small_window(100, milliseconds(1000)));
  const Fingerprint fp{0x1234ULL};
  window.insert(fp, EventTime{5000}, RecordRef{1});
  EXPECT_FALSE(window.probe(fp, EventTime{7000}, RecordRef{2}));
  window.insert(fp, EventTime{5500},
                RecordRef{3});  // late event: inserted, expires at the next advance
  EXPECT_FALSE(window.probe(fp, EventTime{6000}, RecordRef{4}));
}

TEST(Window, EvictsTheOldestWhenFull) {
  Window window(IndexOptions{3, 4}, small_window(3, std::chrono::hours(1)));
  // Far-apart fingerprints (about 32 bits between any two).
  auto fp = [](std::uint64_t i) { return Fingerprint{i * 0x9e3779b97f4a7c15ULL}; };
  for (std::uint64_t i = 1; i <= 4; ++i) window.insert(fp(i), EventTime{0}, RecordRef{i});
  EXPECT_EQ(window.stats().entries, 3U);
  EXPECT_EQ(window.stats().evictions, 1U);
  EXPECT_FALSE(window.probe(fp(1), EventTime{0}, RecordRef{99}));
  auto hit = window.probe(fp(4), EventTime{0}, RecordRef{99});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 4U);
  EXPECT_EQ(hit->distance, 0);
}

TEST(Window, ZeroMaxEntriesKeepsNothing) {
  Window window(IndexOptions{3, 0}, small_window(0, std::chrono::hours(1)));
  window.insert(Fingerprint{7}, EventTime{0}, RecordRef{1});
  EXPECT_FALSE(window.probe(Fingerprint{7}, EventTime{0}, RecordRef{2}));
  EXPECT_EQ(window.stats().entries, 0U);
}

TEST(Window, NeverMatchesItself) {
  Window window(IndexOptions{3, 0}, small_window(100, std::chrono::hours(1)));
  const Fingerprint fp{0xabcdefULL};
  window.insert(fp, EventTime{0}, RecordRef{7});
  EXPECT_FALSE(window.probe(fp, EventTime{0}, RecordRef{7}));
  window.insert(Fingerprint{fp.bits ^ 1}, EventTime{0}, RecordRef{8});
  auto hit = window.probe(fp, EventTime{0}, RecordRef{7});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 8U);
  EXPECT_EQ(hit->distance, 1);
}

TEST(Window, ReturnsTheNearestThenTheOldest) {
  Window window(IndexOptions{3, 0}, small_window(100, std::chrono::hours(1)));
  const std::uint64_t base = 0x0123456789abcdefULL;
  window.insert(Fingerprint{base ^ 0b111}, EventTime{1}, RecordRef{1});         // distance 3
  window.insert(Fingerprint{base ^ (1ULL << 63)}, EventTime{2}, RecordRef{2});  // distance 1
  window.insert(Fingerprint{base ^ (1ULL << 20)}, EventTime{3}, RecordRef{3});  // distance 1, newer
  window.insert(Fingerprint{base ^ 0b11}, EventTime{4}, RecordRef{4});          // distance 2
  auto hit = window.probe(Fingerprint{base}, EventTime{5}, RecordRef{0});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 2U);
  EXPECT_EQ(hit->distance, 1);
  EXPECT_EQ(hit->time.ms, 2);
}

TEST(Window, ExactDuplicateReturnsTheOldestCopyAfterOneCell) {
  Window window(IndexOptions{3, 4}, small_window(5000, std::chrono::hours(1)));
  const Fingerprint fp{0x5555aaaa3333ccccULL};
  std::mt19937_64 rng(7);
  window.insert(Fingerprint{fp.bits ^ (1ULL << 63)}, EventTime{0},
                RecordRef{1});  // distance 1, oldest of all
  window.insert(fp, EventTime{0}, RecordRef{2});
  window.insert(fp, EventTime{0}, RecordRef{3});
  for (std::uint64_t i = 0; i < 3000; ++i)
    window.insert(Fingerprint{rng()}, EventTime{0}, RecordRef{10 + i});
  const auto before = window.stats().candidates;
  auto hit = window.probe(fp, EventTime{0}, RecordRef{0});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 2U);
  EXPECT_EQ(hit->distance, 0);
  // Table 0 (keyed on bits 0-15) holds refs 1, 2, 3 at its bucket's front: the scan stops at ref 2.
  EXPECT_EQ(window.stats().candidates - before, 2U);
  const auto after_first = window.stats().candidates;
  // A probe with no exact copy scans every table.
  window.probe(Fingerprint{fp.bits ^ 0b110}, EventTime{0}, RecordRef{0});
  EXPECT_GT(window.stats().candidates - after_first, 4U);
}

TEST(Window, AcceptPredicateSkipsRejectedEntries) {
  Window window(IndexOptions{3, 0}, small_window(100, std::chrono::hours(1)));
  const std::uint64_t base = 0xf0f0f0f0f0f0f0f0ULL;
  window.insert(Fingerprint{base}, EventTime{1}, RecordRef{1});
  window.insert(Fingerprint{base ^ 0b1}, EventTime{2}, RecordRef{2});
  window.insert(Fingerprint{base ^ 0b11}, EventTime{3}, RecordRef{3});
  auto reject_one = [](const Match& m) { return m.of.value != 1; };
  auto hit = window.probe(Fingerprint{base}, EventTime{4}, RecordRef{0}, reject_one);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->of.value, 2U);
  auto reject_all = [](const Match&) { return false; };
  EXPECT_FALSE(window.probe(Fingerprint{base}, EventTime{4}, RecordRef{0}, reject_all));
  // The plain probe is unaffected.
  EXPECT_EQ(window.probe(Fingerprint{base}, EventTime{4}, RecordRef{0})->of.value, 1U);
}

TEST(Window, AcceptPredicateMatchesTheOracle) {
  WindowOptions options = small_window(200, std::chrono::hours(1));
  Window window(IndexOptions{3, 0}, options);
  OracleWindow oracle(3, options);
  const PigeonholeLayout layout(4, 3, 200);
  Generator gen(99, layout);
  auto odd_refs = [](const Match& m) { return m.of.value % 2 == 1; };
  for (std::uint64_t i = 1; i <= 2000; ++i) {
    const Fingerprint fp = gen.next(1);
    expect_same(window.probe(fp, EventTime{0}, RecordRef{i}, odd_refs),
                oracle.probe(fp, EventTime{0}, RecordRef{i}, odd_refs), "op " + std::to_string(i));
    if (HasFailure()) return;
    window.insert(fp, EventTime{0}, RecordRef{i});
    oracle.insert(fp, EventTime{0}, RecordRef{i});
  }
}

TEST(Window, ReclaimsCellsOfExpiredEntriesInUntouchedBuckets) {
  Window window(IndexOptions{3, 4}, small_window(1000, milliseconds(10)));
  std::mt19937_64 rng(3);
  for (std::uint64_t i = 0; i < 1000; ++i)
    window.insert(Fingerprint{rng()}, EventTime{0}, RecordRef{i});
  EXPECT_EQ(window.stats().cells, 4000U);
  // Much later, one fingerprint over and over: its buckets pop on insert, the sweep gets the rest.
  for (std::uint64_t i = 0; i < 8 * 4 * 1024; ++i)
    window.insert(Fingerprint{42}, EventTime{1000}, RecordRef{5000 + i});
  const WindowStats s = window.stats();
  EXPECT_EQ(s.entries, 1000U);
  EXPECT_EQ(s.cells, s.entries * s.tables);
}

TEST(Window, MatchesBruteForceWhileItsBucketSlotsGrowAndSpill) {
  // A long duration: the window fills to max_entries, so the ring grows several
  // times and every growth re-sizes the bucket slots with live cells in them.
  // Clustered fingerprints overflow slots (spill) and drain back (unspill).
  for (int blocks : {4, 5}) {
    WindowOptions options = small_window(5000, std::chrono::hours(1));
    Window window(IndexOptions{3, blocks}, options);
    OracleWindow oracle(3, options);
    const PigeonholeLayout layout(blocks, 3, options.max_entries);
    Generator gen(static_cast<std::uint64_t>(blocks), layout);
    for (std::uint64_t i = 1; i <= 12'000; ++i) {
      // Phases: mostly clustered (spills), then mostly random (the clusters drain out).
      const int mode = (i / 3000) % 2 == 0 ? static_cast<int>(gen() % 4) : (gen() % 8 == 0 ? 1 : 0);
      const Fingerprint fp = gen.next(mode);
      const EventTime at{static_cast<std::int64_t>(i)};
      expect_same(window.probe(fp, at, RecordRef{i}), oracle.probe(fp, at, RecordRef{i}),
                  "m=" + std::to_string(blocks) + " op " + std::to_string(i));
      if (HasFailure()) return;
      window.insert(fp, at, RecordRef{i});
      oracle.insert(fp, at, RecordRef{i});
    }
    const WindowStats s = window.stats();
    EXPECT_EQ(s.entries, 5000U);
    EXPECT_GE(s.cells, s.entries * s.tables);  // expired cells may wait for a pop
  }
}

TEST(Window, ReserveChangesNoAnswerWhetherEmptyOrHoldingEntries) {
  // Four windows against the oracle on one stream: sized at once before the
  // first insert (a changelog rebuild), sized early with live and spilled
  // cells in them, sized late (entries expired by time, so its ring has
  // wrapped), and left to grow.
  const WindowOptions options = small_window(5000, milliseconds(2500));
  Window at_start(IndexOptions{3, 4}, options), early(IndexOptions{3, 4}, options),
      late(IndexOptions{3, 4}, options), growing(IndexOptions{3, 4}, options);
  at_start.reserve(5000);
  OracleWindow oracle(3, options);
  const PigeonholeLayout layout(4, 3, options.max_entries);
  Generator gen(7, layout);
  for (std::uint64_t i = 1; i <= 9000; ++i) {
    if (i == 1500) early.reserve(4000);
    if (i == 7000) {
      ASSERT_GT(oracle.evictions(), 0u);
      late.reserve(5000);
    }
    const Fingerprint fp = gen.next(static_cast<int>(gen() % 4));
    const EventTime at{static_cast<std::int64_t>(i)};
    const auto want = oracle.probe(fp, at, RecordRef{i});
    for (Window* w : {&at_start, &early, &late, &growing}) {
      expect_same(w->probe(fp, at, RecordRef{i}), want, "op " + std::to_string(i));
      w->insert(fp, at, RecordRef{i});
    }
    if (HasFailure()) return;
    oracle.insert(fp, at, RecordRef{i});
  }
  for (Window* w : {&at_start, &early, &late, &growing}) {
    EXPECT_EQ(w->stats().entries, 2501U);  // times 6500..9000: the boundary is inclusive
    EXPECT_EQ(w->stats().evictions, 6499U);
  }
}

TEST(Window, MatchesBruteForceWhenItsRingGrowsWhileWrapped) {
  // The first 1024 entries fill the ring; then the `evicted` oldest expire by
  // time and every later entry comes at one time, so the ring is full again
  // with its front at `evicted` when it grows: its wrapped part moves after the
  // old end (200) or its front part to the new end (900), at each growth. A
  // scoped window moves its scopes along (every entry has scope 7 here).
  for (const std::size_t evicted : {std::size_t{200}, std::size_t{900}}) {
    for (const bool scoped : {false, true}) {
      const milliseconds duration(100'000);
      WindowOptions options = small_window(100'000, duration);
      options.scoped = scoped;
      Window window(IndexOptions{3, 4}, options);
      OracleWindow oracle(3, options);
      const PigeonholeLayout layout(4, 3, options.max_entries);
      Generator gen(evicted + (scoped ? 1 : 0), layout);
      const ScopeId scope{scoped ? 7u : 0u};
      const std::string label = "evicted " + std::to_string(evicted) + (scoped ? " scoped" : "");
      const std::int64_t later = static_cast<std::int64_t>(evicted) + 1 + duration.count();
      for (std::uint64_t i = 1; i <= 4000; ++i) {
        const EventTime at{i <= 1024 ? static_cast<std::int64_t>(i) : later};
        const Fingerprint fp = gen.next(static_cast<int>(gen() % 4));
        expect_same(window.probe(fp, at, RecordRef{i}, scope), oracle.probe(fp, at, RecordRef{i}),
                    label + " op " + std::to_string(i));
        if (HasFailure()) return;
        window.insert(fp, at, RecordRef{i}, scope);
        oracle.insert(fp, at, RecordRef{i});
      }
      EXPECT_EQ(window.stats().entries, 4000U - evicted) << label;
      EXPECT_EQ(window.stats().evictions, evicted) << label;
    }
  }
}

TEST(Window, ReserveStopsAtMaxEntriesAndNeverShrinks) {
  const WindowOptions options = small_window(5000, std::chrono::hours(1));
  Window exact(IndexOptions{3, 0}, options), beyond(IndexOptions{3, 0}, options);
  const std::size_t empty_bytes = exact.stats().bytes;
  exact.reserve(5000);
  beyond.reserve(1'000'000'000);
  EXPECT_GT(exact.stats().bytes, empty_bytes);
  EXPECT_EQ(beyond.stats().bytes, exact.stats().bytes);
  const std::size_t reserved = exact.stats().bytes;
  exact.reserve(100);
  EXPECT_EQ(exact.stats().bytes, reserved);
}

TEST(Window, RejectsUnsupportedLayouts) {
  const WindowOptions options = small_window(100, std::chrono::hours(1));
  EXPECT_THROW(Window(IndexOptions{9, 0}, options), std::invalid_argument);
  EXPECT_THROW(Window(IndexOptions{-1, 0}, options), std::invalid_argument);
  EXPECT_THROW(Window(IndexOptions{3, 3}, options), std::invalid_argument);
  EXPECT_THROW(Window(IndexOptions{3, 17}, options), std::invalid_argument);
  EXPECT_THROW(
      Window(IndexOptions{3, 0}, small_window((std::size_t{1} << 30) + 1, milliseconds(1))),
      std::invalid_argument);
}

TEST(Window, ReportsTheResolvedLayout) {
  Window window(IndexOptions{3, 0}, small_window(100, std::chrono::hours(1)));
  EXPECT_EQ(window.stats().blocks, 4);
  EXPECT_EQ(window.stats().tables, 4U);
  EXPECT_EQ(window.max_distance(), 3);
}

TEST(Window, ResolvesLiveEntriesBySequenceUntilEvicted) {
  WindowOptions options;
  options.max_entries = 2;
  Window window(IndexOptions{}, options);
  const std::uint64_t a = window.insert(Fingerprint{1}, EventTime{10}, RecordRef{100});
  const std::uint64_t b = window.insert(Fingerprint{2}, EventTime{11}, RecordRef{101});
  EXPECT_EQ(b, a + 1);
  ASSERT_TRUE(window.entry(a));
  EXPECT_EQ(window.entry(a)->of, RecordRef{100});
  EXPECT_EQ(window.entry(b)->fingerprint, Fingerprint{2});
  const auto found = window.probe(Fingerprint{2}, EventTime{12}, RecordRef{999});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->sequence, b);
  window.insert(Fingerprint{3}, EventTime{12}, RecordRef{102});
  EXPECT_FALSE(window.entry(a)) << "evicted by max_entries";
  EXPECT_TRUE(window.entry(b));
  EXPECT_FALSE(window.entry(b + 5)) << "never inserted";
}

// window.max_memory: a bound in bytes on the window's own structures.
WindowOptions bounded_by_memory(std::size_t max_memory, std::size_t max_entries = 10'000'000) {
  WindowOptions options;
  options.max_entries = max_entries;
  options.max_memory = max_memory;
  return options;
}

TEST(WindowMemory, BytesNeverExceedMaxMemoryOverALongInsertLoop) {
  constexpr std::size_t kMaxMemory = std::size_t{1} << 20;
  for (const bool scoped : {false, true}) {
    for (const int k : {3, 6}) {
      SCOPED_TRACE(testing::Message() << "scoped " << scoped << ", k " << k);
      WindowOptions options = bounded_by_memory(kMaxMemory);
      options.scoped = scoped;
      Window window(IndexOptions{k, 0}, options);
      const std::size_t capacity = window.capacity();
      EXPECT_EQ(capacity, window_capacity(IndexOptions{k, 0}, options));
      // 1 MiB holds thousands of entries (4 tables at k=3, 28 at k=6).
      EXPECT_GE(capacity, k == 3 ? 6'000U : 1'500U);
      EXPECT_LT(capacity, k == 3 ? 16'000U : 4'000U);
      std::mt19937_64 rng(static_cast<std::uint64_t>(k) * 2 + scoped);
      std::size_t most = 0;
      for (std::uint64_t i = 1; i <= 20 * capacity; ++i) {
        window.insert(Fingerprint{rng()}, EventTime{0}, RecordRef{i},
                      ScopeId{static_cast<std::uint32_t>(rng() % 7)});
        const WindowStats stats = window.stats();
        most = std::max(most, stats.bytes);
        ASSERT_LE(stats.bytes, kMaxMemory) << "after insert " << i;
        ASSERT_LE(stats.entries, capacity);
      }
      EXPECT_GE(window.size(), capacity - capacity / 100) << "spills evicted more than 1%";
      EXPECT_GT(most, kMaxMemory / 2) << "the bound is used, not left idle";
    }
  }
}

TEST(WindowMemory, BoundedWindowStillFindsEveryDuplicateItHolds) {
  Window window(IndexOptions{3, 0}, bounded_by_memory(std::size_t{1} << 20));
  const std::size_t capacity = window.capacity();
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> fps;
  for (std::uint64_t i = 1; i <= 3 * capacity; ++i) {
    fps.push_back(rng());
    window.insert(Fingerprint{fps.back()}, EventTime{0}, RecordRef{i});
  }
  // The newest `size()` are all found at distance 1; the one before them is gone.
  const std::size_t held = window.size();
  for (std::size_t j = fps.size() - held; j < fps.size(); ++j) {
    const auto hit = window.probe(Fingerprint{fps[j] ^ 4}, EventTime{0}, RecordRef{0});
    ASSERT_TRUE(hit) << j;
    EXPECT_EQ(hit->of.value, j + 1);
  }
  const std::size_t gone = fps.size() - held - 1;
  const auto miss = window.probe(Fingerprint{fps[gone]}, EventTime{0}, RecordRef{0});
  EXPECT_TRUE(!miss || miss->of.value != gone + 1);
}

TEST(WindowMemory, TheTightestOfMaxEntriesAndMaxMemoryWins) {
  const IndexOptions index{3, 0};
  const std::size_t by_memory = window_capacity(index, bounded_by_memory(std::size_t{1} << 20));
  ASSERT_GT(by_memory, 2'000U);
  // max_entries tighter: the window holds max_entries.
  {
    Window window(index, bounded_by_memory(std::size_t{1} << 20, 2'000));
    EXPECT_EQ(window.capacity(), 2'000U);
    for (std::uint64_t i = 1; i <= 5'000; ++i)
      window.insert(Fingerprint{i * 0x9e3779b97f4a7c15ULL}, EventTime{0}, RecordRef{i});
    EXPECT_EQ(window.size(), 2'000U);
    EXPECT_EQ(window.stats().evictions, 3'000U);
  }
  // max_memory tighter: the window holds what fits.
  {
    Window window(index, bounded_by_memory(std::size_t{1} << 20, 1'000'000));
    EXPECT_EQ(window.capacity(), by_memory);
    for (std::uint64_t i = 1; i <= 3 * by_memory; ++i)
      window.insert(Fingerprint{i * 0x9e3779b97f4a7c15ULL}, EventTime{0}, RecordRef{i});
    EXPECT_EQ(window.size(), by_memory);
  }
  // Unbounded in bytes: max_entries alone.
  EXPECT_EQ(window_capacity(index, bounded_by_memory(0, 1'000'000)), 1'000'000U);
  // A larger bound holds more, and a bound twice as large about twice as many.
  const std::size_t doubled = window_capacity(index, bounded_by_memory(std::size_t{2} << 20));
  EXPECT_GT(doubled, by_memory + by_memory / 2);
  // duration is the third bound: entries older than it go whatever fits.
  WindowOptions timed = bounded_by_memory(std::size_t{1} << 20);
  timed.duration = milliseconds(10);
  Window window(index, timed);
  for (std::uint64_t i = 1; i <= 100; ++i)
    window.insert(Fingerprint{i * 0x9e3779b97f4a7c15ULL}, EventTime{static_cast<std::int64_t>(i)},
                  RecordRef{i});
  EXPECT_EQ(window.size(), 11U);
}

TEST(WindowMemory, TheFootprintBoundsWhatAFullWindowHolds) {
  const IndexOptions index{3, 0};
  const WindowFootprint footprint(index, false);
  for (const std::size_t entries : {1'024U, 5'000U, 40'000U}) {
    WindowOptions options;
    options.max_entries = entries;
    Window window(index, options);
    std::mt19937_64 rng(entries);
    for (std::uint64_t i = 1; i <= 2 * entries; ++i)
      window.insert(Fingerprint{rng()}, EventTime{0}, RecordRef{i});
    EXPECT_LE(window.stats().bytes, footprint.bytes(entries)) << entries;
    EXPECT_GE(window.stats().bytes, footprint.fixed_bytes(entries)) << entries;
  }
}

TEST(WindowMemory, AMaxMemoryTooSmallForAMinimalWindowIsRefused) {
  const IndexOptions index{3, 0};
  EXPECT_EQ(window_capacity(index, bounded_by_memory(4096)), 0U);
  try {
    validate(index, bounded_by_memory(64 << 10));
    FAIL() << "64 KiB accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds fewer than 1024 entries"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Window(index, bounded_by_memory(64 << 10)), std::invalid_argument);
  // A window of fewer entries needs only room for those.
  EXPECT_NO_THROW(validate(index, bounded_by_memory(64 << 10, 100)));
  EXPECT_EQ(Window(index, bounded_by_memory(64 << 10, 100)).capacity(), 100U);
}

}  // namespace
}  // namespace neardup::dedup
