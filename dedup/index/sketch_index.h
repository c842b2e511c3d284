#pragma once
// The sketches of the window's entries and an LSH band index over them.
//
// Keyed by the window's insertion sequence: the Engine is the only inserter of
// its Window, so it records each entry's sketch under the sequence that
// Window::insert returned, and entries leave in the same FIFO order. Nothing
// is ever deleted here: the caller passes the oldest live sequence, and
// everything older is dead (its place is reused by later entries).
//
// Layout: a ring of 16-byte sketches parallel to the window, one slot per
// entry up to max_entries, mapped whole but written in sequence order (so
// only the pages reached so far are memory, and nothing is ever copied); a
// 1-bit "has a sketch" map beside it. Per band a table of buckets, each one
// 64-byte cache line of 16 references to entries whose band key falls in it.
// A probe reads one line per band, so all of its band candidates come in one
// round of cache misses, requested together (and, by prefetch(), while the
// window probes): a chain through the entries would cost a dependent miss
// per entry. An insert takes a free or dead place in the line. A full line
// (short texts crowd some band keys) keeps its 15 newest entries and marks
// its last place: the older ones move to the bucket's spill, a list kept
// apart in age order and read only for a marked line. A bucket keeps at most
// its kMaxBucket newest live entries, so a crowd cannot make a probe
// O(window). The spills together take about 1 byte per entry of max_entries
// at most (64 KiB for a smaller window); beyond that a full line gives its
// oldest entry up.
//
// A reference is 32 bits: the entry's offset, counted from the first
// sequence modulo P = 2^S - 2 and stored as 1..P (0 is an empty place, 2^S - 1
// the mark), with S = bit_width(1.25 max_entries + 2) so that P exceeds the
// longest live span by a quarter; and
// above it T = 32 - S bits of the entry's band key (its tag: 8 bits at the
// default 10M entries), the key bits just below those that index the first,
// smallest table (see Growth). A probe decodes only the references whose tag
// is the probe's, and verifies each candidate by its sketch. A dead
// reference would decode as a live entry again P sequences after its own: a
// sweep clears the dead references of a few buckets at each insert, every
// bucket within P - max_entries inserts, so none ever does.
//
// Growth: the tables start at 1/8 of their full size (fewer steps when T < 3,
// never under 64 buckets a band) and double whenever the live entries
// outnumber 4 times the buckets, up to bit_ceil(max_entries / 10) buckets a
// band (5 to 10 entries a bucket at a full window). A short stream's buckets
// stay in the CPU caches. Doubling splits each bucket by the tag bit that
// becomes a bucket bit, in one pass over the table, and leaves the dead
// references behind; so at a full window T - 3 tag bits are left to filter.
//
// Memory: 16 bytes + 1 bit per slot plus 64 bytes per bucket per band (about
// 20 bytes an entry over 3 bands at the 10M default), plus the spills. Blocks of 2 MiB and
// more are mapped lazily (zero pages) and advised for transparent huge pages:
// the buckets are read at random, and a TLB miss per band per probe would be
// most of the cost.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "dedup/core/options.h"
#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

struct SketchIndexStats {
  std::size_t bytes = 0;  ///< ring slots written so far + buckets
  std::uint64_t probes = 0;
  std::uint64_t candidates = 0;  ///< live entries visited over all probes (tag and sketch checked)
  /// Live entries a full bucket gave up for a newer one (they stay in their other bands).
  std::uint64_t evictions = 0;
  std::size_t spilled = 0;  ///< references in spills now
};

/// Not thread-safe: one per Engine.
class SketchIndex {
 public:
  /// A bucket's line holds this many references (one cache line).
  static constexpr std::size_t kBucketEntries = 16;
  /// A probe visits at most this many entries per band: the newest live ones
  /// of its bucket (line and spill).
  static constexpr std::size_t kMaxBucket = 256;

  /// Throws std::invalid_argument for invalid options (dedup/fingerprint/sketch.h validate())
  /// or max_entries > 2^30.
  SketchIndex(const SketchOptions& options, std::size_t max_entries);
  ~SketchIndex();
  SketchIndex(SketchIndex&&) noexcept;
  SketchIndex& operator=(SketchIndex&&) noexcept;

  /// Records entry `sequence` (greater than every earlier one) with its sketch
  /// and band keys, or with no sketch (`sketch` == nullptr: a fingerprint
  /// replayed from a changelog; it is in no band). `oldest_live` is the oldest
  /// sequence still in the window after the insert. O(bands) amortized.
  void insert(std::uint64_t sequence, std::uint64_t oldest_live, const SketchResult* sketch);

  /// The sketch of a live entry, or nullopt (dead, unknown, or inserted without one). O(1).
  std::optional<Sketch> sketch(std::uint64_t sequence, std::uint64_t oldest_live) const;

  /// Calls visit(sequence, const Sketch&) for every live entry (>= oldest_live)
  /// that shares a band key bucket with `probe` and is among the
  /// kMaxBucket newest live entries of that bucket, newest first (an
  /// entry that shares several bands is visited once per band). Entries whose
  /// band key differs from the probe's in its tag bits are skipped unseen;
  /// the others share the bucket and the tag, not always the key: callers
  /// verify every candidate by its sketch. O(bands * kBucketEntries),
  /// O(bands * kMaxBucket) for crowded buckets.
  template <class Visit>
  void for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live, Visit&& visit);

  /// Starts loading the buckets `probe` will read. No state change.
  void prefetch(const SketchResult& probe) const;
  /// Reads the buckets (prefetch() them well before) and starts loading the
  /// sketches of the live entries whose tag is the probe's. No state change.
  /// O(bands * kBucketEntries).
  void prefetch_cells(const SketchResult& probe, std::uint64_t oldest_live) const;

  SketchIndexStats stats() const;

  /// The most stats().bytes reaches for these options and max_entries (every
  /// slot written, the tables at their full size). O(1).
  static std::size_t max_bytes(const SketchOptions& options, std::size_t max_entries);

 private:
  /// Zeroed, page-mapped memory; with `huge`, blocks >= 2 MiB are advised for huge pages.
  class Block {
   public:
    Block() = default;
    /// `populate`: every page written now (probes read buckets before any is
    /// written: a zero page first, then a second fault at the first write).
    Block(std::size_t bytes, bool huge, bool populate = false);
    ~Block();
    Block(Block&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
      other.data_ = nullptr, other.bytes_ = 0;
    }
    Block& operator=(Block&& other) noexcept;
    template <class T>
    T* as() const {
      return static_cast<T*>(data_);
    }

   private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  struct alignas(64) Bucket {
    std::array<std::uint32_t, kBucketEntries> refs;
  };
  static_assert(sizeof(Bucket) == 64);
  /// In a line's last place: the bucket has a spill.
  static constexpr std::uint32_t kMarked = ~std::uint32_t{0};
  struct Found {
    std::uint64_t back;
    std::size_t at;
  };
  using Spills = std::unordered_map<std::size_t, std::vector<std::uint32_t>>;

  /// The slot of the entry `back` (1..capacity_) sequences older than
  /// next_sequence_: the ring index without a division.
  std::size_t slot_back(std::uint64_t back) const {
    const auto b = static_cast<std::size_t>(back);
    return next_slot_ >= b ? next_slot_ - b : next_slot_ + capacity_ - b;
  }
  bool has_sketch(std::size_t at) const {
    return (has_sketch_.as<std::uint64_t>()[at >> 6] >> (at & 63)) & 1;
  }
  Sketch sketch_at(std::size_t at) const { return slots_.as<Sketch>()[at]; }
  std::size_t buckets_per_band() const { return std::size_t{1} << bucket_bits_; }
  std::size_t bucket_index(std::size_t band, std::uint64_t key) const {
    return band * buckets_per_band() + static_cast<std::size_t>(key >> (64 - bucket_bits_));
  }
  Bucket& bucket(std::size_t band, std::uint64_t key) const {
    return buckets_.as<Bucket>()[bucket_index(band, key)];
  }
  /// The spill of a marked bucket: its older references, oldest first.
  std::span<const std::uint32_t> spill(std::size_t band, std::uint64_t key) const {
    const auto s = spills_.find(bucket_index(band, key));
    return s == spills_.end() ? std::span<const std::uint32_t>{} : s->second;
  }
  bool live(std::uint32_t stored, std::uint64_t span) const {
    if (stored == 0 || stored == kMarked) return false;
    const std::uint64_t back = back_of(stored);
    return back != 0 && back <= span;
  }
  /// Puts `ref` in bucket `index` (a free place in the line, or the oldest
  /// entry's, which moves to the spill). `span`: the live span.
  void place(std::size_t index, std::uint32_t ref, std::uint64_t span);
  /// Drops the spill's dead references (and its oldest live ones past
  /// kMaxBucket or the spills' memory); unmarks `line` when none is left.
  void trim_spill(Bucket& line, std::size_t index, std::uint64_t span);
  static std::size_t spill_bytes(const std::vector<std::uint32_t>& spill);
  /// Clears the dead references of the next sweep_per_insert_ buckets (and
  /// trims their spills), so that every bucket is swept within P -
  /// max_entries inserts: no dead reference lives to decode as a live entry.
  void sweep(std::uint64_t span);
  void set_sweep();
  /// Lays `refs` (live, oldest first) out as bucket `index` of `lines`: all in
  /// the line, or the newest 15 and a spill of the rest (in `spills`).
  void lay_out(Bucket* lines, std::size_t index, std::span<const std::uint32_t> refs,
               Spills& spills);
  std::uint32_t tag(std::uint64_t key) const {
    return static_cast<std::uint32_t>((key >> tag_shift_) & tag_mask_);
  }
  /// How many sequences older than next_sequence_ the entry a non-empty
  /// reference names is: 1 for the newest; 0 or more than the live span means
  /// none (a dead reference, or next_sequence_ itself).
  std::uint64_t back_of(std::uint32_t stored) const {
    const std::uint64_t offset = stored & offset_mask_;
    return next_offset_ >= offset ? next_offset_ - offset : next_offset_ + period_ - offset;
  }
  /// Doubles the tables, splitting every bucket by its next key bit.
  void grow(std::uint64_t oldest_live);

  int bands_ = 0;
  std::size_t max_entries_ = 0;
  std::size_t capacity_ = 0;    // slots in the ring: max_entries (mapped whole, touched as reached)
  std::size_t slots_used_ = 0;  // slots written at least once (what the ring occupies)
  Block slots_;                 // one Sketch per slot
  Block has_sketch_;            // 1 bit per slot
  int bucket_bits_ = 0;         // log2 of the buckets per band now
  int first_bucket_bits_ = 0;   // ... at the start
  int full_bucket_bits_ = 0;    // ... at the most: bit_ceil(max_entries / 10)
  int offset_bits_ = 32;        // S: low bits of a reference that hold the offset
  std::uint64_t offset_mask_ = 0;    // 2^S - 1
  std::uint64_t period_ = 0;         // P = 2^S - 2: offsets run 1..P
  std::uint64_t tag_mask_ = 0;       // 2^T - 1, T = 32 - S: the key bits kept above the offset
  int tag_shift_ = 0;                // 64 - first_bucket_bits_ - T: the tag's lowest key bit
  Block buckets_;                    // Bucket [band * buckets_per_band() + bucket]
  std::uint64_t next_sequence_ = 0;  // one past the newest insert
  std::uint64_t next_offset_ = 0;    // next_sequence_'s offset, 1..P
  std::size_t next_slot_ = 0;        // next_sequence_'s slot
  std::uint64_t base_ = 0;           // first sequence - 1: the first entry's offset is 1
  bool empty_ = true;
  Spills spills_;                      // of the marked buckets, by bucket index
  std::size_t spill_bytes_ = 0;        // what spills_ holds, by spill_bytes()
  std::size_t max_spill_bytes_ = 0;    // see spill_budget()
  std::size_t sweep_next_ = 0;         // the next bucket sweep() clears
  std::size_t sweep_per_insert_ = 0;   // buckets swept per insert
  std::vector<Found> found_;           // for_each_candidate()'s, reused
  std::vector<std::uint32_t> gather_;  // place()'s and grow()'s, reused
  SketchIndexStats stats_;
};

template <class Visit>
void SketchIndex::for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live,
                                     Visit&& visit) {
  ++stats_.probes;
  if (empty_ || probe.shingles == 0 || oldest_live >= next_sequence_) return;
  const std::uint64_t span = next_sequence_ - oldest_live;
  // The live references with the probe's tag, every band's, with their
  // sketches requested as they are found; then visited newest first.
  found_.clear();
  auto take = [&](std::uint32_t stored, std::uint32_t want) {
    if (stored == 0 || (stored >> offset_bits_) != want || stored == kMarked) return;
    const std::uint64_t back = back_of(stored);
    if (back == 0 || back > span) return;
    const std::size_t at = slot_back(back);
    __builtin_prefetch(slots_.as<Sketch>() + at);
    found_.push_back(Found{back, at});
  };
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    const std::uint64_t key = probe.band_keys[b];
    const std::uint32_t want = tag(key);
    const Bucket& line = bucket(b, key);
    for (const std::uint32_t stored : line.refs) take(stored, want);
    if (line.refs.back() == kMarked)
      for (const std::uint32_t stored : spill(b, key)) take(stored, want);
  }
  // Newest (smallest back) first; an entry found in several bands, in band order.
  if (found_.size() <= 32) {
    for (std::size_t i = 1; i < found_.size(); ++i)
      for (std::size_t j = i; j > 0 && found_[j].back < found_[j - 1].back; --j)
        std::swap(found_[j], found_[j - 1]);
  } else {
    std::stable_sort(found_.begin(), found_.end(),
                     [](const Found& x, const Found& y) { return x.back < y.back; });
  }
  for (const Found& f : found_) {
    if (!has_sketch(f.at)) continue;
    ++stats_.candidates;
    visit(next_sequence_ - f.back, sketch_at(f.at));
  }
}

}  // namespace neardup::dedup
