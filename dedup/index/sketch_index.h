#pragma once
// The sketches of the window's entries and an LSH band index over them.
//
// Keyed by the window's insertion sequence: the Engine is the only inserter of
// its Window, so it records each entry's sketch under the sequence that
// Window::insert returned, and entries leave in the same FIFO order. Nothing
// is ever deleted here: the caller passes the oldest live sequence, and
// everything older is dead (its slot is reused by later entries).
//
// Layout: one ring of slots parallel to the window, one slot per entry up to
// max_entries, mapped whole but written in sequence order (so only the pages
// reached so far are memory, and nothing is ever copied). A slot is the
// entry's per band 32-bit "next older entry in my bucket" cell followed by its
// 16-byte sketch (28 bytes at 3 bands), so a chain step that goes on to verify
// the entry finds its sketch in the line it already loaded for the cell (two
// lines when the slot straddles one); a 1-bit "has a sketch" map beside it.
// Per band a table of bucket heads (a 32-bit reference, below, to the newest
// entry whose band key falls in the bucket). A bucket is a chain through the cells from
// newest to oldest, so a probe walks it until the first dead entry: expiry
// costs nothing. The chains of all bands are walked in lockstep with the next
// slot prefetched, so their cache misses overlap.
// A reference to an entry (a head or a cell) is 32 bits: the low S bits of the
// entry's offset from the first sequence, S = bit_width(max_entries) (2^S >
// max_entries, the longest live span), rebuilt relative to a newer sequence;
// and above them T = 32 - S bits of the entry's band key (its tag: 8 bits at
// the default 10M entries): the key bits just below those that index the
// first, smallest head table (see Growth).
// The walk skips an entry whose tag differs from the probe's without reading
// or comparing its sketch (it reads only the cell, to go on). A live entry is always
// rebuilt exactly; after 2^S inserts an empty or stale reference (a bucket
// untouched for 2^S inserts) can alias to some other live entry, which is only
// an extra candidate: callers verify every candidate with its sketch.
//
// Growth: the head tables start at 1/16 of their full size (G = 4 fewer
// bucket bits, fewer when T < 4, and never under 1024 buckets per band: 3 MB
// over 3 bands at the 10M default) and double whenever the live entries
// outnumber twice the buckets, up to bit_ceil(max_entries) / 4 buckets per
// band (chains of ~2.5 entries at a full window). A short stream's heads stay
// in the CPU caches; a full window's are the same size as if allocated whole.
// Doubling walks every live chain once (16 chains in lockstep, so their cell
// misses overlap) and splits it by the tag bit that becomes a bucket bit,
// keeping newest-first order; so at a full window T - G tag bits are left to
// filter (4 of 8 at 10M). The work is amortized O(1) per insert but done at
// once: 28, 56, 119 and 308 ms for the four doublings of a 10M window
// (docs/ACCURACY.md), each time the live count first passes twice the buckets.
// Splitting must follow every reference exactly, which holds only while fewer
// than 2^S sequences have passed since the first (after that an empty or
// stale reference can alias a live entry, and relinking through it would cut
// real chains): from then on, and if a larger table cannot be mapped, the
// tables keep their size (longer chains, the same candidates).
//
// Memory: (4 * bands + 16) bytes + 1 bit per slot plus 4 bytes per bucket head
// per band. Blocks of 2 MiB and more are mapped lazily (zero pages) and
// advised for transparent huge pages: the heads are read at random, and a TLB
// miss per band per probe is most of the cost.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "dedup/core/options.h"
#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

struct SketchIndexStats {
  std::size_t bytes = 0;  ///< ring slots written so far + bucket heads
  std::uint64_t probes = 0;
  std::uint64_t candidates = 0;  ///< live entries visited over all probes (tag and sketch checked)
};

/// Not thread-safe: one per Engine.
class SketchIndex {
 public:
  /// A probe visits at most this many entries per band (the newest first), so a
  /// crowd of texts sharing a band key cannot make a probe O(window).
  static constexpr std::size_t kMaxChain = 256;

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
  /// that shares a band key bucket with `probe` (newest first per band, at most
  /// kMaxChain per band; an entry that shares several bands is visited once per band).
  /// Entries whose band key differs from the probe's in its tag bits are
  /// skipped unseen. It may visit a few more live entries (after 2^S inserts an
  /// empty or stale reference can alias to a live entry with the same tag):
  /// callers verify every candidate by its sketch. O(bands + chain steps).
  template <class Visit>
  void for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live, Visit&& visit);

  /// Starts loading the bucket heads `probe` will read. No state change.
  void prefetch(const SketchResult& probe) const;
  /// Reads the heads (prefetch() them well before) and starts loading the
  /// first live entry of each chain: its cell, and its sketch when its tag is
  /// the probe's. No state change. O(bands).
  void prefetch_cells(const SketchResult& probe, std::uint64_t oldest_live) const;

  SketchIndexStats stats() const;

  /// The most stats().bytes reaches for these options and max_entries (every
  /// slot written, the head tables at their full size). O(1).
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

  std::size_t slot_of(std::uint64_t sequence) const {
    return static_cast<std::size_t>(sequence % capacity_);
  }
  /// The slot of the entry `back` (<= capacity_) sequences older than the one
  /// in slot `newer_at`: slot_of() without its division, for the walks.
  std::size_t slot_before(std::size_t newer_at, std::uint64_t back) const {
    const auto b = static_cast<std::size_t>(back);
    return newer_at >= b ? newer_at - b : newer_at + capacity_ - b;
  }
  bool has_sketch(std::size_t at) const {
    return (has_sketch_.as<std::uint64_t>()[at >> 6] >> (at & 63)) & 1;
  }
  /// Slot `at`: its band cells, then its sketch (4-byte aligned: read with sketch_at()).
  unsigned char* slot(std::size_t at) const {
    return slots_.as<unsigned char>() + at * slot_bytes_;
  }
  std::uint32_t* cells(std::size_t at) const { return reinterpret_cast<std::uint32_t*>(slot(at)); }
  Sketch sketch_at(std::size_t at) const {
    Sketch s;
    std::memcpy(&s, slot(at) + sketch_offset_, sizeof s);
    return s;
  }
  std::size_t heads_per_band() const { return std::size_t{1} << head_bits_; }
  std::size_t bucket(std::uint64_t key) const {
    return static_cast<std::size_t>(key >> (64 - head_bits_));
  }
  /// The head of `key`'s bucket in `band`.
  std::uint32_t* head(std::size_t band, std::uint64_t key) const {
    return heads_.as<std::uint32_t>() + band * heads_per_band() + bucket(key);
  }
  std::uint32_t tag(std::uint64_t key) const {
    return static_cast<std::uint32_t>((key >> tag_shift_) & tag_mask_);
  }
  /// The reference to `sequence` stored in a head or cell, tagged with `key`.
  std::uint32_t reference(std::uint64_t sequence, std::uint64_t key) const {
    return static_cast<std::uint32_t>(((sequence - base_) & offset_mask_) |
                                      (std::uint64_t{tag(key)} << offset_bits_));
  }
  static constexpr std::uint64_t kNoEntry = ~std::uint64_t{0};
  /// The live entry a reference held by entry (or head) `newer` names, or
  /// kNoEntry when it names none: empty, not older than `newer`, or dead.
  std::uint64_t decode(std::uint32_t stored, std::uint64_t newer, std::uint64_t oldest_live) const {
    const std::uint64_t back = ((newer - base_) - stored) & offset_mask_;
    return back == 0 || back > newer - oldest_live ? kNoEntry : newer - back;
  }
  /// Starts loading slot `at` for a walk in `band`: its cell and, when the
  /// entry's tag is the probe's (it will be verified), the rest of the slot.
  void prefetch_slot(std::size_t at, std::size_t band, bool same_tag) const {
    __builtin_prefetch(cells(at) + band);
    if (same_tag) __builtin_prefetch(slot(at) + slot_bytes_ - 1);  // a slot may straddle two lines
  }
  /// Doubles the head tables, splitting every live chain by its next key bit.
  void grow(std::uint64_t oldest_live);

  int bands_ = 0;
  std::size_t max_entries_ = 0;
  std::size_t capacity_ = 0;    // slots in the ring: max_entries (mapped whole, touched as reached)
  std::size_t slots_used_ = 0;  // slots written at least once (what the ring occupies)
  std::size_t sketch_offset_ = 0;  // 4 * bands: the sketch follows the cells
  std::size_t slot_bytes_ = 0;     // sketch_offset_ + 16
  Block slots_;                    // slot_bytes_ per slot
  Block has_sketch_;               // 1 bit per slot
  int head_bits_ = 0;              // log2 of the buckets per band now
  int first_head_bits_ = 0;        // ... at the start
  int full_head_bits_ =
      0;  // ... at the most: bit_ceil(max_entries) / 4, or the size growth stopped at
  int offset_bits_ = 32;             // S: low bits of a reference that hold the offset
  std::uint64_t offset_mask_ = 0;    // 2^S - 1
  std::uint64_t tag_mask_ = 0;       // 2^T - 1, T = 32 - S: the key bits kept above the offset
  int tag_shift_ = 0;                // 64 - first_head_bits_ - T: the tag's lowest key bit
  Block heads_;                      // uint32 [band * heads_per_band() + bucket]
  std::uint64_t next_sequence_ = 0;  // one past the newest insert
  std::size_t next_slot_ = 0;        // slot_of(next_sequence_)
  std::uint64_t base_ = 0;           // first sequence - 1: the first entry's offset is 1
  bool empty_ = true;
  SketchIndexStats stats_;
};

template <class Visit>
void SketchIndex::for_each_candidate(const SketchResult& probe, std::uint64_t oldest_live,
                                     Visit&& visit) {
  ++stats_.probes;
  if (empty_ || probe.shingles == 0) return;
  // One chain per band, walked in lockstep: follow() decodes a reference
  // relative to the newer entry that holds it and, when it names a live older
  // entry, queues it and prefetches its slot (the cell; the sketch too when
  // the tag is the probe's) for the next round.
  struct Cursor {
    std::uint64_t sequence;
    std::size_t at;  // its slot
    std::size_t band;
    bool same_tag;
  };
  std::array<Cursor, kMaxSketchBands> cursors;
  std::array<std::uint32_t, kMaxSketchBands> tags{};
  for (int band = 0; band < bands_; ++band)
    tags[static_cast<std::size_t>(band)] = tag(probe.band_keys[static_cast<std::size_t>(band)]);
  std::size_t live = 0;
  auto follow = [&](std::uint32_t stored, std::uint64_t newer, std::size_t newer_at,
                    std::size_t band) {
    const std::uint64_t sequence = decode(stored, newer, oldest_live);
    if (sequence == kNoEntry) return;
    const std::size_t at = slot_before(newer_at, newer - sequence);
    const bool same_tag = (stored >> offset_bits_) == tags[band];
    prefetch_slot(at, band, same_tag);
    cursors[live++] = Cursor{sequence, at, band, same_tag};
  };
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    follow(*head(b, probe.band_keys[b]), next_sequence_, next_slot_, b);
  }
  for (std::size_t steps = 0; steps < kMaxChain && live != 0; ++steps) {
    const std::size_t round = live;
    live = 0;
    for (std::size_t i = 0; i < round; ++i) {
      const Cursor c = cursors[i];  // live <= i: follow() may overwrite cursors[live] only
      if (c.same_tag && has_sketch(c.at)) {
        ++stats_.candidates;
        visit(c.sequence, sketch_at(c.at));
      }
      follow(cells(c.at)[c.band], c.sequence, c.at, c.band);
    }
  }
}

}  // namespace neardup::dedup
