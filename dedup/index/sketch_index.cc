#include "dedup/index/sketch_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace neardup::dedup {
namespace {

constexpr std::size_t kMaxEntries = std::size_t{1} << 30;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr int kGrowthSteps = 4;          // the heads start at 1/16 of their full size
constexpr int kMinHeadBits = 10;         // 1024 buckets per band at least
constexpr std::size_t kLoadToGrow = 2;   // double when live entries > 2 x buckets per band
constexpr std::size_t kSplitLanes = 16;  // chains split side by side when growing

std::size_t words_for_bits(std::size_t bits) { return (bits + 63) / 64; }

}  // namespace

// Anonymous mappings are zero pages until written, so ring slots not reached
// yet cost address space only (hence MAP_NORESERVE: the rings are mapped for
// max_entries from the start). The bucket heads are populated at once
// (`populate`): probes read them before inserts write them.
SketchIndex::Block::Block(std::size_t bytes, bool huge, bool populate)
    : bytes_(std::max<std::size_t>(bytes, 1)) {
  data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
               -1, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw std::bad_alloc();
  }
#ifdef MADV_HUGEPAGE
  if (huge && bytes_ >= kHugePage)
    madvise(data_, bytes_, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  if (populate) {
#ifdef MADV_POPULATE_WRITE
    if (madvise(data_, bytes_, MADV_POPULATE_WRITE) == 0) return;
    // Only a kernel before 5.14 (EINVAL) gets the pages written by hand; on
    // ENOMEM (a memory limit) they fault in on first use, as without populate.
    if (errno != EINVAL) return;
#endif
    std::memset(data_, 0, bytes_);
  }
}

SketchIndex::Block::~Block() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

SketchIndex::Block& SketchIndex::Block::operator=(Block&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, bytes_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

SketchIndex::SketchIndex(const SketchOptions& options, std::size_t max_entries)
    : bands_(options.bands), max_entries_(max_entries) {
  validate(options);
  if (max_entries > kMaxEntries)
    throw std::invalid_argument("sketch index: max_entries above 2^30");
  const auto bands = static_cast<std::size_t>(std::max(bands_, 0));
  // The ring is written in sequence order, so mapping it whole costs only
  // the pages reached so far, and it never moves (no copy as the window grows).
  capacity_ = std::max<std::size_t>(1, max_entries_);
  sketch_offset_ = bands * sizeof(std::uint32_t);
  slot_bytes_ = sketch_offset_ + sizeof(Sketch);
  slots_ = Block(capacity_ * slot_bytes_, true);
  has_sketch_ = Block(words_for_bits(capacity_) * sizeof(std::uint64_t), true);
  offset_bits_ = std::bit_width(capacity_);  // <= 31: max_entries <= 2^30
  offset_mask_ = (std::uint64_t{1} << offset_bits_) - 1;
  const int tag_bits = 32 - offset_bits_;  // >= 1
  tag_mask_ = (std::uint64_t{1} << tag_bits) - 1;
  const std::size_t full_heads = std::bit_ceil(std::max<std::size_t>(max_entries_, 1)) / 4;
  full_head_bits_ = std::max(kMinHeadBits, full_heads == 0 ? 0 : std::countr_zero(full_heads));
  first_head_bits_ = std::max(kMinHeadBits, full_head_bits_ - std::min(kGrowthSteps, tag_bits));
  head_bits_ = first_head_bits_;
  tag_shift_ = 64 - first_head_bits_ - tag_bits;  // >= 64 - 28 - 31: bit_ceil(2^30) / 4 = 2^28
  heads_ = Block(heads_per_band() * bands * sizeof(std::uint32_t), true, true);
}

SketchIndex::~SketchIndex() = default;
SketchIndex::SketchIndex(SketchIndex&&) noexcept = default;
SketchIndex& SketchIndex::operator=(SketchIndex&&) noexcept = default;

void SketchIndex::insert(std::uint64_t sequence, std::uint64_t oldest_live,
                         const SketchResult* sketch) {
  if (max_entries_ == 0 || sequence < oldest_live) return;  // the window keeps nothing
  if (!empty_ && sequence < next_sequence_) return;         // not newer: a caller bug, ignore it
  if (empty_) {
    next_sequence_ = sequence;
    base_ = sequence - 1;  // the first entry is stored as 1: an empty cell (0) is no entry
  }
  next_sequence_ = sequence + 1;
  if (slots_used_ < capacity_) ++slots_used_;
  empty_ = false;

  const std::size_t at = slot_of(sequence);
  next_slot_ = at + 1 == capacity_ ? 0 : at + 1;
  std::uint64_t& has_word = has_sketch_.as<std::uint64_t>()[at >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (at & 63);
  std::uint32_t* cell = cells(at);
  if (sketch == nullptr || sketch->shingles == 0) {
    has_word &= ~bit;
    std::memset(slot(at), 0, slot_bytes_);
    return;
  }
  has_word |= bit;
  std::memcpy(slot(at) + sketch_offset_, &sketch->sketch, sizeof(Sketch));
  if (head_bits_ < full_head_bits_ &&
      next_sequence_ - oldest_live > kLoadToGrow * heads_per_band()) {
    // Splitting chains must follow every reference exactly: true while fewer
    // than 2^S sequences have passed since the first (no reference, empty or
    // stale, can alias a live entry yet). After that the tables keep their size.
    if (next_sequence_ - base_ > offset_mask_)
      full_head_bits_ = head_bits_;
    else
      grow(oldest_live);
  }
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    std::uint32_t& first = *head(b, sketch->band_keys[b]);
    cell[b] = first;
    first = reference(sequence, sketch->band_keys[b]);
  }
}

void SketchIndex::grow(std::uint64_t oldest_live) {
  const std::size_t old_per_band = heads_per_band();
  const std::size_t per_band = old_per_band * 2;
  const auto bands = static_cast<std::size_t>(bands_);
  Block grown;
  try {
    grown = Block(per_band * bands * sizeof(std::uint32_t), true, true);
  } catch (const std::bad_alloc&) {
    full_head_bits_ = head_bits_;  // keep this size: longer chains, same results
    return;
  }
  // Old bucket b splits into 2b and 2b + 1 by the key bit below its bits: the
  // tag's bit 31 - (head_bits_ - first_head_bits_) of a 32-bit reference.
  const int split_bit = 31 - (head_bits_ - first_head_bits_);
  struct Lane {
    std::uint64_t sequence;  // the entry to move next (its cell is being loaded), or kNoEntry
    std::uint32_t stored;    // the reference to it
    std::uint64_t
        tail[2];  // the newest-first chains of the two new buckets so far: their last entry
    bool started[2];
  };
  std::array<Lane, kSplitLanes> lanes;
  for (std::size_t band = 0; band < bands; ++band) {
    const std::uint32_t* from = heads_.as<std::uint32_t>() + band * old_per_band;
    std::uint32_t* to = grown.as<std::uint32_t>() + band * per_band;
    for (std::size_t first = 0; first < old_per_band; first += kSplitLanes) {
      const std::size_t count = std::min(kSplitLanes, old_per_band - first);
      std::size_t active = 0;
      for (std::size_t i = 0; i < count; ++i) {
        Lane& lane = lanes[i];
        lane.stored = from[first + i];
        lane.sequence = decode(lane.stored, next_sequence_, oldest_live);
        lane.started[0] = lane.started[1] = false;
        if (lane.sequence == kNoEntry) continue;
        __builtin_prefetch(cells(slot_of(lane.sequence)) + band);
        ++active;
      }
      // Round-robin over the chains: move one entry of each per round. The
      // entry's cell is read before it is rewritten as some chain's tail.
      while (active != 0) {
        for (std::size_t i = 0; i < count; ++i) {
          Lane& lane = lanes[i];
          if (lane.sequence == kNoEntry) continue;
          const std::size_t at = slot_of(lane.sequence);
          const std::uint32_t following = cells(at)[band];
          const int child = (lane.stored >> split_bit) & 1;
          if (lane.started[child])
            cells(slot_of(lane.tail[child]))[band] = lane.stored;
          else
            to[2 * (first + i) + static_cast<std::size_t>(child)] = lane.stored;
          lane.started[child] = true;
          lane.tail[child] = lane.sequence;
          const std::uint64_t older = decode(following, lane.sequence, oldest_live);
          lane.stored = following;
          lane.sequence = older;
          if (older != kNoEntry) {
            __builtin_prefetch(cells(slot_of(older)) + band);
            continue;
          }
          for (int c = 0; c < 2; ++c)  // both new chains end here
            if (lane.started[c]) cells(slot_of(lane.tail[c]))[band] = 0;
          --active;
        }
      }
    }
  }
  heads_ = std::move(grown);
  ++head_bits_;  // heads_per_band() == per_band
}

std::optional<Sketch> SketchIndex::sketch(std::uint64_t sequence, std::uint64_t oldest_live) const {
  if (empty_ || sequence < oldest_live || sequence >= next_sequence_ ||
      next_sequence_ - sequence > capacity_)
    return std::nullopt;
  const std::size_t at = slot_of(sequence);
  if (!has_sketch(at)) return std::nullopt;
  return sketch_at(at);
}

void SketchIndex::prefetch(const SketchResult& probe) const {
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    __builtin_prefetch(head(b, probe.band_keys[b]));
  }
}

void SketchIndex::prefetch_cells(const SketchResult& probe, std::uint64_t oldest_live) const {
  if (empty_ || probe.shingles == 0) return;
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    const std::uint64_t key = probe.band_keys[b];
    const std::uint32_t stored = *head(b, key);
    const std::uint64_t sequence = decode(stored, next_sequence_, oldest_live);
    if (sequence == kNoEntry) continue;
    prefetch_slot(slot_before(next_slot_, next_sequence_ - sequence), b,
                  (stored >> offset_bits_) == tag(key));
  }
}

std::size_t SketchIndex::max_bytes(const SketchOptions& options, std::size_t max_entries) {
  // As the constructor and stats() size them.
  const auto bands = static_cast<std::size_t>(std::max(options.bands, 0));
  const std::size_t capacity = std::max<std::size_t>(1, max_entries);
  const std::size_t full_heads = std::bit_ceil(capacity) / 4;
  const int head_bits = std::max(kMinHeadBits, full_heads == 0 ? 0 : std::countr_zero(full_heads));
  return capacity * (bands * sizeof(std::uint32_t) + sizeof(Sketch)) +
         words_for_bits(capacity) * sizeof(std::uint64_t) +
         (std::size_t{1} << head_bits) * bands * sizeof(std::uint32_t) + sizeof(SketchIndex);
}

SketchIndexStats SketchIndex::stats() const {
  const auto bands = static_cast<std::size_t>(std::max(bands_, 0));
  SketchIndexStats s = stats_;
  s.bytes = slots_used_ * slot_bytes_ + words_for_bits(slots_used_) * sizeof(std::uint64_t) +
            heads_per_band() * bands * sizeof(std::uint32_t) + sizeof(*this);
  return s;
}

}  // namespace neardup::dedup
