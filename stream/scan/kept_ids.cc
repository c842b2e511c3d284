#include "stream/scan/kept_ids.h"

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace neardup::stream::scan {

void KeptIds::add(std::uint64_t line, std::string_view id) {
  if (capacity_ == 0) return;
  const std::uint64_t start = base_ + bytes_.size();
  if (lines_.size() < capacity_) {
    if (lines_.size() == lines_.capacity()) {  // grow, but never past capacity
      const std::size_t want = std::min(capacity_, std::max<std::size_t>(1024, 2 * lines_.size()));
      lines_.reserve(want);
      starts_.reserve(want);
    }
    lines_.push_back(line);
    starts_.push_back(start);
  } else {
    lines_[oldest_] = line;  // full: the newest replaces the oldest
    starts_[oldest_] = start;
    if (++oldest_ == capacity_) oldest_ = 0;
    // The bytes before the oldest id still kept are dead; drop them once they
    // are half the arena (each byte is moved O(1) times, amortized).
    const auto dead = static_cast<std::size_t>(starts_[oldest_] - base_);
    if (dead >= kMinDrop && 2 * dead >= bytes_.size()) {
      bytes_.erase(0, dead);
      base_ = starts_[oldest_];
    }
  }
  bytes_.append(id);
  ++inserts_;
}

void KeptIds::renew(std::uint64_t line) {
  if (capacity_ == 0) return;
  auto it = renewed_.find(line);
  if (it == renewed_.end()) {
    const std::string_view id = find(line);
    if (id.empty()) return;  // named by its line number: nothing to keep
    it = renewed_.emplace(line, Renewed{std::string(id), 0}).first;
  }
  it->second.at = ++inserts_;
  if (renewed_.size() > capacity_) {
    std::erase_if(renewed_, [&](const auto& r) { return r.second.at + capacity_ < inserts_; });
  }
}

std::string_view KeptIds::find(std::uint64_t line) const {
  if (auto it = renewed_.find(line); it != renewed_.end()) return it->second.id;
  // In kept (increasing) order the ring is [oldest_, size) then [0, oldest_).
  const bool in_newer = oldest_ != 0 && line >= lines_[0];
  const auto split = lines_.begin() + static_cast<std::ptrdiff_t>(oldest_);
  const auto begin = in_newer ? lines_.begin() : split;
  const auto end = in_newer ? split : lines_.end();
  const auto it = std::lower_bound(begin, end, line);
  if (it == end || *it != line) return {};
  const auto at = static_cast<std::size_t>(it - lines_.begin());
  const std::size_t next =
      at + 1 == lines_.size() ? 0 : at + 1;  // the next newer id's slot, in ring order
  const bool newest = next == oldest_;
  const std::uint64_t stop = newest ? base_ + bytes_.size() : starts_[next];
  return std::string_view(bytes_).substr(static_cast<std::size_t>(starts_[at] - base_),
                                         static_cast<std::size_t>(stop - starts_[at]));
}

}  // namespace neardup::stream::scan
