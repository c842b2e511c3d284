#include "dedup/index.h"

#include <cstdlib>
#include <immintrin.h>
#include <sys/mman.h>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace neardup::dedup {

namespace {

// Appends the contiguous runs of set bits of `mask` (low to high) to `runs`,
// packing them from bit `dest` up, but no further than bit 32 when `limit32`.
template <class Run, std::size_t N>
void add_runs(std::uint64_t mask, std::array<Run, N>& runs, std::uint8_t& count, int& dest, bool limit32) {
  int bit = 0;
  while (bit < 64) {
    if (((mask >> bit) & 1) == 0) {
      ++bit;
      continue;
    }
    int end = bit;
    while (end < 64 && ((mask >> end) & 1) != 0) ++end;
    int width = end - bit;
    if (limit32 && width > 32 - dest) width = 32 - dest;
    if (width <= 0) return;
    runs[count].shift = static_cast<std::uint8_t>(bit);
    runs[count].dest = static_cast<std::uint8_t>(dest);
    runs[count].mask = width == 64 ? ~0ULL : (1ULL << width) - 1;
    ++count;
    dest += width;
    bit = end;
  }
}

std::uint32_t filter_portable(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                              std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t x = res[i] ^ residue;  // SWAR popcount: no libgcc call on a baseline x86-64 build
    x -= (x >> 1) & 0x55555555U;
    x = (x & 0x33333333U) + ((x >> 2) & 0x33333333U);
    x = (((x + (x >> 4)) & 0x0f0f0f0fU) * 0x01010101U) >> 24;
    hits[count] = static_cast<std::uint16_t>(i);
    count += static_cast<int>(x) <= k;
  }
  return count;
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) std::uint32_t filter_popcnt(const std::uint32_t* res, std::uint32_t n,
                                                              std::uint32_t residue, int k, std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    hits[count] = static_cast<std::uint16_t>(i);
    count += __builtin_popcount(res[i] ^ residue) <= k;
  }
  return count;
}

__attribute__((target("avx512f,avx512vpopcntdq"))) std::uint32_t filter_avx512(const std::uint32_t* res,
                                                                               std::uint32_t n,
                                                                               std::uint32_t residue, int k,
                                                                               std::uint16_t* hits) {
  const __m512i r = _mm512_set1_epi32(static_cast<int>(residue));
  const __m512i limit = _mm512_set1_epi32(k);
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1U << (n - i)) - 1);
    const __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi32(lanes, res + i), r);
    unsigned mask = _mm512_mask_cmple_epu32_mask(lanes, _mm512_popcnt_epi32(x), limit);
    while (mask != 0) {
      hits[count++] = static_cast<std::uint16_t>(i + static_cast<std::uint32_t>(std::countr_zero(mask)));
      mask &= mask - 1;
    }
  }
  return count;
}
#endif

using FilterFn = std::uint32_t (*)(const std::uint32_t*, std::uint32_t, std::uint32_t, int, std::uint16_t*);

FilterFn pick_filter() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq")) return &filter_avx512;
  if (__builtin_cpu_supports("popcnt")) return &filter_popcnt;
#endif
  return &filter_portable;
}

// A function-local static: safe to use from other translation units' static initializers.
FilterFn chosen_filter() {
  static const FilterFn filter = pick_filter();
  return filter;
}

}  // namespace

std::uint32_t CellTables::filter_(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                                  std::uint16_t* hits) {
  return chosen_filter()(res, n, residue, k, hits);
}

const char* CellTables::filter_name() {
#if defined(__x86_64__)
  if (chosen_filter() == &filter_avx512) return "avx512";
  if (chosen_filter() == &filter_popcnt) return "popcnt";
#endif
  return "portable";
}

namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}  // namespace

std::size_t huge_mapped_bytes(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

void* huge_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* memory = mmap(nullptr, huge_mapped_bytes(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (bytes >= kHugePage) madvise(memory, huge_mapped_bytes(bytes), MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  return memory;
}

void huge_free(void* memory, std::size_t bytes) noexcept {
  if (memory != nullptr) munmap(memory, huge_mapped_bytes(bytes));
}

bool PigeonholeLayout::supported(int blocks, int max_distance) {
  return max_distance >= 0 && max_distance <= kMaxDistance && blocks >= max_distance + 1 && blocks <= kMaxBlocks;
}

int PigeonholeLayout::default_blocks(int max_distance) {
  return max_distance <= 3 ? max_distance + 1 : max_distance + 2;
}

int PigeonholeLayout::bucket_bits_for(int key_bits, std::size_t capacity) {
  int cap_bits = std::bit_width(capacity < 2 ? std::size_t{2} : capacity) - 1 - 3;  // floor(log2) - 3
  if (cap_bits < 4) cap_bits = 4;
  if (cap_bits > 30) cap_bits = 30;
  return key_bits <= cap_bits ? key_bits : cap_bits;
}

PigeonholeLayout::PigeonholeLayout(int blocks, int max_distance, std::size_t capacity)
    : blocks_(blocks == 0 ? default_blocks(max_distance) : blocks), max_distance_(max_distance) {
  if (!supported(blocks_, max_distance_)) {
    throw std::invalid_argument("unsupported index layout: blocks " + std::to_string(blocks_) + " with max_distance " +
                                std::to_string(max_distance_) + " (need 0 <= max_distance <= 8 and max_distance+1 <= blocks <= 16)");
  }
  // Near-equal blocks: the first 64 % m blocks are one bit wider.
  int start = 0;
  for (int b = 0; b < blocks_; ++b) {
    block_start_[b] = start;
    start += 64 / blocks_ + (b < 64 % blocks_ ? 1 : 0);
  }
  block_start_[blocks_] = 64;

  const int key_blocks = blocks_ - max_distance_;
  const std::uint32_t all = (1U << blocks_) - 1;
  for (std::uint32_t combo = 0; combo <= all; ++combo) {  // increasing order: deterministic table numbering
    if (std::popcount(combo) != key_blocks) continue;
    Table t;
    for (int b = 0; b < blocks_; ++b) {
      if ((combo >> b) & 1) {
        int w = block_width(b);
        t.key_mask |= (w == 64 ? ~0ULL : ((1ULL << w) - 1)) << block_start_[b];
      }
    }
    const int key_bits = std::popcount(t.key_mask);
    t.bucket_bits = bucket_bits_for(key_bits, capacity);
    t.hashed = t.bucket_bits < key_bits;
    int dest = 0;
    add_runs(t.key_mask, t.key_runs, t.key_run_count, dest, false);
    dest = 0;
    add_runs(~t.key_mask, t.residue_runs, t.residue_run_count, dest, true);
    if (dest < 32) add_runs(t.key_mask, t.residue_runs, t.residue_run_count, dest, true);
    tables_.push_back(t);
  }
}

CellTables::CellTables(const PigeonholeLayout& layout) {
  std::size_t total = 0;
  offsets_.reserve(layout.tables());
  for (std::size_t t = 0; t < layout.tables(); ++t) {
    offsets_.push_back(total);
    total += std::size_t{1} << layout.bucket_bits(t);
  }
  buckets_ = HugeArray<Bucket>(total);
}

CellTables::~CellTables() {
  for (Bucket& b : buckets_) std::free(b.cells);
}

CellTables::CellTables(CellTables&& other) noexcept
    : buckets_(std::move(other.buckets_)),
      offsets_(std::move(other.offsets_)),
      cells_(std::exchange(other.cells_, 0)),
      allocated_bytes_(std::exchange(other.allocated_bytes_, 0)) {
}

CellTables& CellTables::operator=(CellTables&& other) noexcept {
  if (this != &other) {
    for (Bucket& b : buckets_) std::free(b.cells);
    buckets_ = std::move(other.buckets_);
    offsets_ = std::move(other.offsets_);
    cells_ = std::exchange(other.cells_, 0);
    allocated_bytes_ = std::exchange(other.allocated_bytes_, 0);
  }
  return *this;
}

void CellTables::resize(Bucket& b, std::uint32_t cap) {
  auto* cells = static_cast<std::uint32_t*>(std::malloc(std::size_t{cap} * 2 * sizeof(std::uint32_t)));
  if (cells == nullptr) throw std::bad_alloc();
  // Unwrap the ring into the new arrays: front at 0.
  const std::uint32_t first = b.cap - b.head < b.size ? b.cap - b.head : b.size;
  if (b.size != 0) {
    std::memcpy(cells, b.cells + b.head, first * sizeof(std::uint32_t));
    std::memcpy(cells + first, b.cells, (b.size - first) * sizeof(std::uint32_t));
    std::memcpy(cells + cap, b.cells + b.cap + b.head, first * sizeof(std::uint32_t));
    std::memcpy(cells + cap + first, b.cells + b.cap, (b.size - first) * sizeof(std::uint32_t));
  }
  release(b);
  b.cells = cells;
  b.cap = cap;
  allocated_bytes_ += chunk_bytes(std::size_t{cap} * 2 * sizeof(std::uint32_t));
}

void CellTables::release(Bucket& b) {
  if (b.cells != nullptr) {
    allocated_bytes_ -= chunk_bytes(std::size_t{b.cap} * 2 * sizeof(std::uint32_t));
    std::free(b.cells);
  }
  b.cells = nullptr;
  b.cap = 0;
  b.head = 0;
}

}  // namespace neardup::dedup
