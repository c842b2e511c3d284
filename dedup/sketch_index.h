#pragma once
// The sketches of the window's entries and an LSH band index over them.
//
// Keyed by the window's insertion sequence: the Engine is the only inserter of
// its Window, so it records each entry's sketch under the sequence that
// Window::insert returned, and entries leave in the same FIFO order. Nothing
// is ever deleted here: the caller passes the oldest live sequence, and
// everything older is dead (its slot is reused by later entries).
//
// Layout: a ring of slots, one per live entry ({16-byte sketch, one 32-bit
// "next older entry in my bucket" per band}), grown by doubling up to
// max_entries; per band a table of bucket heads (32-bit sequence of the newest
// entry whose band key falls in the bucket). A bucket is a chain through the
// slots from newest to oldest, so a probe walks it until the first dead entry:
// expiry costs nothing. Sequences are stored as the low 32 bits of their offset
// from the first one (0 = no entry) and rebuilt relative to a newer sequence;
// the window holds at most 2^30 entries, so a
// live entry is always rebuilt exactly (a stale bucket can alias to some other
// live entry, which is only an extra candidate: callers verify every candidate
// with its sketch).
//
// Memory: (16 + 4 * bands) bytes per slot plus 4 bytes per bucket head per band;
// heads = bit_ceil(max_entries) / 4 per band (chains of ~2.5 random entries at a
// full window of a power-of-two size). Zero pages are mapped lazily.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

#include "dedup/options.h"
#include "dedup/sketch.h"

namespace neardup::dedup {

struct SketchIndexStats {
  std::size_t bytes = 0;         ///< ring + bucket heads
  std::uint64_t probes = 0;
  std::uint64_t candidates = 0;  ///< live chain entries visited over all probes
};

/// Not thread-safe: one per Engine.
class SketchIndex {
 public:
  /// A probe visits at most this many entries per band (the newest first), so a
  /// crowd of texts sharing a band key cannot make a probe O(window).
  static constexpr std::size_t kMaxChain = 256;

  /// Throws std::invalid_argument for invalid options (dedup/sketch.h validate())
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
  /// that shares a band key bucket with `probe` (newest first per band, at most
  /// kMaxChain per band; an entry that shares several bands is visited once per band).
  /// It may visit a few more live entries (after 2^32 inserts an empty bucket can
  /// read as a live entry, and a bucket untouched for 2^32 inserts can alias):
  /// callers verify every candidate by its sketch. O(bands + visited).
  template <class Visit>
  void for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live, Visit&& visit);

  /// Starts loading the bucket heads `probe` will read. No state change.
  void prefetch(const SketchResult& probe) const;

  SketchIndexStats stats() const;

 private:
  std::size_t slot_of(std::uint64_t sequence) const { return static_cast<std::size_t>(sequence % capacity_); }
  const std::uint32_t* slot(std::uint64_t sequence) const { return ring_.get() + slot_of(sequence) * stride_; }
  std::uint32_t* slot(std::uint64_t sequence) { return ring_.get() + slot_of(sequence) * stride_; }
  std::size_t bucket(std::uint64_t key) const { return static_cast<std::size_t>(key >> head_shift_); }
  void grow(std::uint64_t oldest_live);

  struct FreeDeleter {
    void operator()(void* p) const;
  };

  int bands_ = 0;
  std::size_t max_entries_ = 0;
  std::size_t stride_ = 0;    // 32-bit words per slot: 4 (sketch) + bands
  std::size_t capacity_ = 0;  // slots in the ring
  std::unique_ptr<std::uint32_t[], FreeDeleter> ring_;
  std::unique_ptr<std::uint64_t[], FreeDeleter> has_sketch_;  // 1 bit per slot
  int head_shift_ = 64;
  std::size_t heads_per_band_ = 0;
  std::unique_ptr<std::uint32_t[], FreeDeleter> heads_;  // [band * heads_per_band_ + bucket]
  std::uint64_t next_sequence_ = 0;  // one past the newest insert
  std::uint64_t base_ = 0;           // first sequence - 1: cells hold uint32(sequence - base_), 0 = none
  bool empty_ = true;
  SketchIndexStats stats_;
};

template <class Visit>
void SketchIndex::for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live, Visit&& visit) {
  ++stats_.probes;
  if (empty_ || probe.shingles == 0) return;
  for (int band = 0; band < bands_; ++band) {
    std::uint32_t stored = heads_[static_cast<std::size_t>(band) * heads_per_band_ +
                                  bucket(probe.band_keys[static_cast<std::size_t>(band)])];
    std::uint64_t newer = next_sequence_;  // every chain element is older than this
    for (std::size_t steps = 0; steps < kMaxChain; ++steps) {
      const std::uint32_t back = static_cast<std::uint32_t>(newer - base_) - stored;
      if (back == 0 || back > newer - oldest_live) break;  // dead, or not older than `newer`
      const std::uint64_t sequence = newer - back;
      const std::uint32_t* s = slot(sequence);
      const bool has = (has_sketch_[slot_of(sequence) >> 6] >> (slot_of(sequence) & 63)) & 1;
      if (has) {
        Sketch sketch;
        std::memcpy(sketch.words.data(), s, sizeof sketch.words);
        ++stats_.candidates;
        visit(sequence, static_cast<const Sketch&>(sketch));
      }
      stored = s[4 + band];
      newer = sequence;
    }
  }
}

}  // namespace neardup::dedup
