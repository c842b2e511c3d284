#include "dedup/index.h"

#include <cstdlib>
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

}  // namespace

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
  buckets_.resize(total);
}

CellTables::~CellTables() {
  for (Bucket& b : buckets_) std::free(b.cells);
}

CellTables::CellTables(CellTables&& other) noexcept
    : buckets_(std::move(other.buckets_)),
      offsets_(std::move(other.offsets_)),
      cells_(std::exchange(other.cells_, 0)),
      allocated_bytes_(std::exchange(other.allocated_bytes_, 0)) {
  other.buckets_.clear();
}

CellTables& CellTables::operator=(CellTables&& other) noexcept {
  if (this != &other) {
    for (Bucket& b : buckets_) std::free(b.cells);
    buckets_ = std::move(other.buckets_);
    offsets_ = std::move(other.offsets_);
    cells_ = std::exchange(other.cells_, 0);
    allocated_bytes_ = std::exchange(other.allocated_bytes_, 0);
    other.buckets_.clear();
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
