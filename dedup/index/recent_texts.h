#pragma once
// The recent-text cache: the exact shingle sets of the newest short texts
// kept in the window and of the reposts of them that were not, with an LSH
// band index of their own.
//
// Why: a short text has few shingles, so one or two edited characters move
// its Jaccard a long way, and the pairs that matter sit near the 0.8
// boundary. There the sketch's bands (3 of 4 bins: a pair at J = 0.8 shares
// one with probability 0.79) miss a fifth of the pairs, and its 2-bit
// estimate (64 bins) scatters by +-0.06. For the newest `capacity` short texts
// (at most kMaxExactShingles distinct shingles) this keeps the shingle set
// itself (32-bit hashes), indexed by kRecentBands bands of kRecentBandBins
// minima each (a pair at J = 0.8 shares one with probability 0.997), so the
// Engine finds the boundary pairs and decides them by the exact Jaccard.
//
// A repost (a short duplicate) is not a window entry, but it stands for one:
// a text close to the repost and not to its original (a repost of a repost,
// each with its own edit) is a duplicate of that original. So the Engine keeps
// reposts here too, each under its original's sequence.
//
// A ring of `capacity` slots in insertion order; per band a table of bucket
// heads, each a chain through the slots from newest to oldest. A slot that
// the ring has reused ends every chain through it (everything older is gone
// as well), so eviction touches no chain (only the map of each record's first
// text). Keyed by the window's sequence of the entry; the caller checks that
// the entry is still in the window.
//
// Memory: per slot 152 bytes (128 in the slot, 24 beside it), an entry of the
// map by record (about 32 bytes) and its set (4 bytes per shingle plus 136, and
// an ASCII text's words, at most 132 bytes; kept as the largest the slot has
// held), plus 8 bytes per bucket head (2 * capacity buckets per band, rounded
// up to a power of two): at most 9.0 MB at the default 8192 texts (1.5 MB of
// slots, 1 MB of heads, 6.4 MB of sets of 128 shingles with their words; about
// 5.3 MB in all for texts of 40), whatever the window's size. Not thread-safe:
// one per Engine.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

class RecentTexts {
 public:
  /// `bands`: how many of a text's band keys are set (kRecentBands, or fewer for
  /// sketches with fewer bins). Keeps `capacity` (>= 1) texts, rounded up to a
  /// power of two.
  RecentTexts(std::size_t capacity, int bands);

  /// Keeps `text` (not empty) of the record `ref` for the window entry
  /// `sequence`; sequences must increase from one insert to the next. Evicts
  /// the oldest when full. O(bands).
  void insert(std::uint64_t sequence, std::uint64_t ref, const ExactShingles& text);
  /// Keeps `text` (not empty) of the record `ref`, a repost of window entry
  /// `original` that is no window entry itself: for_each_candidate visits it
  /// as `original`, find() does not return it. Evicts the oldest when full. O(bands).
  void insert_repost(std::uint64_t original, std::uint64_t ref, const ExactShingles& text);

  /// Calls visit(sequence, const ExactShingles&, const Visited&) for every
  /// kept text that shares a band key with `text`, newest first in each band
  /// (a text met in two bands is visited once; a repost as its original's
  /// sequence), except those whose size rules out a Jaccard of `min_jaccard`
  /// (the smaller set under min_jaccard times the larger), which are skipped
  /// without reading their sets; at most kMaxVisits of them (a story reposted
  /// hundreds of times fills its bands' chains). O(bands + kMaxVisits).
  ///
  /// `self` is the record being decided. A record decided again (after an
  /// aborted transaction, or a request sent to the judge again) meets what
  /// its first decision and later ones kept: the texts it kept itself, and
  /// the reposts kept after its first decision, are not visited, so it is
  /// judged as the first time (kept texts after it are no duplicates of it
  /// either way). Its first decision is known while a text of it is in the ring.
  struct Visited {
    std::uint64_t ref = 0;  // the record that kept this text
    bool repost = false;
  };
  static constexpr std::size_t kMaxVisits = 64;
  template <typename Visit>
  void for_each_candidate(const ExactShingles& text, double min_jaccard, std::uint64_t self,
                          Visit&& visit) const;

  /// Starts loading the bucket heads for_each_candidate(text) reads first
  /// (a cache miss each); call it a record or two ahead. No state change. O(bands).
  void prefetch(const ExactShingles& text) const;
  /// The second step, a record ahead: starts loading the newest slot of each
  /// of those buckets (reads the heads prefetch() loaded). O(bands).
  void prefetch_slots(const ExactShingles& text) const;

  /// The kept text of window entry `sequence` (not a repost of it), or
  /// nullptr. O(log capacity).
  const ExactShingles* find(std::uint64_t sequence) const;

  /// Bytes held: the slots, their sets and the bucket heads. O(1): the sets'
  /// bytes are counted as texts are kept (the judge reads this after every
  /// poll, also when idle).
  std::size_t bytes() const;
  /// The most bytes() reaches for this capacity and bands: every slot holding
  /// a set of kMaxExactShingles shingles, must-match tokens and kMaxWordBytes of
  /// words. O(1).
  static std::size_t max_bytes(std::size_t capacity, int bands);

 private:
  struct Slot {
    std::array<std::uint64_t, kRecentBands> next{};  // insert number + 1 of the next older
                                                     // text in the bucket, 0: none
    std::array<std::uint32_t, kRecentBands> tag{};   // the band key's low bits
    std::uint32_t shingles = 0;                      // text.hashes().size(), beside the tags
    ExactShingles text;
  };
  std::size_t bucket(int band, std::uint64_t key) const {
    return static_cast<std::size_t>(band) * buckets_ + static_cast<std::size_t>(key >> shift_);
  }
  bool live(std::uint64_t number) const {
    return number != 0 && number + slots_.size() > inserted_;
  }
  const Slot& slot(std::uint64_t number) const { return slots_[(number - 1) & mask_]; }
  void keep(std::uint64_t sequence, std::uint64_t order, std::uint64_t ref,
            const ExactShingles& text);

  std::vector<Slot> slots_;  // a power of two of them
  // Each slot's window sequence (a repost's: its original's), side by side
  // (not in the slot): the candidate walk reads it for every slot it meets.
  std::vector<std::uint64_t> sequences_;
  // find()'s key, 8 bytes a step of its binary search, non-decreasing in
  // insertion order: 2 * sequence for a kept text, 2 * the newest kept text's
  // sequence + 1 for a repost.
  std::vector<std::uint64_t> order_;
  std::vector<std::uint64_t> refs_;  // the record that kept each text
  // The first live text each record kept: insert number by ref.
  std::unordered_map<std::uint64_t, std::uint64_t> first_;
  std::uint64_t newest_kept_ = 0;     // the sequence of the newest kept (not repost) text
  std::uint64_t mask_;                // slots_.size() - 1
  std::vector<std::uint64_t> heads_;  // bands * buckets_: insert number + 1, 0: empty
  std::size_t buckets_;
  int shift_;
  int bands_;
  std::uint64_t inserted_ = 0;  // texts inserted so far
  std::size_t set_bytes_ = 0;   // the slots' sets: the sum of their capacity_bytes()
};

template <typename Visit>
void RecentTexts::for_each_candidate(const ExactShingles& text, double min_jaccard,
                                     std::uint64_t self, Visit&& visit) const {
  // A record decided before sees, of what came after its first decision's
  // text, kept texts only.
  std::uint64_t first = ~std::uint64_t{0};
  if (const auto it = first_.find(self); it != first_.end()) first = it->second;
  // A text sharing several bands is met once per band: remember the few seen
  // (by insert number: a text and its repost stand for one sequence).
  std::uint64_t seen[kMaxVisits];
  std::size_t seen_count = 0;
  const auto mine = static_cast<double>(text.hashes().size());
  for (int band = 0; band < bands_; ++band) {
    const std::uint64_t key = text.band_key(band);
    const auto tag = static_cast<std::uint32_t>(key);
    for (std::uint64_t n = heads_[bucket(band, key)]; live(n);) {
      const Slot& s = slot(n);
      const std::uint64_t number = n;
      n = s.next[static_cast<std::size_t>(band)];
      if (s.tag[static_cast<std::size_t>(band)] != tag) continue;
      const auto theirs = static_cast<double>(s.shingles);
      if (std::min(mine, theirs) < min_jaccard * std::max(mine, theirs)) continue;
      const std::size_t i = (number - 1) & mask_;
      const bool repost = order_[i] & 1;
      if (refs_[i] == self || (repost && number > first)) continue;
      bool again = false;
      for (std::size_t k = 0; k < seen_count; ++k) again |= seen[k] == number;
      if (again) continue;
      seen[seen_count++] = number;
      visit(sequences_[i], s.text, Visited{refs_[i], repost});
      if (seen_count == kMaxVisits) return;
    }
  }
}

}  // namespace neardup::dedup
