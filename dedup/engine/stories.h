#pragma once
// Story bookkeeping: for each window entry that got duplicates (a story), how
// many, when, how similar, and a few of them, until the entry leaves the
// window. Pure bookkeeping over the window's sequences and refs: what a
// summary says and where it goes is the caller's (stream/pipeline/story_writer.h).

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "dedup/core/types.h"

namespace neardup::dedup {

/// One original with duplicates, as counted so far.
struct Story {
  static constexpr std::size_t kSamples = 5;  ///< duplicates' refs kept: the first ones

  RecordRef original;
  EventTime first_seen;  ///< the original's event time
  EventTime last_seen;   ///< the latest event time among its duplicates (never before first_seen)
  std::uint64_t duplicates = 0;
  bool has_similarity = false;  ///< some duplicate was judged by the sketch
  double min_similarity = 1.0, max_similarity = 0.0;
  int min_distance = 64, max_distance = 0;  ///< SimHash bits between original and duplicates
  std::array<RecordRef, kSamples> samples{};
  std::uint8_t sampled = 0;  ///< samples held (min(duplicates, kSamples))
  bool changed = false;      ///< duplicates counted since its last summary
};

/// Not thread-safe: one per window, on the thread that decides. Memory:
/// one map node (about 160 bytes) per story while its original is live.
class StoryBook {
 public:
  /// Counts `duplicate` (event time `time`; `similarity` when the sketch
  /// judged it) against the live entry `original` that it duplicates.
  /// `renewed`: the sequence of the entry that took the original's place
  /// (window.refresh_on_duplicate), which the story follows from then on.
  /// Returns the story. O(log stories).
  const Story& count(const Match& original, RecordRef duplicate, EventTime time,
                     std::optional<double> similarity,
                     std::optional<std::uint64_t> renewed = std::nullopt);

  /// Takes `story` as counted elsewhere (a restart's seed) for the live
  /// entry `sequence`; a story already counted for it stays as it is.
  /// Returns whether it was taken. O(log stories).
  bool seed(std::uint64_t sequence, const Story& story) {
    return stories_.emplace(sequence, story).second;
  }

  /// Every story whose entry left the window (its sequence is below
  /// `oldest_live`, the window's oldest live sequence), oldest first:
  /// `emit(const Story&)`, then forgets it. Returns how many. O(closed · log stories).
  template <class Emit>
  std::size_t close(std::uint64_t oldest_live, Emit&& emit) {
    std::size_t closed = 0;
    while (!stories_.empty() && stories_.begin()->first < oldest_live) {
      emit(static_cast<const Story&>(stories_.begin()->second));
      stories_.erase(stories_.begin());
      ++closed;
    }
    return closed;
  }

  /// Every story with duplicates since its last report, oldest first:
  /// `emit(const Story&)`, and it is unchanged again. Returns how many. O(stories).
  template <class Emit>
  std::size_t report_changed(Emit&& emit) {
    std::size_t reported = 0;
    for (auto& [sequence, story] : stories_) {
      if (!story.changed) continue;
      story.changed = false;
      emit(static_cast<const Story&>(story));
      ++reported;
    }
    return reported;
  }

  std::size_t size() const { return stories_.size(); }
  bool empty() const { return stories_.empty(); }

 private:
  std::map<std::uint64_t, Story> stories_;  // by the window sequence of the story's entry
};

}  // namespace neardup::dedup
