#include "dedup/sketch_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>
#include <stdexcept>

namespace neardup::dedup {
namespace {

constexpr std::size_t kMaxEntries = std::size_t{1} << 30;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t words_for_bits(std::size_t bits) { return (bits + 63) / 64; }

}  // namespace

// Anonymous mappings are zero pages until written, so heads that no bucket ever
// touches, and ring slots not reached yet, cost address space only (hence
// MAP_NORESERVE: the rings are mapped for max_entries from the start).
SketchIndex::Block::Block(std::size_t bytes, bool huge) : bytes_(std::max<std::size_t>(bytes, 1)) {
  data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw std::bad_alloc();
  }
#ifdef MADV_HUGEPAGE
  if (huge && bytes_ >= kHugePage) madvise(data_, bytes_, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
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
  if (max_entries > kMaxEntries) throw std::invalid_argument("sketch index: max_entries above 2^30");
  const auto bands = static_cast<std::size_t>(std::max(bands_, 0));
  // The rings are written in sequence order, so mapping them whole costs only
  // the pages reached so far, and they never move (no copy as the window grows).
  capacity_ = std::max<std::size_t>(1, max_entries_);
  sketches_ = Block(capacity_ * sizeof(Sketch), true);
  has_sketch_ = Block(words_for_bits(capacity_) * sizeof(std::uint64_t), true);
  next_ = Block(capacity_ * bands * sizeof(std::uint32_t), true);
  heads_per_band_ = std::max<std::size_t>(1024, std::bit_ceil(std::max<std::size_t>(max_entries_, 1)) / 4);
  head_shift_ = 64 - std::countr_zero(heads_per_band_);
  offset_bits_ = std::bit_width(capacity_);  // <= 31: max_entries <= 2^30
  offset_mask_ = (std::uint64_t{1} << offset_bits_) - 1;
  tag_mask_ = (std::uint64_t{1} << (32 - offset_bits_)) - 1;
  heads_ = Block(heads_per_band_ * bands * sizeof(std::uint32_t), true);
}

SketchIndex::~SketchIndex() = default;
SketchIndex::SketchIndex(SketchIndex&&) noexcept = default;
SketchIndex& SketchIndex::operator=(SketchIndex&&) noexcept = default;

void SketchIndex::insert(std::uint64_t sequence, std::uint64_t oldest_live, const SketchResult* sketch) {
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
  std::uint64_t& has_word = has_sketch_.as<std::uint64_t>()[at >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (at & 63);
  std::uint32_t* next = next_.as<std::uint32_t>();
  if (sketch == nullptr || sketch->shingles == 0) {
    has_word &= ~bit;
    sketches_.as<Sketch>()[at] = Sketch{};
    for (int band = 0; band < bands_; ++band) next[static_cast<std::size_t>(band) * capacity_ + at] = 0;
    return;
  }
  has_word |= bit;
  sketches_.as<Sketch>()[at] = sketch->sketch;
  std::uint32_t* heads = heads_.as<std::uint32_t>();
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    std::uint32_t& head = heads[b * heads_per_band_ + bucket(sketch->band_keys[b])];
    next[b * capacity_ + at] = head;
    head = reference(sequence, sketch->band_keys[b]);
  }
}

std::optional<Sketch> SketchIndex::sketch(std::uint64_t sequence, std::uint64_t oldest_live) const {
  if (empty_ || sequence < oldest_live || sequence >= next_sequence_ || next_sequence_ - sequence > capacity_)
    return std::nullopt;
  const std::size_t at = slot_of(sequence);
  if (!has_sketch(at)) return std::nullopt;
  return sketches_.as<Sketch>()[at];
}

void SketchIndex::prefetch(const SketchResult& probe) const {
  const std::uint32_t* heads = heads_.as<std::uint32_t>();
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    __builtin_prefetch(heads + b * heads_per_band_ + bucket(probe.band_keys[b]));
  }
}

SketchIndexStats SketchIndex::stats() const {
  const auto bands = static_cast<std::size_t>(std::max(bands_, 0));
  SketchIndexStats s = stats_;
  s.bytes = slots_used_ * (sizeof(Sketch) + bands * sizeof(std::uint32_t)) +
            words_for_bits(slots_used_) * sizeof(std::uint64_t) + heads_per_band_ * bands * sizeof(std::uint32_t) +
            sizeof(*this);
  return s;
}

}  // namespace neardup::dedup
