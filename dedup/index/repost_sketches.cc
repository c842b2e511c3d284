#include "dedup/index/repost_sketches.h"

#include <algorithm>
#include <bit>

namespace neardup::dedup {
namespace {

std::size_t buckets_for(std::size_t slots) {
  return std::max<std::size_t>(2, slots / 4);  // a power of two: slots is one
}

}  // namespace

RepostSketches::Keys RepostSketches::keys_of(const Sketch& sketch) {
  Keys keys;
  for (int band = 0; band < kBands; ++band) {
    const auto b = static_cast<std::uint64_t>(band);
    const std::uint64_t bits = (sketch.words[b / 4] >> (16 * (b % 4))) & 0xffffU;
    // spread over the lines by the high bits; the low 32 (the tag) keep the 16 bits
    keys[static_cast<std::size_t>(band)] = ((bits | (b << 16)) * 0x9e3779b97f4a7c15ULL) ^ bits;
  }
  return keys;
}

RepostSketches::RepostSketches(std::size_t capacity)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity, 1))),
      mask_(slots_.size() - 1),
      lines_(static_cast<std::size_t>(kBands) * buckets_for(slots_.size())),
      buckets_(buckets_for(slots_.size())),
      shift_(64 - std::countr_zero(buckets_)) {}

void RepostSketches::insert(const Repost& repost, const Keys& keys) {
  const std::uint64_t number = ++inserted_;
  slots_[(number - 1) & mask_] = repost;
  const std::uint32_t mine = stored(number);
  const std::uint64_t newest = mine;
  for (int band = 0; band < kBands; ++band) {
    const std::uint64_t key = keys[static_cast<std::size_t>(band)];
    Line& l = lines_[line_index(band, key)];
    // An empty or dead place, else the oldest entry's: the largest back (an
    // empty place counts as the oldest of all, a dead one is older than any live).
    std::size_t at = 0;
    std::uint64_t oldest = 0;
    for (std::size_t i = 0; i < kLineEntries; ++i) {
      const std::uint64_t b = l.number[i] == 0 ? ~std::uint64_t{0} : back(l.number[i], newest);
      if (b > oldest) oldest = b, at = i;
    }
    l.number[at] = mine;
    l.tag[at] = static_cast<std::uint32_t>(key);
  }
}

void RepostSketches::prefetch(const Keys& keys) const {
  __builtin_prefetch(&slots_[inserted_ & mask_], 1);  // the slot the next insert writes
  if (inserted_ == 0) return;
  for (int band = 0; band < kBands; ++band)
    __builtin_prefetch(&lines_[line_index(band, keys[static_cast<std::size_t>(band)])]);
}

void RepostSketches::prefetch_slots(const Keys& keys) const {
  if (inserted_ == 0) return;
  const std::uint64_t newest = stored(inserted_);
  for (int band = 0; band < kBands; ++band) {
    const std::uint64_t key = keys[static_cast<std::size_t>(band)];
    const Line& l = lines_[line_index(band, key)];
    for (std::size_t i = 0; i < kLineEntries; ++i)
      if (l.tag[i] == static_cast<std::uint32_t>(key) && live(l.number[i], newest))
        __builtin_prefetch(&slots_[(inserted_ - back(l.number[i], newest) - 1) & mask_]);
  }
}

std::size_t RepostSketches::size() const {
  return static_cast<std::size_t>(std::min<std::uint64_t>(inserted_, slots_.size()));
}

std::size_t RepostSketches::bytes() const {
  return slots_.size() * sizeof(Repost) + lines_.size() * sizeof(Line) + sizeof(*this);
}

std::size_t RepostSketches::max_bytes(std::size_t capacity) {
  const std::size_t slots = std::bit_ceil(std::max<std::size_t>(capacity, 1));
  return slots * sizeof(Repost) +
         static_cast<std::size_t>(kBands) * buckets_for(slots) * sizeof(Line) +
         sizeof(RepostSketches);
}

}  // namespace neardup::dedup
