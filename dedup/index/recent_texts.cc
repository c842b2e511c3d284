#include "dedup/index/recent_texts.h"

#include <algorithm>
#include <bit>

namespace neardup::dedup {

RecentTexts::RecentTexts(std::size_t capacity, int bands)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity, 1))),
      mask_(slots_.size() - 1),
      buckets_(std::bit_ceil(2 * slots_.size())),
      shift_(64 - std::countr_zero(buckets_)),
      bands_(std::clamp(bands, 0, kRecentBands)) {
  heads_.assign(static_cast<std::size_t>(bands_) * buckets_, 0);
  sequences_.assign(slots_.size(), 0);
  order_.assign(slots_.size(), 0);
  refs_.assign(slots_.size(), 0);
  first_.reserve(slots_.size());
}

void RecentTexts::insert(std::uint64_t sequence, std::uint64_t ref, const ExactShingles& text) {
  newest_kept_ = sequence;
  keep(sequence, 2 * sequence, ref, text);
}

void RecentTexts::insert_repost(std::uint64_t original, std::uint64_t ref,
                                const ExactShingles& text) {
  keep(original, 2 * newest_kept_ + 1, ref, text);
}

void RecentTexts::keep(std::uint64_t sequence, std::uint64_t order, std::uint64_t ref,
                       const ExactShingles& text) {
  const std::uint64_t number = ++inserted_;
  const std::size_t i = (number - 1) & mask_;
  if (number > slots_.size()) {  // the slot's text leaves the ring
    const auto it = first_.find(refs_[i]);
    if (it != first_.end() && it->second == number - slots_.size()) first_.erase(it);
  }
  first_.try_emplace(ref, number);
  Slot& s = slots_[i];
  sequences_[i] = sequence;
  order_[i] = order;
  refs_[i] = ref;
  s.shingles = static_cast<std::uint32_t>(text.hashes().size());
  set_bytes_ -= s.text.capacity_bytes();
  s.text = text;
  set_bytes_ += s.text.capacity_bytes();
  for (int band = 0; band < bands_; ++band) {
    const std::uint64_t key = text.band_key(band);
    std::uint64_t& head = heads_[bucket(band, key)];
    s.next[static_cast<std::size_t>(band)] = head;
    s.tag[static_cast<std::size_t>(band)] = static_cast<std::uint32_t>(key);
    head = number;
  }
}

void RecentTexts::prefetch(const ExactShingles& text) const {
  for (int band = 0; band < bands_; ++band)
    __builtin_prefetch(&heads_[bucket(band, text.band_key(band))]);
}

void RecentTexts::prefetch_slots(const ExactShingles& text) const {
  for (int band = 0; band < bands_; ++band) {
    const std::uint64_t n = heads_[bucket(band, text.band_key(band))];
    if (live(n)) __builtin_prefetch(&slot(n));
  }
}

const ExactShingles* RecentTexts::find(std::uint64_t sequence) const {
  // Live slots hold non-decreasing keys in insertion order; a kept text's is
  // even, and only its own.
  const std::uint64_t key = 2 * sequence;
  const std::uint64_t live_count = std::min<std::uint64_t>(inserted_, slots_.size());
  std::uint64_t lo = inserted_ - live_count + 1, hi = inserted_ + 1;  // insert numbers [lo, hi)
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (order_[(mid - 1) & mask_] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > inserted_ || order_[(lo - 1) & mask_] != key) return nullptr;
  return &slot(lo).text;
}

std::size_t RecentTexts::max_bytes(std::size_t capacity, int bands) {
  // As the constructor sizes the ring and heads and bytes() counts them.
  const std::size_t slots = std::bit_ceil(std::max<std::size_t>(capacity, 1));
  const std::size_t buckets = std::bit_ceil(2 * slots);
  return slots * (sizeof(Slot) + 3 * sizeof(std::uint64_t) + ExactShingles::kMaxBytes +
                  4 * sizeof(std::uint64_t)) +
         static_cast<std::size_t>(std::clamp(bands, 0, kRecentBands)) * buckets *
             sizeof(std::uint64_t);
}

std::size_t RecentTexts::bytes() const {
  // (the map: a node of two 8-byte values and a next pointer, and a bucket pointer)
  return slots_.size() * (sizeof(Slot) + 3 * sizeof(std::uint64_t)) + set_bytes_ +
         first_.size() * 4 * sizeof(std::uint64_t) + heads_.size() * sizeof(std::uint64_t);
}

}  // namespace neardup::dedup
