#pragma once
// The pigeonhole (multi-index hashing) layout and its cell tables.
//
// Split the 64 fingerprint bits into m near-equal contiguous blocks. Two
// fingerprints within k bits differ in at most k blocks, so at least m-k blocks
// are identical: one table keyed on each combination of m-k blocks
// (C(m, m-k) tables) sees every pair within k bits in a shared bucket
// (Manku, Jain, Das Sarma 2007; Norouzi et al. 2012). Candidates are verified
// by the full distance, so the index is exact.
//
// A table's bucket is a FIFO ring of cells {24-bit residue, 32 low bits of the
// entry's insertion sequence}, the packed residues apart from the sequences so a
// probe streams only the residues (CellTables below). The residue holds
// fingerprint bits from OUTSIDE the table's key (padded with key bits when fewer
// than 32 remain; the cell keeps the low 24 of those 32): any subset
// of the bits satisfies popcount(subset of a^b) <= popcount(a^b), so
// popcount(residue ^ r) <= k is a necessary condition and a cheap filter.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace neardup::dedup {

/// Page-backed memory for large arrays, advised to use transparent huge pages:
/// on this VM a TLB miss costs about as much as a cache miss, and huge pages
/// roughly halved probe+insert time at 10M entries. A block of 2 MiB or more
/// starts on a 2 MiB boundary, which a huge page needs. Zero-filled. Throws
/// std::bad_alloc. Thread-compatible.
void* huge_allocate(std::size_t bytes);
void huge_free(void* memory, std::size_t bytes) noexcept;
/// Grows a huge_allocate block from `old_bytes` to `new_bytes` (>= old_bytes)
/// in place or by moving its pages (mremap: no copy, and the pages already
/// touched are not faulted in again) to a 2 MiB boundary, so its huge pages
/// move whole; the contents are kept and the rest is zero-filled. Returns
/// the block's address. Throws std::bad_alloc.
void* huge_reallocate(void* memory, std::size_t old_bytes, std::size_t new_bytes);

/// A fixed-size, zero-initialized array of an implicit-lifetime type (all-zero
/// bytes must be a valid value) in huge_allocate memory. Move-only.
template <class T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(std::size_t size)
      : data_(static_cast<T*>(huge_allocate(size * sizeof(T)))), size_(size) {}
  ~HugeArray() { huge_free(data_, size_ * sizeof(T)); }
  HugeArray(HugeArray&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  HugeArray& operator=(HugeArray&& other) noexcept {
    if (this != &other) {
      huge_free(data_, size_ * sizeof(T));
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  /// Grows to `size` elements (no shrinking): the first size() keep their
  /// values, the new ones are zero. Pointers into the array are invalidated.
  void grow(std::size_t size) {
    if (size <= size_) return;
    data_ = static_cast<T*>(huge_reallocate(data_, size_ * sizeof(T), size * sizeof(T)));
    size_ = size;
  }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  std::size_t size() const { return size_; }
  /// Bytes mapped (rounded to pages).
  std::size_t bytes() const;

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

std::size_t huge_mapped_bytes(std::size_t bytes);
template <class T>
std::size_t HugeArray<T>::bytes() const {
  return huge_mapped_bytes(size_ * sizeof(T));
}

/// Immutable description of the tables for (m blocks, k max distance).
/// Thread-safe after construction (read-only).
class PigeonholeLayout {
 public:
  static constexpr int kMaxBlocks = 16;
  static constexpr int kMaxDistance = 8;

  /// True for 0 <= k <= 8 and k+1 <= m <= 16.
  static bool supported(int blocks, int max_distance);
  /// The layout `blocks == 0` selects: k+1 for k <= 3 (fewest tables, least
  /// memory), k+2 above (k+1 keys on one narrow block and scans too many cells).
  static int default_blocks(int max_distance);
  /// log2 of the bucket count for a table with `key_bits` key bits that holds up
  /// to `capacity` entries: the key itself when it is narrow enough, else a hash
  /// into 2^(floor(log2 capacity) - 3) buckets (about 8-16 cells per bucket),
  /// or below 2^18 entries 2^(floor(log2 capacity) - 4) (16-32 cells: a small
  /// window's cells stay in cache, and its memory goes further).
  static int bucket_bits_for(int key_bits, std::size_t capacity);

  /// `blocks == 0` picks default_blocks(max_distance). Throws
  /// std::invalid_argument when the pair is unsupported. O(C(m, m-k) * m).
  PigeonholeLayout(int blocks, int max_distance, std::size_t capacity);

  int blocks() const { return blocks_; }
  int max_distance() const { return max_distance_; }
  std::size_t tables() const { return tables_.size(); }
  int block_start(int block) const { return block_start_[block]; }
  int block_width(int block) const { return block_start_[block + 1] - block_start_[block]; }

  std::uint64_t key_mask(std::size_t table) const { return tables_[table].key_mask; }
  int key_bits(std::size_t table) const { return std::popcount(tables_[table].key_mask); }
  int bucket_bits(std::size_t table) const { return tables_[table].bucket_bits; }
  bool hashed(std::size_t table) const { return tables_[table].hashed; }

  /// Bucket index of `fp` in `table`, in [0, 2^bucket_bits). Equal key bits give
  /// equal buckets.
  std::uint32_t bucket(std::size_t table, std::uint64_t fp) const {
    const Table& t = tables_[table];
    if (t.hashed) return static_cast<std::uint32_t>(mix(fp & t.key_mask) >> (64 - t.bucket_bits));
    return static_cast<std::uint32_t>(gather(t.key_runs, t.key_run_count, fp));
  }
  /// The 32 filter bits of `fp` for `table` (outside-key bits first).
  std::uint32_t residue(std::size_t table, std::uint64_t fp) const {
    const Table& t = tables_[table];
    return static_cast<std::uint32_t>(gather(t.residue_runs, t.residue_run_count, fp));
  }

 private:
  struct Run {  // bits [shift, shift+width) of fp land at [dest, dest+width)
    std::uint8_t shift = 0;
    std::uint8_t dest = 0;
    std::uint64_t mask = 0;  // (1 << width) - 1
  };
  static constexpr int kMaxRuns = kMaxBlocks + 1;
  struct Table {
    std::uint64_t key_mask = 0;
    int bucket_bits = 0;
    bool hashed = false;
    std::uint8_t key_run_count = 0;
    std::uint8_t residue_run_count = 0;
    std::array<Run, kMaxRuns> key_runs{};
    std::array<Run, kMaxRuns> residue_runs{};
  };

  static std::uint64_t gather(const std::array<Run, kMaxRuns>& runs, int count, std::uint64_t fp) {
    std::uint64_t out = 0;
    for (int i = 0; i < count; ++i) out |= ((fp >> runs[i].shift) & runs[i].mask) << runs[i].dest;
    return out;
  }
  static std::uint64_t mix(
      std::uint64_t x) {  // a 64-bit finalizer: every input bit reaches the top bits
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  }

  int blocks_;
  int max_distance_;
  std::array<int, kMaxBlocks + 1> block_start_{};
  std::vector<Table> tables_;
};

/// The cells of every table: FIFO buckets of {24-bit residue, sequence low 32 bits}.
///
/// Fixed-position buckets: every bucket of every table owns a slot at a position
/// computed from its index, in one huge-page-advised array, so a probe waits on
/// one memory read (the slot's first line holds the header and the first
/// residues) instead of a header and then a separately allocated cell array. A
/// slot holds up to slot_cells() cells: about the expected load plus 2.5 standard
/// deviations (reserve() re-sizes the slots as the window grows). A bucket that
/// outgrows its slot spills whole into a malloc'd ring and moves back when it
/// fits the slot with an eighth to spare; with random fingerprints under 1% of
/// buckets are out at a time, and the share does not grow as the window slides.
///
/// Residues are packed in 3 bytes: on this machine a probe is bound by the cache
/// lines it streams, and 24 bits still filter all but ~1.4e-4 of the cells at k=3.
///
/// Cells enter in increasing sequence order, so expired cells (sequence below the
/// window's oldest live one) are always at a bucket's front and are popped from
/// there: O(1) amortized. Not thread-safe. Owns its memory.
class CellTables {
 public:
  /// A slot's header (its first 8 bytes). References stay valid until reserve().
  struct Bucket {
    std::uint16_t head = 0;   // inline ring: front position
    std::uint16_t size = 0;   // inline ring: cells held (0 while spilled)
    std::uint32_t spill = 0;  // 1 + index into the spilled rings, 0 when inline
  };
  static constexpr std::uint32_t kResidueMask = 0xffffff;
  /// Largest slot: buckets beyond it spill (windows above ~100M entries).
  static constexpr std::uint32_t kMaxSlotCells = 2048;

  /// Slots sized for `expected_entries` cells per table. Throws std::bad_alloc.
  explicit CellTables(const PigeonholeLayout& layout, std::size_t expected_entries = 0);
  ~CellTables();
  CellTables(const CellTables&) = delete;
  CellTables& operator=(const CellTables&) = delete;
  CellTables(CellTables&&) noexcept;
  CellTables& operator=(CellTables&&) noexcept;

  /// Cells per slot for a table of 2^bucket_bits buckets holding `entries`.
  static std::uint32_t slot_cells_for(int bucket_bits, std::size_t entries);
  /// Bytes of one slot of `cells` cells (header, packed residues, sequences).
  static std::size_t slot_bytes_for(std::uint32_t cells);

  Bucket& bucket(std::size_t table, std::uint32_t index) {
    return bucket_at(offsets_[table] + index);
  }
  std::size_t bucket_count() const { return buckets_; }
  Bucket& bucket_at(std::size_t flat_index) {
    return *reinterpret_cast<Bucket*>(reinterpret_cast<unsigned char*>(slots_.begin()) +
                                      flat_index * stride_);
  }
  std::uint32_t slot_cells() const { return slot_cells_; }

  /// Grows the slots to fit `expected_entries` per table, if they would grow:
  /// the array grows in place (huge_reallocate) and every cell whose sequence
  /// is live (oldest, live as in pop_expired) moves to its bucket's wider
  /// slot; a spilled bucket keeps its ring unless it now fits the slot with an eighth to spare.
  /// Invalidates Bucket references. O(buckets + cells).
  void reserve(std::size_t expected_entries, std::uint32_t oldest, std::uint32_t live);

  /// Appends a cell (the residue's low 24 bits), spilling the bucket when its slot is full.
  void push(Bucket& b, std::uint32_t residue, std::uint32_t sequence) {
    residue &= kResidueMask;
    if (b.spill != 0) {
      spill_push(spills_[b.spill - 1], residue, sequence);
    } else if (b.size == slot_cells_) {
      spill_out(b);
      spill_push(spills_[b.spill - 1], residue, sequence);
    } else {
      std::uint32_t pos = b.head + b.size;
      if (pos >= slot_cells_) pos -= slot_cells_;
      std::uint8_t* res = residues(b) + 3 * pos;  // little-endian 24 bits
      res[0] = static_cast<std::uint8_t>(residue);
      res[1] = static_cast<std::uint8_t>(residue >> 8);
      res[2] = static_cast<std::uint8_t>(residue >> 16);
      sequences(b)[pos] = sequence;
      ++b.size;
    }
    ++cells_;
  }

  /// Pops front cells whose sequence is not live. Live sequences (low 32 bits)
  /// are oldest, oldest+1, ..., oldest+live-1 (mod 2^32).
  void pop_expired(Bucket& b, std::uint32_t oldest, std::uint32_t live) {
    if (b.spill != 0) {
      spill_pop(b, oldest, live);
      return;
    }
    const std::uint32_t* seq = sequences(b);
    std::uint32_t popped = 0;
    while (b.size != 0 && static_cast<std::uint32_t>(seq[b.head] - oldest) >= live) {
      if (++b.head == slot_cells_) b.head = 0;
      --b.size;
      ++popped;
    }
    if (b.size == 0) b.head = 0;
    cells_ -= popped;
  }

  /// Calls on_hit(sequence) for each cell (front to back, i.e. oldest first)
  /// whose 24-bit residue is within `max_distance` bits of `residue`'s; stops when
  /// it returns true. Returns the number of cells examined.
  template <class OnHit>
  std::uint32_t scan(const Bucket& b, std::uint32_t residue, int max_distance,
                     OnHit&& on_hit) const {
    residue &= kResidueMask;
    std::uint16_t hits[kFilterChunk];
    std::uint32_t examined = 0;
    if (b.spill != 0) {
      const Spill& s = spills_[b.spill - 1];
      const std::uint32_t first = s.cap - s.head < s.size ? s.cap - s.head : s.size;
      const std::uint32_t* res = s.cells;
      const std::uint32_t* seq = s.cells + s.cap;
      for (int segment = 0; segment < 2; ++segment) {  // [head, head+first) then [0, size-first)
        const std::uint32_t begin = segment == 0 ? s.head : 0;
        const std::uint32_t end = segment == 0 ? s.head + first : s.size - first;
        for (std::uint32_t i = begin; i < end; i += kFilterChunk) {
          const std::uint32_t n = end - i < kFilterChunk ? end - i : kFilterChunk;
          const std::uint32_t found = filter_(res + i, n, residue, max_distance, hits);
          for (std::uint32_t h = 0; h < found; ++h) {
            if (on_hit(seq[i + hits[h]])) return examined + hits[h] + 1;
          }
          examined += n;
        }
      }
      return examined;
    }
    const std::uint32_t first = slot_cells_ - b.head < b.size ? slot_cells_ - b.head : b.size;
    const std::uint8_t* res = residues(b);
    const std::uint32_t* seq = sequences(b);
    for (int segment = 0; segment < 2; ++segment) {
      const std::uint32_t begin = segment == 0 ? b.head : 0;
      const std::uint32_t end = segment == 0 ? b.head + first : b.size - first;
      for (std::uint32_t i = begin; i < end; i += kFilterChunk) {
        const std::uint32_t n = end - i < kFilterChunk ? end - i : kFilterChunk;
        const std::uint32_t found = filter24_(res + 3 * i, n, residue, max_distance, hits);
        for (std::uint32_t h = 0; h < found; ++h) {
          if (on_hit(seq[i + hits[h]])) return examined + hits[h] + 1;
        }
        examined += n;
      }
    }
    return examined;
  }

  /// Starts loading a bucket's header and the residues an average bucket holds.
  void prefetch_header(const Bucket& b) const {
    const char* p = reinterpret_cast<const char*>(&b);
    for (std::uint32_t l = 0; l < prefetch_lines_; ++l) __builtin_prefetch(p + 64 * l);
  }
  /// After the header is cached: starts loading the rest of the residues, the
  /// front sequence and the tail slots an insert after the probe will touch.
  void prefetch_cells(const Bucket& b) const {
    if (b.spill != 0) {
      const Spill& s = spills_[b.spill - 1];
      const char* front = reinterpret_cast<const char*>(s.cells + s.head);
      const std::uint32_t lines = (s.size < s.cap - s.head ? s.size : s.cap - s.head) * 4 / 64 + 1;
      for (std::uint32_t l = 0; l < lines && l < 32; ++l) __builtin_prefetch(front + 64 * l);
      __builtin_prefetch(s.cells + s.cap + s.head);
      return;
    }
    const char* p = reinterpret_cast<const char*>(&b);
    const std::uint32_t used = b.head + b.size < slot_cells_ ? b.head + b.size : slot_cells_;
    const std::uint32_t lines = (sizeof(Bucket) + 3 * used) / 64 + 1;
    for (std::uint32_t l = prefetch_lines_; l < lines; ++l) __builtin_prefetch(p + 64 * l);
    std::uint32_t tail = b.head + b.size;
    if (tail >= slot_cells_) tail -= slot_cells_;
    __builtin_prefetch(sequences(b) + b.head);
    __builtin_prefetch(sequences(b) + tail);
  }

  /// After the header is cached: starts loading what an insert touches, the
  /// front sequence (pop_expired) and the tail's residue and sequence (push).
  void prefetch_ends(const Bucket& b) const {
    if (b.spill != 0) {
      const Spill& s = spills_[b.spill - 1];
      __builtin_prefetch(s.cells + s.cap + s.head);
      return;
    }
    std::uint32_t tail = b.head + b.size;
    if (tail >= slot_cells_) tail -= slot_cells_;
    __builtin_prefetch(sequences(b) + b.head);
    __builtin_prefetch(sequences(b) + tail);
    __builtin_prefetch(residues(b) + 3 * tail);
  }

  std::size_t cells() const { return cells_; }
  /// Slots as mapped, spilled rings as the allocator sizes them, and their directory.
  std::size_t bytes() const {
    return slots_.bytes() + spill_bytes_ + spills_.capacity() * sizeof(Spill) +
           free_spills_.capacity() * sizeof(std::uint32_t);
  }

  /// glibc malloc's chunk size for a request: the real cost of an allocation.
  static std::size_t chunk_bytes(std::size_t request) {
    std::size_t chunk = (request + 8 + 15) & ~std::size_t{15};
    return chunk < 32 ? 32 : chunk;
  }

 private:
  struct Spill {  // a malloc'd ring: [residues x cap][sequences x cap]
    std::uint32_t* cells = nullptr;
    std::uint32_t head = 0;
    std::uint32_t size = 0;
    std::uint32_t cap = 0;
  };

  std::uint8_t* residues(Bucket& b) const {
    return reinterpret_cast<std::uint8_t*>(&b) + sizeof(Bucket);
  }
  const std::uint8_t* residues(const Bucket& b) const {
    return reinterpret_cast<const std::uint8_t*>(&b) + sizeof(Bucket);
  }
  std::uint32_t* sequences(Bucket& b) const {
    return reinterpret_cast<std::uint32_t*>(reinterpret_cast<unsigned char*>(&b) +
                                            sequence_offset_);
  }
  const std::uint32_t* sequences(const Bucket& b) const {
    return reinterpret_cast<const std::uint32_t*>(reinterpret_cast<const unsigned char*>(&b) +
                                                  sequence_offset_);
  }

  void layout_slots(std::size_t expected_entries);
  int fewest_bucket_bits() const;
  // Sets slot_cells_, stride_, sequence_offset_ and prefetch_lines_ for
  // slots of `cells` cells in a window of `expected_entries`.
  void shape_slots(std::uint32_t cells, std::size_t expected_entries);
  void spill_out(Bucket& b);
  void spill_push(Spill& s, std::uint32_t residue, std::uint32_t sequence) {
    if (s.size == s.cap) resize(s, s.cap + spill_step(s.cap));
    std::uint32_t pos = s.head + s.size;
    if (pos >= s.cap) pos -= s.cap;
    s.cells[pos] = residue;
    s.cells[s.cap + pos] = sequence;
    ++s.size;
  }
  void spill_pop(Bucket& b, std::uint32_t oldest, std::uint32_t live);
  static std::uint32_t spill_step(std::uint32_t cap) { return cap / 16 > 4 ? cap / 16 : 4; }
  // Cells a spilled ring must be below the slot's size to move back.
  std::uint32_t slot_margin() const { return slot_cells_ / 8 > 1 ? slot_cells_ / 8 : 1; }
  void resize(Spill& s, std::uint32_t cap);
  void release(Spill& s);
  void free_all_spills();

  static constexpr std::uint32_t kFilterChunk = 256;
  // Write the indices i < n (n <= kFilterChunk) with popcount(res[i] ^ residue) <= k
  // to hits; return how many. filter24_ reads packed 3-byte residues (and may read
  // one byte past the last). Each runs the active variant's kernel (dedup/kernels/kernels.h).
  static std::uint32_t filter_(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue,
                               int k, std::uint16_t* hits);
  static std::uint32_t filter24_(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                                 int k, std::uint16_t* hits);

  const PigeonholeLayout* layout_;
  HugeArray<std::uint64_t> slots_;
  std::vector<std::size_t> offsets_;
  std::size_t buckets_ = 0;
  std::size_t stride_ = 0;           // bytes per slot, a multiple of 8
  std::size_t sequence_offset_ = 0;  // bytes from a slot's start to its sequences
  std::uint32_t slot_cells_ = 0;
  std::uint32_t prefetch_lines_ = 1;
  std::vector<Spill> spills_;
  std::vector<std::uint32_t> free_spills_;
  std::size_t cells_ = 0;
  std::size_t spill_bytes_ = 0;
};

}  // namespace neardup::dedup
