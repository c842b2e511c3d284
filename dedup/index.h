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
// A table's bucket is a FIFO ring of 8-byte cells {32-bit residue, 32 low bits
// of the entry's insertion sequence}, stored as two parallel arrays so a probe
// streams only the residues. The residue holds fingerprint bits from OUTSIDE
// the table's key (padded with key bits when fewer than 32 remain): any subset
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
/// roughly halved probe+insert time at 10M entries. Zero-filled. Throws
/// std::bad_alloc. Thread-compatible.
void* huge_allocate(std::size_t bytes);
void huge_free(void* memory, std::size_t bytes) noexcept;

/// A fixed-size, zero-initialized array of an implicit-lifetime type (all-zero
/// bytes must be a valid value) in huge_allocate memory. Move-only.
template <class T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(std::size_t size) : data_(static_cast<T*>(huge_allocate(size * sizeof(T)))), size_(size) {}
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
  /// into 2^(floor(log2 capacity) - 3) buckets (about 8-16 cells per bucket).
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
  static std::uint64_t mix(std::uint64_t x) {  // a 64-bit finalizer: every input bit reaches the top bits
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

/// The cells of every table: FIFO buckets of {residue, sequence low 32 bits}.
/// Cells enter in increasing sequence order, so expired cells (sequence below
/// the window's oldest live one) are always at a bucket's front and are popped
/// from there: O(1) amortized. Not thread-safe. Owns its bucket memory.
class CellTables {
 public:
  struct Bucket {
    std::uint32_t* cells = nullptr;  // [residues x cap][sequences x cap]
    std::uint32_t head = 0;
    std::uint32_t size = 0;
    std::uint32_t cap = 0;
  };

  explicit CellTables(const PigeonholeLayout& layout);
  ~CellTables();
  CellTables(const CellTables&) = delete;
  CellTables& operator=(const CellTables&) = delete;
  CellTables(CellTables&&) noexcept;
  CellTables& operator=(CellTables&&) noexcept;

  Bucket& bucket(std::size_t table, std::uint32_t index) { return buckets_[offsets_[table] + index]; }
  std::size_t bucket_count() const { return buckets_.size(); }
  Bucket& bucket_at(std::size_t flat_index) { return buckets_[flat_index]; }

  /// Appends a cell, growing the bucket by ~1/16 when it is full.
  void push(Bucket& b, std::uint32_t residue, std::uint32_t sequence) {
    if (b.size == b.cap) resize(b, grown(b.cap));
    std::uint32_t pos = b.head + b.size;
    if (pos >= b.cap) pos -= b.cap;
    b.cells[pos] = residue;
    b.cells[b.cap + pos] = sequence;
    ++b.size;
    ++cells_;
  }

  /// Pops front cells whose sequence is not live. Live sequences (low 32 bits)
  /// are oldest, oldest+1, ..., oldest+live-1 (mod 2^32). Shrinks a bucket that
  /// has become much smaller than its capacity.
  void pop_expired(Bucket& b, std::uint32_t oldest, std::uint32_t live) {
    const std::uint32_t before = b.size;
    while (b.size != 0 && static_cast<std::uint32_t>(b.cells[b.cap + b.head] - oldest) >= live) {
      if (++b.head == b.cap) b.head = 0;
      --b.size;
    }
    if (b.size != before) {
      cells_ -= before - b.size;
      if (b.size == 0) {
        release(b);
      } else if (b.cap - b.size > 3 * step(b.cap)) {
        resize(b, b.size + step(b.size));
      }
    }
  }

  /// Calls on_hit(sequence) for each cell (front to back, i.e. oldest first)
  /// whose residue is within `max_distance` bits of `residue`; stops when it
  /// returns true. Returns the number of cells examined.
  template <class OnHit>
  std::uint32_t scan(const Bucket& b, std::uint32_t residue, int max_distance, OnHit&& on_hit) const {
    const std::uint32_t first = b.cap - b.head < b.size ? b.cap - b.head : b.size;
    const std::uint32_t* res = b.cells;
    const std::uint32_t* seq = b.cells + b.cap;
    std::uint16_t hits[kFilterChunk];
    // Two segments of the ring: [head, head+first) then [0, size-first).
    std::uint32_t examined = 0;
    for (int segment = 0; segment < 2; ++segment) {
      const std::uint32_t begin = segment == 0 ? b.head : 0;
      const std::uint32_t end = segment == 0 ? b.head + first : b.size - first;
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

  /// Starts loading a bucket's header (before bucket() is read).
  static void prefetch_header(const Bucket& b) { __builtin_prefetch(&b); }
  /// Starts loading the residues a scan will read, and the front sequence and
  /// the tail slots an insert after the probe will touch.
  static void prefetch_cells(const Bucket& b) {
    if (b.size == 0) return;
    const char* front = reinterpret_cast<const char*>(b.cells + b.head);
    const std::uint32_t first = b.cap - b.head < b.size ? b.cap - b.head : b.size;
    const std::uint32_t lines = first * 4 / 64 + 1;
    for (std::uint32_t l = 0; l < lines && l < 32; ++l) __builtin_prefetch(front + 64 * l);
    std::uint32_t tail = b.head + b.size;
    if (tail >= b.cap) tail -= b.cap;
    __builtin_prefetch(b.cells + b.cap + b.head);
    __builtin_prefetch(b.cells + tail);
    __builtin_prefetch(b.cells + b.cap + tail);
  }

  /// The filter in use: "avx512" (vpopcntdq), "popcnt" or "portable".
  static const char* filter_name();

  std::size_t cells() const { return cells_; }
  /// Bucket headers plus every cell allocation as the allocator sizes it.
  std::size_t bytes() const { return buckets_.bytes() + allocated_bytes_; }

  /// glibc malloc's chunk size for a request: the real cost of an allocation.
  static std::size_t chunk_bytes(std::size_t request) {
    std::size_t chunk = (request + 8 + 15) & ~std::size_t{15};
    return chunk < 32 ? 32 : chunk;
  }

 private:
  static std::uint32_t step(std::uint32_t cap) { return cap / 16 > 4 ? cap / 16 : 4; }
  static std::uint32_t grown(std::uint32_t cap) { return cap + step(cap); }
  void resize(Bucket& b, std::uint32_t cap);
  void release(Bucket& b);

  static constexpr std::uint32_t kFilterChunk = 256;
  // Writes the indices i < n (n <= kFilterChunk) with popcount(res[i] ^ residue) <= k
  // to hits; returns how many. The implementation is picked once for the CPU
  // (AVX-512 VPOPCNTDQ, POPCNT, portable SWAR).
  static std::uint32_t filter_(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                               std::uint16_t* hits);

  HugeArray<Bucket> buckets_;
  std::vector<std::size_t> offsets_;
  std::size_t cells_ = 0;
  std::size_t allocated_bytes_ = 0;
};

}  // namespace neardup::dedup
