#pragma once
// The sliding window of kept fingerprints with an exact pigeonhole index.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "dedup/options.h"
#include "dedup/types.h"

namespace neardup::dedup {

struct WindowStats {
  std::size_t entries = 0;          ///< live entries
  std::size_t bytes = 0;            ///< bytes held by entries and index tables
  std::uint64_t evictions = 0;      ///< entries dropped by time or by max_entries
  std::uint64_t probes = 0;
  std::uint64_t candidates = 0;     ///< index candidates examined over all probes
};

/// Not thread-safe: one Window per pipeline thread.
/// Entries are evicted in insertion order (FIFO) when the window holds max_entries,
/// or when the oldest entry's time is older than the newest time seen minus duration.
class Window {
 public:
  /// Throws std::invalid_argument when (blocks, max_distance) is unsupported.
  Window(const IndexOptions& index, const WindowOptions& window);
  ~Window();
  Window(Window&&) noexcept;
  Window& operator=(Window&&) noexcept;

  /// Advances the window's clock to `now` (evicting what falls out), then returns
  /// the live entry nearest to `fp` within max_distance (ties: the oldest), skipping
  /// entries whose ref equals `self`. Exact: the same answer as a brute-force scan.
  /// O(tables + candidates).
  std::optional<Match> probe(Fingerprint fp, EventTime now, RecordRef self);

  /// Appends an entry; evicts the oldest when full. O(tables) amortized.
  void insert(Fingerprint fp, EventTime time, RecordRef ref);

  WindowStats stats() const;
  int max_distance() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::dedup
