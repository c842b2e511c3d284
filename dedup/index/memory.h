#pragma once
// The window's memory in bytes: what an Engine's structures reach for a
// window capacity, and the capacity that a bound in bytes
// (WindowOptions::max_memory, window.max_memory) allows. Pure arithmetic over
// the sizes the structures allocate; builds none of them.

#include <cstddef>

#include "dedup/core/options.h"

namespace neardup::dedup {

/// The most bytes each structure holds in an Engine whose window holds at
/// most `entries` entries (Engine::bytes() never exceeds total()).
struct MemoryFootprint {
  std::size_t entries = 0;
  std::size_t window = 0;   ///< the pigeonhole index: ring, bucket slots, spill allowance
  std::size_t sketch = 0;   ///< the sketch index: a slot per entry, band heads (0 when off)
  std::size_t recent = 0;   ///< the recent-text cache at its fullest (0 when off); a fixed size
  std::size_t reposts = 0;  ///< the repost cache (0 when the recent-text cache is off); fixed
  std::size_t total() const { return window + sketch + recent + reposts; }
};

/// Of window.max_memory, the recent-text cache takes at most one part in
/// kRecentMemoryShare: a bound of 120 MiB or more leaves the default cache
/// (8192 texts, 7.50 MiB) whole, and a small bound keeps the room for the
/// window's entries (12 MiB: 512 texts, 0.47 MiB). The repost cache holds as
/// many long reposts as the recent-text cache holds texts (8192: 1.31 MiB),
/// outside that share.
inline constexpr std::size_t kRecentMemoryShare = 16;

/// The texts the recent-text cache holds, and the long reposts the repost
/// cache holds: dedup.sketch.recent (0 with the
/// sketch off), or with window.max_memory set, the most of them, a power of
/// two, whose cache fits max_memory / kRecentMemoryShare when that is fewer.
/// O(log recent).
std::size_t recent_capacity(const DedupOptions& options);

/// The footprint at `entries` with these options. Throws std::invalid_argument
/// for an unsupported (blocks, max_distance). O(tables' key widths).
MemoryFootprint memory_footprint(const DedupOptions& options, std::size_t entries);

/// The entries an Engine's window holds at most: window.max_entries, or, with
/// window.max_memory set, the most whose memory_footprint() fits it when that
/// is fewer (0 when not even one does). The tightest bound wins. O(log^2 entries).
std::size_t engine_capacity(const DedupOptions& options);

/// The share of max_memory left to the Engine's Window (WindowOptions for it:
/// max_entries = engine_capacity(), max_memory = what the sketch index, the
/// recent-text cache and the repost cache leave). Unchanged options when max_memory is 0.
WindowOptions engine_window_options(const DedupOptions& options);

/// Throws std::invalid_argument, with the bytes needed, when window.max_memory
/// is set and holds fewer than min(max_entries, kMinMemoryEntries) entries
/// with the sketch index and recent-text cache beside them.
void validate_memory(const DedupOptions& options);

}  // namespace neardup::dedup
