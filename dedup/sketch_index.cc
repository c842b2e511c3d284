#include "dedup/sketch_index.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace neardup::dedup {
namespace {

constexpr std::size_t kMaxEntries = std::size_t{1} << 30;
constexpr std::size_t kFirstCapacity = 1024;

// calloc: large blocks come straight from mmap as zero pages, so heads that no
// bucket ever touches cost address space only.
void* zeroed_bytes(std::size_t count, std::size_t size) {
  void* p = std::calloc(count == 0 ? 1 : count, size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

std::size_t words_for_bits(std::size_t bits) { return (bits + 63) / 64; }

}  // namespace

void SketchIndex::FreeDeleter::operator()(void* p) const { std::free(p); }

SketchIndex::SketchIndex(const SketchOptions& options, std::size_t max_entries)
    : bands_(options.bands), max_entries_(max_entries) {
  validate(options);
  if (max_entries > kMaxEntries) throw std::invalid_argument("sketch index: max_entries above 2^30");
  stride_ = 4 + static_cast<std::size_t>(bands_);
  capacity_ = std::max<std::size_t>(1, std::min(max_entries_, kFirstCapacity));
  ring_.reset(static_cast<std::uint32_t*>(zeroed_bytes(capacity_ * stride_, sizeof(std::uint32_t))));
  has_sketch_.reset(static_cast<std::uint64_t*>(zeroed_bytes(words_for_bits(capacity_), sizeof(std::uint64_t))));
  heads_per_band_ = std::max<std::size_t>(1024, std::bit_ceil(std::max<std::size_t>(max_entries_, 1)) / 4);
  head_shift_ = 64 - std::countr_zero(heads_per_band_);
  heads_.reset(static_cast<std::uint32_t*>(
      zeroed_bytes(heads_per_band_ * static_cast<std::size_t>(std::max(bands_, 0)), sizeof(std::uint32_t))));
}

SketchIndex::~SketchIndex() = default;
SketchIndex::SketchIndex(SketchIndex&&) noexcept = default;
SketchIndex& SketchIndex::operator=(SketchIndex&&) noexcept = default;

void SketchIndex::grow(std::uint64_t oldest_live) {
  const std::size_t capacity = std::min(max_entries_, capacity_ * 2);
  std::unique_ptr<std::uint32_t[], FreeDeleter> ring(
      static_cast<std::uint32_t*>(zeroed_bytes(capacity * stride_, sizeof(std::uint32_t))));
  std::unique_ptr<std::uint64_t[], FreeDeleter> has(
      static_cast<std::uint64_t*>(zeroed_bytes(words_for_bits(capacity), sizeof(std::uint64_t))));
  for (std::uint64_t seq = std::max(oldest_live, next_sequence_ - std::min<std::uint64_t>(next_sequence_, capacity_));
       seq < next_sequence_; ++seq) {
    const std::size_t from = slot_of(seq);
    const std::size_t to = static_cast<std::size_t>(seq % capacity);
    std::copy_n(ring_.get() + from * stride_, stride_, ring.get() + to * stride_);
    if ((has_sketch_[from >> 6] >> (from & 63)) & 1) has[to >> 6] |= std::uint64_t{1} << (to & 63);
  }
  ring_ = std::move(ring);
  has_sketch_ = std::move(has);
  capacity_ = capacity;
}

void SketchIndex::insert(std::uint64_t sequence, std::uint64_t oldest_live, const SketchResult* sketch) {
  if (max_entries_ == 0 || sequence < oldest_live) return;  // the window keeps nothing
  if (!empty_ && sequence < next_sequence_) return;         // not newer: a caller bug, ignore it
  if (empty_) {
    next_sequence_ = sequence;
    base_ = sequence - 1;  // the first entry is stored as 1: an empty cell (0) is no entry
  }
  // Live entries after this insert: [max(oldest_live, ...), sequence]; the ring must hold them all.
  while (sequence + 1 - oldest_live > capacity_ && capacity_ < max_entries_) grow(oldest_live);
  next_sequence_ = sequence + 1;
  empty_ = false;

  const std::size_t at = slot_of(sequence);
  std::uint32_t* s = ring_.get() + at * stride_;
  std::uint64_t& has_word = has_sketch_[at >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (at & 63);
  if (sketch == nullptr || sketch->shingles == 0) {
    has_word &= ~bit;
    std::fill_n(s, stride_, 0U);
    return;
  }
  has_word |= bit;
  std::memcpy(s, sketch->sketch.words.data(), sizeof sketch->sketch.words);
  for (int band = 0; band < bands_; ++band) {
    std::uint32_t& head = heads_[static_cast<std::size_t>(band) * heads_per_band_ +
                                 bucket(sketch->band_keys[static_cast<std::size_t>(band)])];
    s[4 + band] = head;
    head = static_cast<std::uint32_t>(sequence - base_);
  }
}

std::optional<Sketch> SketchIndex::sketch(std::uint64_t sequence, std::uint64_t oldest_live) const {
  if (empty_ || sequence < oldest_live || sequence >= next_sequence_ || next_sequence_ - sequence > capacity_)
    return std::nullopt;
  const std::size_t at = slot_of(sequence);
  if (((has_sketch_[at >> 6] >> (at & 63)) & 1) == 0) return std::nullopt;
  Sketch out;
  std::memcpy(out.words.data(), slot(sequence), sizeof out.words);
  return out;
}

void SketchIndex::prefetch(const SketchResult& probe) const {
  for (int band = 0; band < bands_; ++band)
    __builtin_prefetch(heads_.get() + static_cast<std::size_t>(band) * heads_per_band_ +
                       bucket(probe.band_keys[static_cast<std::size_t>(band)]));
}

SketchIndexStats SketchIndex::stats() const {
  SketchIndexStats s = stats_;
  s.bytes = capacity_ * stride_ * sizeof(std::uint32_t) + words_for_bits(capacity_) * sizeof(std::uint64_t) +
            heads_per_band_ * static_cast<std::size_t>(bands_) * sizeof(std::uint32_t) + sizeof(*this);
  return s;
}

}  // namespace neardup::dedup
