#pragma once
// The ids of kept records, to name the original of a duplicate in `neardup
// scan`'s output.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace neardup::stream::scan {

/// Ids of kept records, to name the original of a duplicate. The window evicts
/// in insertion order and holds at most max_entries, so the newest max_entries
/// kept ids always cover it. Two rings of at most `capacity` in kept order hold
/// each kept record's line number and where its id starts in one byte arena
/// (offsets count every byte ever appended; an id ends where the next newer one
/// starts). A lookup is a binary search over contiguous 8-byte lines (its first
/// steps always hit the same, cached elements). 16 bytes per kept record plus
/// its id's bytes (at most twice over, before dead ones are dropped), where a
/// string per record took 40 bytes and a heap block for ids past 15 bytes.
/// Not thread-safe: one thread at a time.
class KeptIds {
 public:
  explicit KeptIds(std::size_t capacity) : capacity_(capacity) {}

  /// Kept line `line` has id `id` (lines come in increasing order).
  void add(std::uint64_t line, std::string_view id);

  /// A duplicate took kept line `line`'s place in the window (refresh): its id
  /// stays needed after the newest max_entries kept ids have moved past it.
  /// Ids renewed longer than max_entries window inserts ago are dropped once
  /// more than `capacity` are held (the window has evicted those entries).
  void renew(std::uint64_t line);

  /// The id of kept line `line`; empty when it had none (the line number is the id).
  /// Valid until the next add() or renew().
  std::string_view find(std::uint64_t line) const;

 private:
  static constexpr std::size_t kMinDrop = 64 * 1024;  // no memmove for a few dead bytes

  std::size_t capacity_;
  std::vector<std::uint64_t> lines_;  // a ring once full
  std::vector<std::uint64_t>
      starts_;              // starts_[i]: where the id of lines_[i] starts (an arena offset)
  std::string bytes_;       // the ids, in kept order, from offset base_ on
  std::uint64_t base_ = 0;  // the offset of bytes_[0]
  std::size_t oldest_ = 0;  // the ring's oldest slot (0 until full)
  struct Renewed {
    std::string id;
    std::uint64_t at;  // inserts_ when last renewed
  };
  std::unordered_map<std::uint64_t, Renewed> renewed_;  // by line (refresh_on_duplicate)
  std::uint64_t inserts_ = 0;                           // window inserts: kept and renewed
};

}  // namespace neardup::stream::scan
