#include "dedup/index/index.h"

#include <sys/mman.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "dedup/kernels/kernels.h"

namespace neardup::dedup {

namespace {

// Appends the contiguous runs of set bits of `mask` (low to high) to `runs`,
// packing them from bit `dest` up, but no further than bit 32 when `limit32`.
template <class Run, std::size_t N>
void add_runs(std::uint64_t mask, std::array<Run, N>& runs, std::uint8_t& count, int& dest,
              bool limit32) {
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

std::uint32_t CellTables::filter_(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue,
                                  int k, std::uint16_t* hits) {
  return kernels::active().filter(res, n, residue, k, hits);
}

std::uint32_t CellTables::filter24_(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                                    int k, std::uint16_t* hits) {
  return kernels::active().filter24(res, n, residue, k, hits);
}

namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}  // namespace

std::size_t huge_mapped_bytes(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

namespace {

// `bytes` (a multiple of kPage) of address space starting on a 2 MiB
// boundary, mapped PROT_NONE: a reservation with no memory behind it. A huge
// page needs an aligned 2 MiB of address space, and mmap and mremap's moves
// align nothing: a window's ring, grown by moves, had a third of its pages
// split to 4 KiB (149 of 234 MB huge at 10M entries).
void* reserve_aligned(std::size_t bytes) {
  const std::size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  if (start + span > aligned + bytes)
    munmap(reinterpret_cast<void*>(aligned + bytes), start + span - (aligned + bytes));
  return reinterpret_cast<void*>(aligned);
}

void advise_huge(void* memory, std::size_t mapped) {
#ifdef MADV_HUGEPAGE
  madvise(memory, mapped, MADV_HUGEPAGE);  // a hint: failure is harmless
#else
  (void)memory;
  (void)mapped;
#endif
}

}  // namespace

void* huge_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t mapped = huge_mapped_bytes(bytes);
  void* want = bytes >= kHugePage ? reserve_aligned(mapped) : nullptr;
  void* memory = mmap(want, mapped, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | (want != nullptr ? MAP_FIXED : 0), -1, 0);
  if (memory == MAP_FAILED) {
    if (want != nullptr) munmap(want, mapped);
    throw std::bad_alloc();
  }
  if (bytes >= kHugePage) advise_huge(memory, mapped);
  return memory;
}

void* huge_reallocate(void* memory, std::size_t old_bytes, std::size_t new_bytes) {
  if (memory == nullptr) return huge_allocate(new_bytes);
  const std::size_t old_mapped = huge_mapped_bytes(old_bytes);
  const std::size_t new_mapped = huge_mapped_bytes(new_bytes);
  if (new_mapped <= old_mapped) return memory;
  if (new_bytes < kHugePage) {
    void* moved = mremap(memory, old_mapped, new_mapped, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) throw std::bad_alloc();
    return moved;
  }
  // In place when the address space after it is free; else to a 2 MiB
  // boundary, where the huge pages already touched move whole.
  void* grown = reinterpret_cast<std::uintptr_t>(memory) % kHugePage == 0
                    ? mremap(memory, old_mapped, new_mapped, 0)
                    : MAP_FAILED;
  if (grown == MAP_FAILED) {
    void* target = reserve_aligned(new_mapped);
    grown = mremap(memory, old_mapped, new_mapped, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    if (grown == MAP_FAILED) {
      munmap(target, new_mapped);
      throw std::bad_alloc();
    }
  }
  advise_huge(grown, new_mapped);
  return grown;
}

void huge_free(void* memory, std::size_t bytes) noexcept {
  if (memory != nullptr) munmap(memory, huge_mapped_bytes(bytes));
}

bool PigeonholeLayout::supported(int blocks, int max_distance) {
  return max_distance >= 0 && max_distance <= kMaxDistance && blocks >= max_distance + 1 &&
         blocks <= kMaxBlocks;
}

int PigeonholeLayout::default_blocks(int max_distance) {
  return max_distance <= 3 ? max_distance + 1 : max_distance + 2;
}

int PigeonholeLayout::bucket_bits_for(int key_bits, std::size_t capacity) {
  // 8 to 16 entries a bucket on average; 16 to 32 in a window under 2^18
  // entries, whose cells stay in cache: a few more filter steps a probe for a
  // fifth less memory, where a bound in bytes (window.max_memory) holds
  // more entries.
  const int load_bits = capacity < (std::size_t{1} << 18) ? 4 : 3;
  int cap_bits = std::bit_width(capacity < 2 ? std::size_t{2} : capacity) - 1 - load_bits;
  if (cap_bits < 4) cap_bits = 4;
  if (cap_bits > 30) cap_bits = 30;
  return key_bits <= cap_bits ? key_bits : cap_bits;
}

PigeonholeLayout::PigeonholeLayout(int blocks, int max_distance, std::size_t capacity)
    : blocks_(blocks == 0 ? default_blocks(max_distance) : blocks), max_distance_(max_distance) {
  if (!supported(blocks_, max_distance_)) {
    throw std::invalid_argument(
        "unsupported index layout: blocks " + std::to_string(blocks_) + " with max_distance " +
        std::to_string(max_distance_) +
        " (need 0 <= max_distance <= 8 and max_distance+1 <= blocks <= 16)");
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
  for (std::uint32_t combo = 0; combo <= all;
       ++combo) {  // increasing order: deterministic table numbering
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

std::uint32_t CellTables::slot_cells_for(int bucket_bits, std::size_t entries) {
  // The expected load plus 2.5 standard deviations (Poisson): ~1% of buckets spill.
  const double mean = std::ldexp(static_cast<double>(entries), -bucket_bits);
  const double cells = std::ceil(mean + 2.5 * std::sqrt(mean)) + 1;
  if (cells < 4) return 4;
  if (cells > kMaxSlotCells) return kMaxSlotCells;
  return static_cast<std::uint32_t>(cells);
}

std::size_t CellTables::slot_bytes_for(std::uint32_t cells) {
  // header, residues (+1 byte: scalar filters may read 4 bytes at the last), sequences
  const std::size_t residues = (3 * std::size_t{cells} + 1 + 3) & ~std::size_t{3};
  return (sizeof(Bucket) + residues + 4 * std::size_t{cells} + 7) & ~std::size_t{7};
}

CellTables::CellTables(const PigeonholeLayout& layout, std::size_t expected_entries)
    : layout_(&layout) {
  offsets_.reserve(layout.tables());
  for (std::size_t t = 0; t < layout.tables(); ++t) {
    offsets_.push_back(buckets_);
    buckets_ += std::size_t{1} << layout.bucket_bits(t);
  }
  layout_slots(expected_entries);
}

int CellTables::fewest_bucket_bits() const {
  // One slot size for all tables: the one with the fewest buckets (the most cells each) decides.
  int fewest_bits = 64;
  for (std::size_t t = 0; t < layout_->tables(); ++t)
    fewest_bits = std::min(fewest_bits, layout_->bucket_bits(t));
  return fewest_bits;
}

void CellTables::shape_slots(std::uint32_t cells, std::size_t expected_entries) {
  slot_cells_ = cells;
  stride_ = slot_bytes_for(cells);
  sequence_offset_ = sizeof(Bucket) + ((3 * std::size_t{cells} + 1 + 3) & ~std::size_t{3});
  const double mean = std::ldexp(static_cast<double>(expected_entries), -fewest_bucket_bits());
  prefetch_lines_ =
      static_cast<std::uint32_t>(std::min(16.0, (sizeof(Bucket) + 3 * mean) / 64 + 1));
}

void CellTables::layout_slots(std::size_t expected_entries) {
  shape_slots(slot_cells_for(fewest_bucket_bits(), expected_entries), expected_entries);
  slots_ = HugeArray<std::uint64_t>(buckets_ * stride_ / sizeof(std::uint64_t));
}

CellTables::~CellTables() { free_all_spills(); }

CellTables::CellTables(CellTables&& other) noexcept
    : layout_(other.layout_),
      slots_(std::move(other.slots_)),
      offsets_(std::move(other.offsets_)),
      buckets_(std::exchange(other.buckets_, 0)),
      stride_(other.stride_),
      sequence_offset_(other.sequence_offset_),
      slot_cells_(other.slot_cells_),
      prefetch_lines_(other.prefetch_lines_),
      spills_(std::move(other.spills_)),
      free_spills_(std::move(other.free_spills_)),
      cells_(std::exchange(other.cells_, 0)),
      spill_bytes_(std::exchange(other.spill_bytes_, 0)) {
  other.spills_.clear();
}

CellTables& CellTables::operator=(CellTables&& other) noexcept {
  if (this != &other) {
    free_all_spills();
    layout_ = other.layout_;
    slots_ = std::move(other.slots_);
    offsets_ = std::move(other.offsets_);
    buckets_ = std::exchange(other.buckets_, 0);
    stride_ = other.stride_;
    sequence_offset_ = other.sequence_offset_;
    slot_cells_ = other.slot_cells_;
    prefetch_lines_ = other.prefetch_lines_;
    spills_ = std::move(other.spills_);
    other.spills_.clear();
    free_spills_ = std::move(other.free_spills_);
    cells_ = std::exchange(other.cells_, 0);
    spill_bytes_ = std::exchange(other.spill_bytes_, 0);
  }
  return *this;
}

void CellTables::free_all_spills() {
  for (Spill& s : spills_) std::free(s.cells);
  spills_.clear();
  free_spills_.clear();
  spill_bytes_ = 0;
}

void CellTables::reserve(std::size_t expected_entries, std::uint32_t oldest, std::uint32_t live) {
  const std::uint32_t cells = slot_cells_for(fewest_bucket_bits(), expected_entries);
  if (cells <= slot_cells_) return;
  // In place: the array grows (mremap: the pages touched so far stay), then
  // every bucket moves to its wider slot, last first, so a slot is written
  // only where no unmoved bucket lies (slot i starts at i * stride, at or
  // after its old start, and past the end of every old slot below i). A new
  // array would fault in and zero every page again at each growth.
  const std::size_t old_stride = stride_;
  const std::size_t old_sequence_offset = sequence_offset_;
  const std::uint32_t old_cells = slot_cells_;
  const std::size_t stride = slot_bytes_for(cells);
  slots_.grow(buckets_ * stride / sizeof(std::uint64_t));  // first: a failure changes nothing
  shape_slots(cells, expected_entries);

  std::vector<std::uint32_t> residues_kept(old_cells);
  std::vector<std::uint32_t> sequences_kept(old_cells);
  auto* base = reinterpret_cast<unsigned char*>(slots_.begin());
  std::size_t dropped = 0;
  for (std::size_t i = buckets_; i-- > 0;) {
    const unsigned char* from = base + i * old_stride;
    Bucket header;
    std::memcpy(&header, from, sizeof header);
    unsigned char* to = base + i * stride;
    if (header.spill != 0) {  // its live cells stay in their ring, or fit the slot again
      const Bucket moved{0, 0, header.spill};
      std::memcpy(to, &moved, sizeof moved);
      spill_pop(*reinterpret_cast<Bucket*>(to), oldest, live);
      continue;
    }
    const std::uint8_t* res = from + sizeof(Bucket);
    std::uint32_t n = 0;
    for (std::uint32_t j = 0, pos = header.head; j < header.size;
         ++j, pos = pos + 1 == old_cells ? 0 : pos + 1) {
      std::uint32_t sequence;
      std::memcpy(&sequence, from + old_sequence_offset + 4 * std::size_t{pos}, 4);
      if (static_cast<std::uint32_t>(sequence - oldest) >= live) {
        ++dropped;
        continue;
      }
      residues_kept[n] = kernels::residue24(res + 3 * pos);
      sequences_kept[n] = sequence;
      ++n;
    }
    const Bucket moved{0, static_cast<std::uint16_t>(n), 0};
    std::memcpy(to, &moved, sizeof moved);
    std::uint8_t* out = to + sizeof(Bucket);
    for (std::uint32_t j = 0; j < n; ++j) {
      out[3 * j] = static_cast<std::uint8_t>(residues_kept[j]);
      out[3 * j + 1] = static_cast<std::uint8_t>(residues_kept[j] >> 8);
      out[3 * j + 2] = static_cast<std::uint8_t>(residues_kept[j] >> 16);
    }
    std::memcpy(to + sequence_offset_, sequences_kept.data(), 4 * std::size_t{n});
  }
  cells_ -= dropped;
}

void CellTables::spill_out(Bucket& b) {
  std::uint32_t index;
  if (!free_spills_.empty()) {
    index = free_spills_.back();
    free_spills_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(spills_.size());
    spills_.emplace_back();
  }
  Spill& s = spills_[index];
  resize(s, slot_cells_ + spill_step(slot_cells_));
  const std::uint8_t* res = residues(b);
  const std::uint32_t* seq = sequences(b);
  for (std::uint32_t j = 0, pos = b.head; j < b.size;
       ++j, pos = pos + 1 == slot_cells_ ? 0 : pos + 1) {
    s.cells[j] = kernels::residue24(res + 3 * pos);
    s.cells[s.cap + j] = seq[pos];
  }
  s.head = 0;
  s.size = b.size;
  b.head = 0;
  b.size = 0;
  b.spill = index + 1;
}

void CellTables::spill_pop(Bucket& b, std::uint32_t oldest, std::uint32_t live) {
  Spill& s = spills_[b.spill - 1];
  const std::uint32_t before = s.size;
  while (s.size != 0 && static_cast<std::uint32_t>(s.cells[s.cap + s.head] - oldest) >= live) {
    if (++s.head == s.cap) s.head = 0;
    --s.size;
  }
  if (s.size == before) return;
  cells_ -= before - s.size;
  // Back into the slot (front at 0) once it fits with an eighth of the slot
  // to spare. Waiting for half the slot would keep a bucket out for good when
  // its expected load is above half (a full 10M window: 153 cells a bucket in
  // slots of 185), so spills would pile up as the window slides.
  if (s.size + slot_margin() <= slot_cells_) {
    std::uint8_t* res = residues(b);
    std::uint32_t* seq = sequences(b);
    for (std::uint32_t j = 0, pos = s.head; j < s.size; ++j, pos = pos + 1 == s.cap ? 0 : pos + 1) {
      const std::uint32_t r = s.cells[pos];
      res[3 * j] = static_cast<std::uint8_t>(r);
      res[3 * j + 1] = static_cast<std::uint8_t>(r >> 8);
      res[3 * j + 2] = static_cast<std::uint8_t>(r >> 16);
      seq[j] = s.cells[s.cap + pos];
    }
    b.head = 0;
    b.size = static_cast<std::uint16_t>(s.size);
    release(s);
    free_spills_.push_back(b.spill - 1);
    b.spill = 0;
  } else if (s.cap - s.size > 3 * spill_step(s.cap)) {
    resize(s, s.size + spill_step(s.size));
  }
}

void CellTables::resize(Spill& s, std::uint32_t cap) {
  auto* cells =
      static_cast<std::uint32_t*>(std::malloc(std::size_t{cap} * 2 * sizeof(std::uint32_t)));
  if (cells == nullptr) throw std::bad_alloc();
  // Unwrap the ring into the new arrays: front at 0.
  const std::uint32_t first = s.cap - s.head < s.size ? s.cap - s.head : s.size;
  if (s.size != 0) {
    std::memcpy(cells, s.cells + s.head, first * sizeof(std::uint32_t));
    std::memcpy(cells + first, s.cells, (s.size - first) * sizeof(std::uint32_t));
    std::memcpy(cells + cap, s.cells + s.cap + s.head, first * sizeof(std::uint32_t));
    std::memcpy(cells + cap + first, s.cells + s.cap, (s.size - first) * sizeof(std::uint32_t));
  }
  const std::uint32_t size = s.size;
  release(s);
  s.cells = cells;
  s.cap = cap;
  s.size = size;
  spill_bytes_ += chunk_bytes(std::size_t{cap} * 2 * sizeof(std::uint32_t));
}

void CellTables::release(Spill& s) {
  if (s.cells != nullptr) {
    spill_bytes_ -= chunk_bytes(std::size_t{s.cap} * 2 * sizeof(std::uint32_t));
    std::free(s.cells);
  }
  s = Spill{};
}

}  // namespace neardup::dedup
