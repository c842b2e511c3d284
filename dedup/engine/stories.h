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
#include <utility>
#include <vector>

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
///
/// Transactions: once checkpoint() was called, every change (a count, a
/// close, a report) keeps the story's state as of the last checkpoint the
/// first time it touches it, so rollback() can put the book back as it was
/// there (an aborted transaction's counts, closes and reports undone). The
/// journal holds one saved story per story touched since the checkpoint; its
/// buffer is reused, so the steady state allocates nothing for it.
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
    const auto [it, taken] = stories_.emplace(sequence, Node{story, journaling_ ? epoch_ : 0});
    if (taken) save(sequence, std::nullopt);
    return taken;
  }

  /// Every story whose entry left the window (its sequence is below
  /// `oldest_live`, the window's oldest live sequence), oldest first:
  /// `emit(const Story&)`, then forgets it. Returns how many. O(closed · log stories).
  template <class Emit>
  std::size_t close(std::uint64_t oldest_live, Emit&& emit) {
    std::size_t closed = 0;
    while (!stories_.empty() && stories_.begin()->first < oldest_live) {
      auto it = stories_.begin();
      touch(it);
      emit(static_cast<const Story&>(it->second.story));
      stories_.erase(it);
      ++closed;
    }
    return closed;
  }

  /// Every story with duplicates since its last report, oldest first:
  /// `emit(const Story&)`, and it is unchanged again. Returns how many. O(stories).
  template <class Emit>
  std::size_t report_changed(Emit&& emit) {
    std::size_t reported = 0;
    for (auto it = stories_.begin(); it != stories_.end(); ++it) {
      if (!it->second.story.changed) continue;
      touch(it);
      it->second.story.changed = false;
      emit(static_cast<const Story&>(it->second.story));
      ++reported;
    }
    return reported;
  }

  /// What the book holds now is for good (a transaction committed): later
  /// changes can be rolled back to here. The first call starts the journal.
  /// O(1).
  void checkpoint() {
    journaling_ = true;
    ++epoch_;
    journal_.clear();
  }
  /// Puts the book back as it was at the last checkpoint(): the stories
  /// counted, closed or reported since are as they were then. Nothing
  /// without a checkpoint. O(touched · log stories).
  void rollback();

  std::size_t size() const { return stories_.size(); }
  bool empty() const { return stories_.empty(); }

 private:
  struct Node {
    Story story;
    std::uint64_t saved_in = 0;  // the epoch whose journal holds its earlier state
  };
  using Map = std::map<std::uint64_t, Node>;
  /// Journals the story at `it` as it is, unless this epoch already did.
  void touch(Map::iterator it) {
    if (!journaling_ || it->second.saved_in == epoch_) return;
    it->second.saved_in = epoch_;
    save(it->first, it->second.story);
  }
  void save(std::uint64_t sequence, std::optional<Story> before) {
    if (journaling_) journal_.emplace_back(sequence, std::move(before));
  }

  Map stories_;  // by the window sequence of the story's entry
  bool journaling_ = false;
  std::uint64_t epoch_ = 1;  // (a new node's saved_in, 0, is never an epoch)
  /// Since the last checkpoint, in order: a sequence and its story then
  /// (nullopt: none). A sequence appears at most once.
  std::vector<std::pair<std::uint64_t, std::optional<Story>>> journal_;
};

}  // namespace neardup::dedup
