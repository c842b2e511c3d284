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
constexpr int kGrowthSteps = 3;         // the tables start at 1/8 of their full size
constexpr int kMinBucketBits = 6;       // 64 buckets per band at least
constexpr std::size_t kLoadToGrow = 4;  // double when live entries > 4 x buckets per band
constexpr std::size_t kFullLoad = 10;   // at most 10 entries a bucket at a full window
constexpr std::size_t kSplitAhead = 8;  // buckets requested ahead while splitting
// The spills' memory: about 1 byte per window entry at most, a spill counted
// as its references plus the map node and vector that hold them.
constexpr std::size_t kSpillBytesPerEntry = 1;
constexpr std::size_t kSpillOverhead = 64;

std::size_t words_for_bits(std::size_t bits) { return (bits + 63) / 64; }

// The most the spills may hold: 1 byte per entry, and 64 KiB for any window.
std::size_t spill_budget(std::size_t capacity) {
  return std::max<std::size_t>(capacity * kSpillBytesPerEntry, std::size_t{64} << 10);
}

// log2 of the buckets per band at a full window of `capacity` entries.
int full_bucket_bits(std::size_t capacity) {
  const std::size_t buckets = std::bit_ceil((capacity + kFullLoad - 1) / kFullLoad);
  return std::max(kMinBucketBits, std::countr_zero(buckets));
}

}  // namespace

// Anonymous mappings are zero pages until written, so ring slots not reached
// yet cost address space only (hence MAP_NORESERVE: the rings are mapped for
// max_entries from the start). The buckets are populated at once
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
  slots_ = Block(capacity_ * sizeof(Sketch), true);
  has_sketch_ = Block(words_for_bits(capacity_) * sizeof(std::uint64_t), true);
  // P >= 1.25 max_entries + 1: a reference dies at most max_entries
  // sequences old, and can decode as live again P sequences old; the sweep
  // clears it in between.
  offset_bits_ = std::bit_width(capacity_ + capacity_ / 4 + 2);  // <= 31: max_entries <= 2^30
  offset_mask_ = (std::uint64_t{1} << offset_bits_) - 1;
  period_ = offset_mask_ - 1;
  max_spill_bytes_ = spill_budget(capacity_);
  found_.reserve(bands * kMaxBucket);
  gather_.reserve(kMaxBucket + kBucketEntries);
  const int tag_bits = 32 - offset_bits_;  // >= 1
  tag_mask_ = (std::uint64_t{1} << tag_bits) - 1;
  full_bucket_bits_ = full_bucket_bits(capacity_);
  first_bucket_bits_ =
      std::max(kMinBucketBits, full_bucket_bits_ - std::min(kGrowthSteps, tag_bits));
  bucket_bits_ = first_bucket_bits_;
  tag_shift_ = 64 - first_bucket_bits_ - tag_bits;  // >= 64 - 27 - 31: bit_ceil(2^30 / 10) = 2^27
  buckets_ = Block(buckets_per_band() * bands * sizeof(Bucket), true, true);
  set_sweep();
}

void SketchIndex::set_sweep() {
  const std::size_t total = buckets_per_band() * static_cast<std::size_t>(std::max(bands_, 0));
  const std::uint64_t margin = period_ - capacity_;  // >= max_entries / 4 + 1
  sweep_per_insert_ = static_cast<std::size_t>((total + margin - 1) / margin);
  sweep_next_ = 0;
}

void SketchIndex::sweep(std::uint64_t span) {
  const std::size_t total = buckets_per_band() * static_cast<std::size_t>(bands_);
  Bucket* lines = buckets_.as<Bucket>();
  for (std::size_t k = 0; k < sweep_per_insert_; ++k) {
    const std::size_t i = sweep_next_;
    sweep_next_ = i + 1 == total ? 0 : i + 1;
    __builtin_prefetch(lines + (i + 4 < total ? i + 4 : i + 4 - total));
    Bucket& line = lines[i];
    const bool marked = line.refs.back() == kMarked;
    for (std::size_t j = 0; j < (marked ? kBucketEntries - 1 : kBucketEntries); ++j)
      if (line.refs[j] != 0 && !live(line.refs[j], span)) line.refs[j] = 0;
    if (marked) trim_spill(line, i, span);
  }
}

SketchIndex::~SketchIndex() = default;
SketchIndex::SketchIndex(SketchIndex&&) noexcept = default;
SketchIndex& SketchIndex::operator=(SketchIndex&&) noexcept = default;

void SketchIndex::insert(std::uint64_t sequence, std::uint64_t oldest_live,
                         const SketchResult* sketch) {
  if (max_entries_ == 0 || sequence < oldest_live) return;  // the window keeps nothing
  if (!empty_ && sequence < next_sequence_) return;         // not newer: a caller bug, ignore it
  if (empty_) base_ = sequence - 1;  // the first entry's offset is 1: 0 is an empty place
  empty_ = false;
  next_sequence_ = sequence + 1;
  const std::uint64_t offset = (sequence - base_ - 1) % period_ + 1;  // 1..P
  next_offset_ = offset == period_ ? 1 : offset + 1;
  if (slots_used_ < capacity_) ++slots_used_;
  const std::size_t at = static_cast<std::size_t>(sequence % capacity_);
  next_slot_ = at + 1 == capacity_ ? 0 : at + 1;
  std::uint64_t& has_word = has_sketch_.as<std::uint64_t>()[at >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (at & 63);
  if (sketch == nullptr || sketch->shingles == 0) {
    has_word &= ~bit;
    slots_.as<Sketch>()[at] = Sketch{};
    if (bands_ > 0) sweep(next_sequence_ - oldest_live);
    return;
  }
  has_word |= bit;
  slots_.as<Sketch>()[at] = sketch->sketch;
  const std::uint64_t span = next_sequence_ - oldest_live;  // oldest_live <= sequence
  if (bucket_bits_ < full_bucket_bits_ && span > kLoadToGrow * buckets_per_band())
    grow(oldest_live);
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    const std::uint64_t key = sketch->band_keys[b];
    place(bucket_index(b, key),
          static_cast<std::uint32_t>(offset | (std::uint64_t{tag(key)} << offset_bits_)), span);
  }
  if (bands_ > 0) sweep(span);
}

std::size_t SketchIndex::spill_bytes(const std::vector<std::uint32_t>& spill) {
  return spill.capacity() * sizeof(std::uint32_t) + kSpillOverhead;
}

void SketchIndex::place(std::size_t index, std::uint32_t ref, std::uint64_t span) {
  Bucket& line = buckets_.as<Bucket>()[index];
  const bool marked = line.refs.back() == kMarked;
  const std::size_t places = marked ? kBucketEntries - 1 : kBucketEntries;
  // A free place (empty, or an entry that has left the window), else the oldest entry's.
  std::size_t oldest = 0;
  std::uint64_t oldest_back = 0;
  for (std::size_t i = 0; i < places; ++i) {
    const std::uint32_t stored = line.refs[i];
    const std::uint64_t back = stored == 0 ? 0 : back_of(stored);
    if (back == 0 || back > span) {
      line.refs[i] = ref;
      if (marked) trim_spill(line, index, span);
      return;
    }
    if (back > oldest_back) oldest = i, oldest_back = back;
  }
  if (marked) {
    // The line's oldest entry is newer than all its spill holds: it goes last.
    std::vector<std::uint32_t>& spill = spills_.find(index)->second;
    spill_bytes_ -= spill_bytes(spill);
    spill.push_back(line.refs[oldest]);
    spill_bytes_ += spill_bytes(spill);
    line.refs[oldest] = ref;
    trim_spill(line, index, span);
    return;
  }
  // A full line without a spill: its newest 15 entries stay, the last place
  // becomes the mark, and the two oldest start the spill, while the spills
  // have room; else the oldest entry is given up.
  constexpr std::size_t kFirstSpill = 4;  // references a new spill makes room for
  if (spill_bytes_ + kFirstSpill * sizeof(std::uint32_t) + kSpillOverhead > max_spill_bytes_) {
    line.refs[oldest] = ref;
    ++stats_.evictions;
    return;
  }
  std::vector<std::uint32_t> spill;
  spill.reserve(kFirstSpill);
  gather_.assign(line.refs.begin(), line.refs.end());
  gather_.push_back(ref);  // the newest
  std::sort(gather_.begin(), gather_.end() - 1, [&](std::uint32_t x, std::uint32_t y) {
    return back_of(x) > back_of(y);  // oldest first
  });
  spill.assign(gather_.begin(), gather_.begin() + 2);
  std::copy(gather_.begin() + 2, gather_.end(), line.refs.begin());
  line.refs.back() = kMarked;
  spill_bytes_ += spill_bytes(spill);
  spills_.emplace(index, std::move(spill));
}

void SketchIndex::trim_spill(Bucket& line, std::size_t index, std::uint64_t span) {
  const auto s = spills_.find(index);
  std::vector<std::uint32_t>& spill = s->second;
  // Oldest first: the entries that have left the window are a prefix.
  std::size_t drop = 0;
  while (drop < spill.size() && !live(spill[drop], span)) ++drop;
  // Past kMaxBucket a bucket's (or the spills' memory), the oldest live go too.
  const std::size_t most = kMaxBucket - (kBucketEntries - 1);
  std::size_t over = spill.size() - drop > most ? spill.size() - drop - most : 0;
  if (over == 0 && spill_bytes_ > max_spill_bytes_ && drop < spill.size()) over = 1;
  stats_.evictions += over;
  drop += over;
  if (drop == spill.size()) {
    spill_bytes_ -= spill_bytes(spill);
    spills_.erase(s);
    line.refs.back() = 0;  // the mark's place is free again
    return;
  }
  spill.erase(spill.begin(), spill.begin() + static_cast<std::ptrdiff_t>(drop));
}

void SketchIndex::lay_out(Bucket* lines, std::size_t index, std::span<const std::uint32_t> refs,
                          Spills& spills) {
  Bucket& line = lines[index];
  if (refs.size() <= kBucketEntries) {
    std::copy(refs.begin(), refs.end(), line.refs.begin());
    return;
  }
  const std::size_t spilled = refs.size() - (kBucketEntries - 1);
  std::copy(refs.begin() + static_cast<std::ptrdiff_t>(spilled), refs.end(), line.refs.begin());
  line.refs.back() = kMarked;
  std::vector<std::uint32_t> spill(refs.begin(),
                                   refs.begin() + static_cast<std::ptrdiff_t>(spilled));
  spill_bytes_ += spill_bytes(spill);
  spills.emplace(index, std::move(spill));
}

void SketchIndex::grow(std::uint64_t oldest_live) {
  const std::size_t old_per_band = buckets_per_band();
  const std::size_t per_band = old_per_band * 2;
  const auto bands = static_cast<std::size_t>(bands_);
  Block grown;
  try {
    grown = Block(per_band * bands * sizeof(Bucket), true, true);
  } catch (const std::bad_alloc&) {
    full_bucket_bits_ = bucket_bits_;  // keep this size: fuller buckets, the newest kept
    return;
  }
  // Old bucket b splits into 2b and 2b + 1 by the key bit below its bits: the
  // tag's bit 31 - (bucket_bits_ - first_bucket_bits_) of a 32-bit reference.
  const int split_bit = 31 - (bucket_bits_ - first_bucket_bits_);
  const std::uint64_t span = next_sequence_ - std::min(oldest_live, next_sequence_);
  const Bucket* from = buckets_.as<Bucket>();
  Bucket* to = grown.as<Bucket>();
  Spills spills;
  spill_bytes_ = 0;
  std::vector<std::uint32_t> halves[2];
  const std::size_t total = old_per_band * bands;
  for (std::size_t i = 0; i < total; ++i) {
    if (i + kSplitAhead < total) __builtin_prefetch(from + i + kSplitAhead);
    const bool marked = from[i].refs.back() == kMarked;
    if (!marked) {
      // No spill: each child gets at most 16, in no particular order.
      std::size_t counts[2] = {0, 0};
      for (const std::uint32_t stored : from[i].refs) {
        if (!live(stored, span)) continue;  // dead: left behind
        const int child = (stored >> split_bit) & 1;
        to[2 * i + static_cast<std::size_t>(child)].refs[counts[child]++] = stored;
      }
      continue;
    }
    // The spill (oldest first), then the line's entries from oldest to newest.
    gather_.clear();
    for (const std::uint32_t stored : spills_.find(i)->second)
      if (live(stored, span)) gather_.push_back(stored);
    const std::size_t from_spill = gather_.size();
    for (const std::uint32_t stored : from[i].refs)
      if (live(stored, span)) gather_.push_back(stored);
    std::sort(gather_.begin() + static_cast<std::ptrdiff_t>(from_spill), gather_.end(),
              [&](std::uint32_t x, std::uint32_t y) { return back_of(x) > back_of(y); });
    halves[0].clear();
    halves[1].clear();
    for (const std::uint32_t stored : gather_) halves[(stored >> split_bit) & 1].push_back(stored);
    for (std::size_t child = 0; child < 2; ++child)
      lay_out(to, 2 * i + child, halves[child], spills);
  }
  buckets_ = std::move(grown);
  spills_ = std::move(spills);
  ++bucket_bits_;  // buckets_per_band() == per_band
  set_sweep();     // (the split left every dead reference behind)
}

std::optional<Sketch> SketchIndex::sketch(std::uint64_t sequence, std::uint64_t oldest_live) const {
  if (empty_ || sequence < oldest_live || sequence >= next_sequence_ ||
      next_sequence_ - sequence > capacity_)
    return std::nullopt;
  const auto at = static_cast<std::size_t>(sequence % capacity_);
  if (!has_sketch(at)) return std::nullopt;
  return sketch_at(at);
}

void SketchIndex::prefetch(const SketchResult& probe) const {
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    __builtin_prefetch(&bucket(b, probe.band_keys[b]));
  }
}

void SketchIndex::prefetch_cells(const SketchResult& probe, std::uint64_t oldest_live) const {
  if (empty_ || probe.shingles == 0 || oldest_live >= next_sequence_) return;
  const std::uint64_t span = next_sequence_ - oldest_live;
  for (int band = 0; band < bands_; ++band) {
    const auto b = static_cast<std::size_t>(band);
    const std::uint64_t key = probe.band_keys[b];
    const std::uint32_t want = tag(key);
    for (const std::uint32_t stored : bucket(b, key).refs) {
      if (stored == 0 || (stored >> offset_bits_) != want) continue;
      const std::uint64_t back = back_of(stored);
      if (back != 0 && back <= span) __builtin_prefetch(slots_.as<Sketch>() + slot_back(back));
    }
  }
}

std::size_t SketchIndex::max_bytes(const SketchOptions& options, std::size_t max_entries) {
  // As the constructor and stats() size them.
  const auto bands = static_cast<std::size_t>(std::max(options.bands, 0));
  const std::size_t capacity = std::max<std::size_t>(1, max_entries);
  return capacity * sizeof(Sketch) + words_for_bits(capacity) * sizeof(std::uint64_t) +
         (std::size_t{1} << full_bucket_bits(capacity)) * bands * sizeof(Bucket) +
         spill_budget(capacity) + sizeof(SketchIndex);
}

SketchIndexStats SketchIndex::stats() const {
  const auto bands = static_cast<std::size_t>(std::max(bands_, 0));
  SketchIndexStats s = stats_;
  s.bytes = slots_used_ * sizeof(Sketch) + words_for_bits(slots_used_) * sizeof(std::uint64_t) +
            buckets_per_band() * bands * sizeof(Bucket) + spill_bytes_ + sizeof(*this);
  s.spilled = 0;
  for (const auto& [index, spill] : spills_) s.spilled += spill.size();
  return s;
}

}  // namespace neardup::dedup
