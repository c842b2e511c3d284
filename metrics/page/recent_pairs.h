#pragma once
// What the page on the metrics port (metrics/page/page.h) shows besides the
// counters: the most recent duplicate pairs with both texts, the originals
// with the most duplicates, and the biggest stories of the last hour
// (StoryMinutes below). Bounded memory whatever the stream: a ring of the
// last `ring` pairs, a cache of the last `texts` kept messages' texts (each cut
// to `text_bytes`), a table of the last `originals` originals that had a
// duplicate, and `stories` originals counted per minute over the last hour. An original whose text
// has left the cache (or was kept by another instance) is recorded as not held; the page says so
// rather than guessing.
//
// Threads: kept() and duplicate() are the pipeline thread's (one writer);
// snapshot() may be called from any thread (the HTTP workers). The text cache
// is the writer's alone and is not locked; the ring, the originals table and
// the stories are under one mutex, taken once per duplicate and once per snapshot.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_annotations.h"

namespace neardup::metrics {

/// Where a message was read: "topic/partition/offset".
struct MessageAt {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

/// An owned MessageAt.
struct Location {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

/// A text as the page shows it: valid UTF-8 (invalid bytes became U+FFFD),
/// cut at a character boundary to the configured size.
struct ShownText {
  bool held = false;  ///< false: the original's text is no longer in the cache
  std::string text;   ///< empty unless held
  bool truncated = false;
};

// ------------------------------------------------------------ StoryMinutes
// The biggest stories of the last hour, as the page shows them: for each
// original with a duplicate, the duplicates it had in each of the last 60
// wall-clock minutes. Bounded memory whatever the stream: at most `capacity`
// originals, each with a ring of 60 per-minute counts. When the table is full,
// a new original takes the place of the one with the fewest duplicates in the
// last hour (ties: the one whose last duplicate was recorded first), and starts from
// its own duplicate: an original can be undercounted only while it is among
// the smallest, so the biggest stories of the hour are counted exactly unless
// more than `capacity` originals compete within the hour.
//
// Not thread-safe: RecentPairs calls it under its own mutex (one lock per
// duplicate for the whole page). The clock is the caller's (milliseconds since
// the epoch), so tests inject it.

inline constexpr int kStoryMinutes = 60;

/// One story of the last hour as a snapshot lists it.
struct HourStory {
  Location original;
  ShownText text;            ///< the original's text when the story entered the table
  std::uint32_t hour = 0;    ///< duplicates in the last 60 minutes (the sum of per_minute)
  std::int64_t last_ms = 0;  ///< when its last duplicate was recorded
  /// Duplicates per minute, oldest first; the last is the minute that holds
  /// the snapshot's time (StoryMinutes::top's now_ms).
  std::array<std::uint32_t, kStoryMinutes> per_minute{};
};

class StoryMinutes {
 public:
  /// capacity 0 is raised to 1; each text is cut to text_bytes by the caller.
  /// Memory: about capacity * (text_bytes + 320) bytes, allocated as it fills.
  StoryMinutes(std::size_t capacity, std::size_t text_bytes);

  /// Counts one duplicate of the original `key` (at `original`) at `now_ms`.
  /// `text`: the original's text as the page would show it (copied when the
  /// original enters the table, or when its text was not held before). No
  /// allocation once every slot has been used. O(capacity).
  void record(std::uint64_t key, const MessageAt& original, const ShownText& text,
              std::int64_t now_ms);

  /// The `n` originals with the most duplicates in the 60 minutes up to
  /// `now_ms` (ties: the most recently recorded last duplicate), none with 0. O(capacity log n).
  std::vector<HourStory> top(std::size_t n, std::int64_t now_ms) const;

  /// Originals in the table (tests).
  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::uint64_t key = 0;
    Location at;
    ShownText text;
    std::array<std::uint32_t, kStoryMinutes> buckets{};  // by minute % 60
    std::int64_t minute = 0;                             // the newest minute the buckets hold
    std::uint32_t hour = 0;                              // the sum of buckets
    std::int64_t last_ms = 0;
    std::uint64_t last_seq = 0;  // record() calls up to its last duplicate (orders ties)
  };
  /// Moves `e` forward to `minute`, emptying the minutes that fell out of the hour.
  static void advance(Entry& e, std::int64_t minute);
  /// Duplicates of `e` in the hour ending with `minute` (e unchanged).
  static std::uint32_t hour_at(const Entry& e, std::int64_t minute);

  std::size_t capacity_, text_bytes_;
  std::uint64_t recorded_ = 0;
  std::vector<Entry> entries_;
};

struct RecentPair {
  std::uint64_t seq = 0;   ///< 1 for the first duplicate recorded
  std::int64_t at_ms = 0;  ///< wall clock when recorded, ms since the epoch
  Location original, duplicate;
  ShownText original_text, duplicate_text;  ///< duplicate_text is always held
  int distance = 0;                         ///< SimHash distance in bits
  std::optional<double> similarity;         ///< sketch estimate, when the sketch decided
  std::uint32_t count = 0;                  ///< duplicates of this original so far (1: the first)
};

struct TopOriginal {
  Location original;
  ShownText text;  ///< as of its last duplicate
  std::uint32_t duplicates = 0;
  std::int64_t last_ms = 0;  ///< when its last duplicate was recorded
};

struct PairsSnapshot {
  std::vector<RecentPair> pairs;  ///< newest first, at most Limits::ring
  std::vector<TopOriginal> top;  ///< most duplicates first (ties: most recent), at most Limits::top
  /// The biggest stories of the last hour (StoryMinutes::top), at most Limits::top.
  std::vector<HourStory> stories;
  /// Start of the minute that the last per_minute bucket of each story holds (ms since the epoch).
  std::int64_t stories_minute_ms = 0;
  std::uint64_t recorded = 0;  ///< duplicates recorded since start
  std::size_t ring = 0, texts = 0, text_bytes = 0, originals = 0,
              story_originals = 0;  ///< the limits in use
  /// Every text was withheld (metrics.redact_texts): ShownText::text is empty
  /// and the page shows locations, distances and counts only.
  bool texts_redacted = false;
};

/// Empties every text of `snapshot` and marks it texts_redacted.
void redact_texts(PairsSnapshot& snapshot);

/// What the pipeline knows about one duplicate.
struct DuplicateSeen {
  std::uint64_t original_key = 0;  ///< the key the original's text was kept() under
  MessageAt original, duplicate;
  std::string_view duplicate_text;
  int distance = 0;
  std::optional<double> similarity;
  /// Duplicates of this original so far, as the window counts them
  /// (dedup::Verdict::count, this one included); 0: unknown, RecentPairs counts
  /// them itself (among the originals its table still holds).
  std::uint32_t count = 0;
};

class RecentPairs {
 public:
  struct Limits {
    std::size_t ring = 64;         ///< recent pairs kept
    std::size_t texts = 4096;      ///< kept messages' texts cached
    std::size_t text_bytes = 480;  ///< bytes of each text kept (cut at a character boundary)
    std::size_t originals = 256;   ///< originals with duplicates tracked
    std::size_t top = 10;          ///< originals (and stories of the hour) a snapshot lists
    std::size_t stories = 64;      ///< originals counted per minute over the last hour
  };

  /// Limits of 0 are raised to 1. Memory: about texts * (text_bytes + 48) +
  /// (ring + originals) * 2 * text_bytes + stories * (text_bytes + 320),
  /// allocated as it fills (2.3 MB at the defaults, full).
  explicit RecentPairs(Limits limits);
  RecentPairs() : RecentPairs(Limits{}) {}
  RecentPairs(const RecentPairs&) = delete;
  RecentPairs& operator=(const RecentPairs&) = delete;

  /// Pipeline thread only: remembers a kept message's text under `key` (a
  /// message read again replaces its own entry), dropping the oldest text when
  /// the cache is full. No lock; no allocation once every slot has been used.
  /// O(text_bytes) expected.
  void kept(std::uint64_t key, std::string_view text);

  /// Pipeline thread only: records a duplicate pair (the original's text from
  /// the cache, if still there). Takes the lock once; O(originals).
  void duplicate(const DuplicateSeen& seen) EXCLUDES(mutex_);

  /// Any thread: a copy of the pairs and the top originals. O(ring + originals log originals).
  /// `up_to`: only the pairs recorded up to that count (their seq <= up_to),
  /// and `recorded` at most that: the page shows the pairs as of the counters
  /// it shows beside them (Exporter), not pairs newer than those counters.
  PairsSnapshot snapshot(std::uint64_t up_to = UINT64_MAX) const EXCLUDES(mutex_);
  /// The same with the stories of the hour up to `now_ms` (tests inject the clock;
  /// duplicate() records at the wall clock).
  PairsSnapshot snapshot_at(std::int64_t now_ms, std::uint64_t up_to = UINT64_MAX) const
      EXCLUDES(mutex_);

  /// Any thread: duplicates recorded since start (the seq of the newest pair).
  std::uint64_t recorded() const EXCLUDES(mutex_);

  /// Texts in the cache (pipeline thread, tests).
  std::size_t texts_held() const { return held_; }

 private:
  struct CachedText {
    std::uint64_t key = 0;
    bool used = false;
    bool truncated = false;
    std::string text;
  };
  struct Original {
    std::uint64_t key = 0;
    Location at;
    ShownText text;
    std::uint32_t duplicates = 0;
    std::int64_t last_ms = 0;
    std::uint64_t last_seq = 0;
  };

  /// The slot holding `key`'s text, or -1.
  std::int32_t find_slot(std::uint64_t key) const;
  std::size_t home(std::uint64_t key) const;
  void unindex(std::size_t slot);

  Limits limits_;
  // ---- text cache: the pipeline thread's alone
  std::vector<CachedText> texts_;  // a ring in insertion order
  std::size_t next_text_ = 0;
  std::size_t held_ = 0;
  std::vector<std::int32_t> index_;  // open addressing (linear probing): slot in texts_, or -1
  std::size_t index_mask_ = 0;
  // ---- shared with snapshot()
  mutable base::Mutex mutex_;
  std::vector<RecentPair> ring_ GUARDED_BY(mutex_);
  std::size_t next_pair_ GUARDED_BY(mutex_) = 0;
  std::uint64_t recorded_ GUARDED_BY(mutex_) = 0;
  std::vector<Original> originals_ GUARDED_BY(mutex_);
  StoryMinutes stories_ GUARDED_BY(mutex_);
};

/// Copies `text` into `out` as valid UTF-8 (each invalid byte becomes U+FFFD),
/// cut at a character boundary so that `out` holds at most `max_bytes` bytes.
/// Returns true when something was cut. Reuses out's capacity.
bool copy_shown_text(std::string_view text, std::size_t max_bytes, std::string& out);

}  // namespace neardup::metrics
