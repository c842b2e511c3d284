#pragma once
// The sliding window of kept fingerprints with an exact pigeonhole index
// (dedup/index/index.h describes the tables).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "dedup/core/options.h"
#include "dedup/core/types.h"

namespace neardup::dedup {

struct WindowStats {
  std::size_t entries = 0;      ///< live entries
  std::size_t bytes = 0;        ///< bytes held by entries and index tables (allocator chunk sizes)
  std::uint64_t evictions = 0;  ///< entries dropped by time or by max_entries
  std::uint64_t probes = 0;
  std::uint64_t candidates = 0;  ///< index cells examined over all probes
  std::size_t cells = 0;         ///< index cells held, including expired ones not yet reclaimed
  std::size_t tables = 0;        ///< index tables, C(blocks, blocks - max_distance)
  int blocks = 0;                ///< pigeonhole blocks in use (the default resolved)
};

/// The most entries a Window holds (WindowOptions::max_entries).
inline constexpr std::size_t kMaxWindowEntries = std::size_t{1} << 30;

/// The fewest entries a window bounded in bytes (WindowOptions::max_memory)
/// must hold (or max_entries, when that is fewer): a smaller max_memory is refused.
inline constexpr std::size_t kMinMemoryEntries = 1024;

/// Throws std::invalid_argument, with a reason, when a Window cannot be built
/// with these options: max_entries > 2^30, a layout whose bucket slots
/// alone would exceed 4 GiB at this max_entries, or a max_memory that holds
/// fewer than min(max_entries, kMinMemoryEntries) entries. An unsupported
/// (blocks, max_distance) pair is left to the Window's constructor. Allocates no table.
void validate(const IndexOptions& index, const WindowOptions& window);

/// The bytes a Window's structures reach for a capacity, without building one:
/// the ring (and scopes), the bucket slots sized for that capacity, and an
/// allowance for buckets that spill out of their slot (two fifths of the
/// slots and 16 KiB; a Window bounded by max_memory evicts early if its spills ever
/// take more). Thread-safe after construction.
class WindowFootprint {
 public:
  /// Throws std::invalid_argument when (blocks, max_distance) is unsupported.
  WindowFootprint(const IndexOptions& index, bool scoped);
  /// The most Window::stats().bytes reaches in a window of at most `entries`
  /// entries whose layout is sized for `entries`. Non-decreasing in `entries`
  /// within [2^j, 2^(j+1)) (the bucket count changes only at powers of two). O(tables' widths).
  std::size_t bytes(std::size_t entries) const;
  /// Without the spill allowance: the ring and bucket slots alone.
  std::size_t fixed_bytes(std::size_t entries) const;

 private:
  std::size_t slot_bytes(std::size_t entries) const;

  std::vector<std::pair<int, std::size_t>> key_widths_;  // key bits, tables with that width
  bool scoped_;
};

/// The largest n in [1, limit] with bytes(n) <= budget, for a `bytes` that is
/// non-decreasing within each [2^j, 2^(j+1)); 0 when none. O(log^2 limit) calls.
template <class Bytes>
std::size_t largest_within(std::size_t limit, std::size_t budget, Bytes&& bytes) {
  std::size_t best = 0;
  for (std::size_t start = 1; start <= limit && start != 0; start *= 2) {
    std::size_t low = start;
    std::size_t high = std::min(limit, 2 * start - 1);
    if (bytes(low) > budget) continue;
    while (low < high) {  // bytes(low) fits
      const std::size_t mid = low + (high - low + 1) / 2;
      if (bytes(mid) <= budget)
        low = mid;
      else
        high = mid - 1;
    }
    best = std::max(best, low);
  }
  return best;
}

/// The entries a Window with these options holds at most: max_entries, or
/// the largest capacity whose WindowFootprint fits max_memory when that is
/// fewer (0 when not even one entry fits). O(log^2 max_entries).
std::size_t window_capacity(const IndexOptions& index, const WindowOptions& window);

/// Not thread-safe: one Window per pipeline thread.
///
/// Entries are evicted in insertion order (FIFO): when an insert finds the window
/// holding max_entries, and whenever the oldest entry's time is strictly older than
/// the newest time seen minus duration. The boundary is inclusive: an entry at
/// exactly newest - duration stays; one millisecond older goes. The clock only moves
/// forward (an out-of-order `now` does not turn it back). max_entries == 0 keeps nothing.
/// With max_memory set, the window holds at most window_capacity() entries
/// (its tables are laid out for that many), and stats().bytes never exceeds
/// max_memory after an insert: should the buckets that spill out of their
/// slots outgrow their allowance, the oldest entries are evicted early until
/// it fits again.
///
/// Memory: about 24 bytes per entry (fingerprint, time and duplicate count, ref in
/// a ring; 4 more for its scope when WindowOptions::scoped) plus, per
/// table, a fixed slot per bucket sized for the ring's capacity (7 bytes per cell,
/// expected load + 2.5 sigma: ~35 bytes per entry over 4 tables at 10M entries),
/// re-sized as the ring grows; stats().bytes counts what is mapped and allocated.
class Window {
 public:
  /// Throws std::invalid_argument when (blocks, max_distance) is unsupported
  /// (0 <= k <= 8, k+1 <= m <= 16; m == 0 picks the default) or max_entries > 2^30.
  Window(const IndexOptions& index, const WindowOptions& window);
  /// Test hook: starts the insertion sequence at `first_sequence`, so tests can
  /// cross the 2^32 wrap of the cells' 32-bit sequence without 4 billion inserts.
  Window(const IndexOptions& index, const WindowOptions& window, std::uint64_t first_sequence);
  ~Window();
  Window(Window&&) noexcept;
  Window& operator=(Window&&) noexcept;

  /// Advances the window's clock to `now` (evicting what falls out), then returns
  /// the live entry nearest to `fp` within max_distance (ties: the oldest), skipping
  /// entries whose ref equals `self`. Exact: the same answer as a brute-force scan.
  /// O(tables + candidates); an exact duplicate returns after the first table.
  /// Only entries of `scope` count (all entries have the zero scope unless
  /// WindowOptions::scoped), and no entry that retire() replaced.
  std::optional<Match> probe(Fingerprint fp, EventTime now, RecordRef self, ScopeId scope = {});

  /// As above, but only entries for which `accept(const Match&) -> bool` holds count:
  /// returns the nearest (then oldest) accepted entry. `accept` must be a pure
  /// predicate; it may be called more than once for the same entry and is only
  /// called for entries that would improve the current best.
  template <class Accept>
  requires std::is_invocable_r_v<bool, Accept&, const Match&> std::optional<Match> probe(
      Fingerprint fp, EventTime now, RecordRef self, Accept&& accept) {
    return probe(fp, now, self, ScopeId{}, std::forward<Accept>(accept));
  }
  template <class Accept>
  requires std::is_invocable_r_v<bool, Accept&, const Match&> std::optional<Match> probe(
      Fingerprint fp, EventTime now, RecordRef self, ScopeId scope, Accept&& accept) {
    auto thunk = [](const void* ctx, const Match& m) -> bool {
      return (*static_cast<std::remove_reference_t<Accept>*>(const_cast<void*>(ctx)))(m);
    };
    return probe_filtered(fp, now, self, scope, thunk, &accept);
  }

  /// A hint for pipelines that know the next fingerprints: starts loading the
  /// index buckets `fp` will probe. Call it one or two items ahead of the probe;
  /// on this machine a random memory access costs ~0.5 us, and a probe has two
  /// dependent ones (bucket header, then its cells), so this hides the first.
  /// Changes no state; never required for correctness. O(tables).
  void prefetch(Fingerprint fp, ScopeId scope = {}) const;
  /// The second stage: reads the (by now cached) bucket headers of `fp` and starts
  /// loading their cells. Call it one item ahead, after prefetch() two items ahead.
  void prefetch_cells(Fingerprint fp, ScopeId scope = {}) const;

  /// Appends an entry; evicts the oldest when full. O(tables) amortized.
  /// Returns the entry's insertion sequence (consecutive, FIFO order); with
  /// max_entries == 0 nothing is kept and the returned sequence is never live.
  /// `scope` is kept only when WindowOptions::scoped; `duplicates` starts the
  /// entry's duplicate count (a refresh carries its original's over).
  /// Times are kept to the millisecond within +-2^47 ms of 1970 (clamped beyond).
  std::uint64_t insert(Fingerprint fp, EventTime time, RecordRef ref, ScopeId scope = {},
                       std::uint32_t duplicates = 0);

  /// Sizes the ring and the bucket slots for `entries` (at most max_entries) at
  /// once, where inserts would grow them by half again and again, each time
  /// moving every cell to its wider slot (in place: the memory grows by
  /// mremap, so only the new part faults in): for callers that know how
  /// many entries come (a window rebuilt from its changelog). Never shrinks;
  /// changes no answer. Throws std::bad_alloc. O(live entries + buckets).
  void reserve(std::size_t entries);

  /// The live entry inserted with `sequence` (distance 0), or nullopt once it
  /// was evicted or retired. Lets a second index over the same entries (e.g. a
  /// sketch index) resolve and age its candidates. O(1).
  std::optional<Match> entry(std::uint64_t sequence) const;

  /// Counts one more duplicate of the live entry `sequence` and returns its
  /// count so far (1 for its first duplicate; it saturates at 65,534, kept in
  /// the entry's time word at no memory cost). 0 when the entry is not live. O(1).
  std::uint32_t count_duplicate(std::uint64_t sequence);

  /// The entry `sequence` no longer matches any probe (a refresh inserted its
  /// successor); it keeps its slot until it is evicted in FIFO order, and
  /// stats().entries still counts it. O(1).
  void retire(std::uint64_t sequence);

  WindowStats stats() const;
  /// The most entries it holds: window_capacity() of its options. O(1).
  std::size_t capacity() const;
  /// Live entries (stats().entries without gathering the rest). O(1).
  std::size_t size() const;
  /// Index cells examined by all probes so far (stats().candidates, likewise). O(1).
  std::uint64_t candidates() const;
  int max_distance() const;

 private:
  using AcceptFn = bool (*)(const void* ctx, const Match&);
  std::optional<Match> probe_filtered(Fingerprint fp, EventTime now, RecordRef self, ScopeId scope,
                                      AcceptFn accept, const void* ctx);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::dedup
