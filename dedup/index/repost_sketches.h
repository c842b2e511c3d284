#pragma once
// The repost cache: the sketches of the newest long reposts, texts the Engine
// judged duplicates of a window entry and did not keep, each standing for
// that entry, with an LSH band index of its own.
//
// Why: the window holds kept texts only. A text edited in a chain (A kept,
// A' dropped as A's duplicate, A'' close to A' and not to A) finds nothing in
// the window, though it is a duplicate of A through A'. The recent-text cache
// (dedup/index/recent_texts.h) covers this for short texts by their exact
// sets; this covers the long ones (more than kMaxExactShingles shingles) by
// their 16-byte sketch.
//
// Bands: kBands bands of 16 sketch bits each (8 bins of 2 bits at the default
// bits = 2), taken from the sketch itself, so that whoever has the sketch
// (the group judge, from a request) keys a repost alike: two bins agree with
// probability J + (1 - J) / 4, so a pair at J = 0.8 shares a band with
// probability 1 - (1 - 0.85^8)^8 = 0.92, one at 0.85 with 0.98, one at 0.9
// with 0.998. A candidate is verified by its sketch, as the sketch index's are.
//
// A ring of `capacity` slots in insertion order (a storm of reposts evicts the
// oldest: the memory is fixed); per band a table of buckets, each one 64-byte
// cache line of kLineEntries references (a slot's insert number, modulo
// 2^32 - 1, and its band key's low 32 bits). A probe reads one line per band
// and loads only the slots whose key bits are its own: a chain through the
// slots would cost a cache miss per entry, matching or not. An insert takes
// an empty or dead place in the line, else the oldest entry's (a crowded key
// keeps its newest kLineEntries reposts in that band). Keyed by the window
// sequence of the original; the caller checks that it is still in the
// window. A reference that outlives 2^32 - 1 inserts in a quiet line
// may name a newer slot: it is verified by its sketch like any candidate.
//
// Reposts are no window entries and have no changelog record: a rebuilt
// window starts with this cache empty, as with the recent-text cache, and it
// fills again with the reposts judged after the restart.
//
// Memory: 40 bytes a slot, and per band a line per 4 slots (128 bytes a slot
// over 8 bands): 1.3 MiB at the default 8192 reposts. Not thread-safe: one per
// Engine.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

class RepostSketches {
 public:
  static constexpr int kBands = 8;
  using Keys = std::array<std::uint64_t, kBands>;
  /// The band keys of `sketch`: band b hashes its bits [16 b, 16 b + 16). O(kBands).
  static Keys keys_of(const Sketch& sketch);
  /// References in a bucket's line.
  static constexpr std::size_t kLineEntries = 8;
  /// A walk visits at most this many reposts, the newest first.
  static constexpr std::size_t kMaxVisits = 32;

  /// Keeps `capacity` (>= 1) reposts, rounded up to a power of two.
  explicit RepostSketches(std::size_t capacity);

  /// One long repost.
  struct Repost {
    Sketch sketch;
    std::uint64_t original = 0;  ///< the window sequence of the entry it duplicates
    std::uint64_t ref = 0;       ///< the record it came from
    std::uint64_t born = 0;      ///< the window's next sequence when it was judged
  };

  /// Keeps `repost` with its band keys (keys_of(repost.sketch)), evicting
  /// the oldest when full. O(kBands * kLineEntries).
  void insert(const Repost& repost, const Keys& keys);

  /// Calls visit(const Repost&) for every kept repost that shares a band key
  /// with `keys` (up to its low 32 bits), each once, newest first, at most
  /// kMaxVisits. A record decided again meets neither its own reposts nor
  /// those kept after its first one among them (`self`: the record being
  /// decided). O(kBands * kLineEntries).
  template <typename Visit>
  void for_each_candidate(const Keys& keys, std::uint64_t self, Visit&& visit) const;

  /// Starts loading the lines for_each_candidate(keys) reads. No state change.
  void prefetch(const Keys& keys) const;
  /// The second step, a record later: reads those lines and starts loading
  /// the slots whose key bits are the probe's. No state change. O(kBands * kLineEntries).
  void prefetch_slots(const Keys& keys) const;

  /// Reposts kept now (at most the capacity).
  std::size_t size() const;
  /// Bytes held: the slots and the lines (fixed at construction).
  std::size_t bytes() const;
  /// bytes() for this capacity. O(1).
  static std::size_t max_bytes(std::size_t capacity);

 private:
  struct alignas(64) Line {
    std::array<std::uint32_t, kLineEntries> number{};  // stored insert number, 0: empty
    std::array<std::uint32_t, kLineEntries> tag{};     // the band key's low 32 bits
  };
  static_assert(sizeof(Line) == 64);
  static constexpr std::uint64_t kPeriod = 0xffffffffULL;  // stored numbers run 1..kPeriod
  static std::uint32_t stored(std::uint64_t number) {
    return static_cast<std::uint32_t>((number - 1) % kPeriod + 1);
  }
  /// How many inserts older than the newest (stored as `newest`) a stored
  /// number is (0: the newest).
  static std::uint64_t back(std::uint32_t number, std::uint64_t newest) {
    return newest >= number ? newest - number : newest + kPeriod - number;
  }
  /// Whether a stored number names a slot still in the ring.
  bool live(std::uint32_t number, std::uint64_t newest) const {
    return number != 0 && back(number, newest) < std::min<std::uint64_t>(inserted_, slots_.size());
  }
  std::size_t line_index(int band, std::uint64_t key) const {
    return static_cast<std::size_t>(band) * buckets_ + static_cast<std::size_t>(key >> shift_);
  }

  std::vector<Repost> slots_;   // a power of two of them, by (insert number - 1) & mask_
  std::uint64_t mask_;          // slots_.size() - 1
  std::vector<Line> lines_;     // kBands * buckets_
  std::size_t buckets_;         // per band, a power of two
  int shift_;                   // 64 - log2(buckets_)
  std::uint64_t inserted_ = 0;  // reposts inserted so far; insert numbers run 1..inserted_
};

template <typename Visit>
void RepostSketches::for_each_candidate(const Keys& keys, std::uint64_t self, Visit&& visit) const {
  if (inserted_ == 0) return;
  // The live references with the probe's key bits, every band's, as insert numbers.
  std::array<std::uint64_t, kBands * kLineEntries> found;
  std::size_t count = 0;
  const std::uint64_t newest = stored(inserted_);
  for (int band = 0; band < kBands; ++band) {
    const std::uint64_t key = keys[static_cast<std::size_t>(band)];
    const auto tag = static_cast<std::uint32_t>(key);
    const Line& l = lines_[line_index(band, key)];
    for (std::size_t i = 0; i < kLineEntries; ++i)
      if (l.tag[i] == tag && live(l.number[i], newest))
        found[count++] = inserted_ - back(l.number[i], newest);
  }
  std::sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(count), std::greater<>());
  count = static_cast<std::size_t>(
      std::unique(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(count)) -
      found.begin());
  std::uint64_t own = ~std::uint64_t{0};  // the oldest repost `self` kept, among those met
  for (std::size_t k = 0; k < count; ++k)
    if (slots_[(found[k] - 1) & mask_].ref == self) own = found[k];
  std::size_t visits = 0;
  for (std::size_t k = 0; k < count && visits < kMaxVisits; ++k) {
    const Repost& r = slots_[(found[k] - 1) & mask_];
    if (r.ref == self || found[k] > own) continue;
    ++visits;
    visit(r);
  }
}

}  // namespace neardup::dedup
