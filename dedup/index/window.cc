#include "dedup/index/window.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "dedup/index/index.h"

namespace neardup::dedup {

namespace {

// Every bucket is swept for expired cells at least once per 2^30 inserts, so no
// cell outlives its entry by more than ~2^30 + max_entries <= 2^31 sequence
// numbers and the 32-bit comparison in CellTables::pop_expired never aliases.
constexpr std::uint64_t kSweepHorizon = std::uint64_t{1} << 30;
// Sweep one bucket every this many inserts when that meets the horizon: cheap,
// and it returns the memory of buckets nobody touches any more.
constexpr std::uint64_t kSweepEvery = 8;

// An entry's time and duplicate count share one word: 48 bits of milliseconds
// (+-4,400 years around 1970; times beyond are clamped) and 16 bits of count,
// so counting duplicates costs no memory. kRetired marks an entry that a
// refresh replaced (it no longer matches and waits for its eviction).
constexpr std::int64_t kTimeLimit = std::int64_t{1} << 47;
constexpr std::uint32_t kRetired = 0xffff;
constexpr std::uint32_t kMaxCount = kRetired - 1;

std::int64_t clamp_time(std::int64_t ms) { return std::clamp(ms, -kTimeLimit, kTimeLimit - 1); }

struct Entry {
  std::uint64_t fp;
  std::int64_t stamp;  // time << 16 | count
  std::uint64_t ref;

  std::int64_t time() const { return stamp >> 16; }
  std::uint32_t count() const { return static_cast<std::uint32_t>(stamp & 0xffff); }
  void set_count(std::uint32_t count) { stamp = (stamp & ~std::int64_t{0xffff}) | count; }
  static std::int64_t make_stamp(std::int64_t ms, std::uint32_t count) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(clamp_time(ms)) << 16) | count;
  }
};

bool no_filter(const void*, const Match&) { return true; }

// At least sizeof(Window::Impl) (checked where it is defined): the footprint counts it.
constexpr std::size_t kImplBytes = 512;

}  // namespace

void validate(const IndexOptions& index, const WindowOptions& window) {
  if (window.max_entries > kMaxWindowEntries) {
    throw std::invalid_argument("window max_entries must be at most 2^30 (" +
                                std::to_string(kMaxWindowEntries) + "), got " +
                                std::to_string(window.max_entries));
  }
  const int blocks =
      index.blocks == 0 ? PigeonholeLayout::default_blocks(index.max_distance) : index.blocks;
  if (!PigeonholeLayout::supported(blocks, index.max_distance)) return;  // the layout explains it
  // The window holds at most this many: its layout is sized for them.
  const std::size_t capacity = window_capacity(index, window);
  if (window.max_memory != 0) {
    const std::size_t least = std::min(window.max_entries, kMinMemoryEntries);
    if (capacity < least) {
      const WindowFootprint footprint(index, window.scoped);
      throw std::invalid_argument("window max_memory " + std::to_string(window.max_memory) +
                                  " bytes holds fewer than " + std::to_string(least) +
                                  " entries; the window needs at least " +
                                  std::to_string(footprint.bytes(least)) + " bytes for them");
    }
  }
  // Bucket headers are allocated up front: refuse layouts whose headers alone are absurd.
  const PigeonholeLayout layout(blocks, index.max_distance, capacity);
  // Bucket slots are allocated up front (at their smallest, for an empty window):
  // refuse layouts whose slots alone are absurd.
  double header_bytes = 0;
  const double slot_bytes =
      static_cast<double>(CellTables::slot_bytes_for(CellTables::slot_cells_for(0, 0)));
  for (std::size_t t = 0; t < layout.tables(); ++t) {
    header_bytes += slot_bytes * static_cast<double>(1ULL << layout.bucket_bits(t));
  }
  if (header_bytes > 4.0 * (1ULL << 30)) {
    throw std::invalid_argument(
        "index layout blocks " + std::to_string(blocks) + " with max_distance " +
        std::to_string(index.max_distance) + " needs " + std::to_string(layout.tables()) +
        " tables; for " + std::to_string(capacity) +
        " entries their bucket slots alone exceed 4 GiB (see `neardup plan`)");
  }
}

WindowFootprint::WindowFootprint(const IndexOptions& index, bool scoped) : scoped_(scoped) {
  // The key widths do not depend on the capacity (only the bucket bits do).
  const PigeonholeLayout layout(index.blocks, index.max_distance, 1);
  for (std::size_t t = 0; t < layout.tables(); ++t) {
    const int bits = layout.key_bits(t);
    auto it = std::find_if(key_widths_.begin(), key_widths_.end(),
                           [&](const auto& w) { return w.first == bits; });
    if (it == key_widths_.end())
      key_widths_.emplace_back(bits, 1);
    else
      ++it->second;
  }
}

std::size_t WindowFootprint::slot_bytes(std::size_t entries) const {
  std::size_t buckets = 0;
  int fewest = 64;
  for (const auto& [key_bits, tables] : key_widths_) {
    const int bits = PigeonholeLayout::bucket_bits_for(key_bits, entries);
    buckets += tables << bits;
    fewest = std::min(fewest, bits);
  }
  return huge_mapped_bytes(buckets *
                           CellTables::slot_bytes_for(CellTables::slot_cells_for(fewest, entries)));
}

std::size_t WindowFootprint::fixed_bytes(std::size_t entries) const {
  const std::size_t ring = huge_mapped_bytes(entries * sizeof(Entry)) +
                           (scoped_ ? huge_mapped_bytes(entries * sizeof(std::uint32_t)) : 0);
  return ring + slot_bytes(entries) + kImplBytes;
}

std::size_t WindowFootprint::bytes(std::size_t entries) const {
  // Spilled buckets: in a full window that keeps evicting, 4-20% of the
  // buckets sit in a spill ring (they move back into their slot only once
  // they hold half a slot), more the fuller the buckets: 11%, 21% and 27% of
  // the slots' bytes at 40,000, 100,000 and 130,000 entries (k=3, random
  // fingerprints, 6 windows' worth of inserts). Two fifths, and a floor for
  // small windows.
  return fixed_bytes(entries) + 2 * slot_bytes(entries) / 5 + (std::size_t{16} << 10);
}

std::size_t window_capacity(const IndexOptions& index, const WindowOptions& window) {
  if (window.max_memory == 0 || window.max_entries == 0) return window.max_entries;
  const WindowFootprint footprint(index, window.scoped);
  return largest_within(window.max_entries, window.max_memory,
                        [&](std::size_t n) { return footprint.bytes(n); });
}

namespace {

const WindowOptions& checked(const IndexOptions& index, const WindowOptions& window) {
  validate(index, window);
  return window;
}

}  // namespace

struct Window::Impl {
  Impl(const IndexOptions& index, const WindowOptions& window, std::uint64_t first_sequence)
      : capacity(window_capacity(index, checked(index, window))),
        layout(index.blocks, index.max_distance, capacity),
        cells(layout),
        options(window),
        k(index.max_distance),
        head_seq(first_sequence),
        tail_seq(first_sequence) {
    // Buckets to sweep per kSweepEvery inserts so a full sweep takes <= kSweepHorizon inserts.
    const std::uint64_t per_cycle = kSweepHorizon / kSweepEvery;
    sweep_batch = (cells.bucket_count() + per_cycle - 1) / per_cycle;
    if (sweep_batch == 0) sweep_batch = 1;
  }

  std::size_t capacity;  // the most live entries: max_entries, or what fits max_memory
  PigeonholeLayout layout;
  CellTables cells;
  WindowOptions options;
  int k;

  // Ring of live entries in sequence order: sequence head_seq sits at ring[head_pos].
  HugeArray<Entry> ring;
  HugeArray<std::uint32_t> scopes;  // beside the ring, same positions; empty unless scoped
  std::size_t ring_cap = 0;
  std::size_t head_pos = 0;
  std::uint64_t head_seq;
  std::uint64_t tail_seq;

  std::int64_t newest = std::numeric_limits<std::int64_t>::min();
  bool clock_started = false;

  std::uint64_t sweep_countdown = kSweepEvery;
  std::size_t sweep_batch = 1;
  std::size_t sweep_cursor = 0;

  WindowStats counters;

  std::size_t live() const { return static_cast<std::size_t>(tail_seq - head_seq); }

  std::size_t pos_of(std::uint64_t seq) const {
    std::size_t pos = head_pos + static_cast<std::size_t>(seq - head_seq);
    if (pos >= ring_cap) pos -= ring_cap;
    return pos;
  }
  Entry& at(std::uint64_t seq) { return ring[pos_of(seq)]; }
  // Scoped windows spread each scope over its own buckets: the bucket index
  // is XORed with bits of a hash of the scope (per table), so a text that is
  // kept in many scopes (the same post from K accounts) does not put K cells
  // in the one bucket every probe of it scans. Exact all the same: a scope's
  // entries and its probes agree on the mapping, and every candidate is
  // verified by its full distance and scope.
  std::uint64_t mix_of(ScopeId scope) const {
    return options.scoped ? mix64(scope.value + 0x9e3779b97f4a7c15ULL) : 0;
  }
  std::uint32_t bucket_of(std::size_t t, std::uint64_t fp, std::uint64_t mix) const {
    const std::uint64_t mask = (std::uint64_t{1} << layout.bucket_bits(t)) - 1;
    return layout.bucket(t, fp) ^
           static_cast<std::uint32_t>(std::rotr(mix, static_cast<int>(7 * t)) & mask);
  }
  bool live_seq(std::uint64_t seq) const { return seq >= head_seq && seq < tail_seq; }
  ScopeId scope_at(std::size_t pos) const {
    return options.scoped ? ScopeId{scopes[pos]} : ScopeId{};
  }
  Match match_at(std::uint64_t seq, int distance) const {
    const std::size_t pos = pos_of(seq);
    const Entry& e = ring[pos];
    return Match{RecordRef{e.ref},
                 distance,
                 EventTime{e.time()},
                 Fingerprint{e.fp},
                 seq,
                 scope_at(pos),
                 e.count() == kRetired ? 0 : e.count()};
  }

  void evict_oldest() {
    ++head_seq;
    if (++head_pos == ring_cap) head_pos = 0;
    ++counters.evictions;
  }

  void advance(EventTime now) {
    const std::int64_t ms = clamp_time(now.ms);
    if (!clock_started || ms > newest) {
      newest = ms;
      clock_started = true;
    }
    // Saturating newest - duration: an entry is evicted when time < horizon.
    std::int64_t horizon;
    if (__builtin_sub_overflow(newest, static_cast<std::int64_t>(options.duration.count()),
                               &horizon)) {
      horizon = options.duration.count() > 0 ? std::numeric_limits<std::int64_t>::min()
                                             : std::numeric_limits<std::int64_t>::max();
    }
    while (live() != 0 && ring[head_pos].time() < horizon) evict_oldest();
  }

  // Grows the ring by half (capped at capacity): no slack once the window is full.
  void grow_ring() {
    std::size_t cap = ring_cap + ring_cap / 2;
    if (cap < 1024) cap = 1024;
    resize_ring(cap);
  }

  // Grows the ring to `cap` entries (capped at capacity, at least live())
  // in place and re-sizes the bucket slots for it. The live entries keep
  // their order: those that wrapped around the old end move once, to right
  // after it or (when fewer fit there) the front part to the new end.
  void resize_ring(std::size_t cap) {
    if (cap > capacity) cap = capacity;
    if (cap > ring_cap) {
      const std::size_t old_cap = ring_cap;
      const std::size_t n = live();
      ring.grow(cap);
      if (options.scoped) scopes.grow(cap);
      if (head_pos + n > old_cap) {
        const std::size_t wrapped = head_pos + n - old_cap;  // at [0, wrapped)
        if (wrapped <= cap - old_cap) {
          std::memcpy(&ring[old_cap], &ring[0], wrapped * sizeof(Entry));
          if (options.scoped)
            std::memcpy(&scopes[old_cap], &scopes[0], wrapped * sizeof(std::uint32_t));
        } else {
          const std::size_t front = old_cap - head_pos;  // at [head_pos, old_cap)
          std::memmove(&ring[cap - front], &ring[head_pos], front * sizeof(Entry));
          if (options.scoped)
            std::memmove(&scopes[cap - front], &scopes[head_pos], front * sizeof(std::uint32_t));
          head_pos = cap - front;
        }
      }
      ring_cap = cap;
    }
    // Bucket slots sized for the new capacity: buckets rarely spill, and a probe
    // finds a bucket's cells at a position computed from the fingerprint.
    cells.reserve(cap, static_cast<std::uint32_t>(head_seq), static_cast<std::uint32_t>(live()));
  }

  std::size_t bytes() const { return ring.bytes() + scopes.bytes() + cells.bytes() + sizeof(Impl); }

  // Evicts the oldest entry and pops its cells at once (eviction alone leaves
  // them for later inserts to pop), so a spilled bucket can shrink.
  void evict_and_pop() {
    const std::size_t pos = head_pos;
    const std::uint64_t fp = ring[pos].fp;
    const std::uint64_t mix = mix_of(scope_at(pos));
    evict_oldest();
    const auto oldest = static_cast<std::uint32_t>(head_seq);
    const auto count = static_cast<std::uint32_t>(live());
    for (std::size_t t = 0; t < layout.tables(); ++t)
      cells.pop_expired(cells.bucket(t, bucket_of(t, fp, mix)), oldest, count);
  }

  void sweep() {
    const auto oldest = static_cast<std::uint32_t>(head_seq);
    const auto count = static_cast<std::uint32_t>(live());
    for (std::size_t i = 0; i < sweep_batch; ++i) {
      cells.pop_expired(cells.bucket_at(sweep_cursor), oldest, count);
      if (++sweep_cursor == cells.bucket_count()) sweep_cursor = 0;
    }
  }
};

Window::Window(const IndexOptions& index, const WindowOptions& window) : Window(index, window, 0) {}

Window::Window(const IndexOptions& index, const WindowOptions& window, std::uint64_t first_sequence)
    : impl_(std::make_unique<Impl>(index, window, first_sequence)) {
  static_assert(sizeof(Impl) <= kImplBytes);
}

Window::~Window() = default;
Window::Window(Window&&) noexcept = default;
Window& Window::operator=(Window&&) noexcept = default;

std::optional<Match> Window::probe(Fingerprint fp, EventTime now, RecordRef self, ScopeId scope) {
  return probe_filtered(fp, now, self, scope, &no_filter, nullptr);
}

std::optional<Match> Window::probe_filtered(Fingerprint fp, EventTime now, RecordRef self,
                                            ScopeId scope, AcceptFn accept, const void* ctx) {
  Impl& w = *impl_;
  w.advance(now);
  ++w.counters.probes;
  if (w.live() == 0) return std::nullopt;

  const auto oldest = static_cast<std::uint32_t>(w.head_seq);
  const auto live = static_cast<std::uint32_t>(w.live());
  const int k = w.k;
  const std::uint64_t mix = w.mix_of(scope);
  int best_distance = k + 1;
  std::uint64_t best_seq = 0;
  std::optional<Match> best;
  std::uint64_t examined = 0;

  // Tables go in groups: start loading every bucket of the group (headers, then
  // residues) before scanning any, so the cache misses overlap.
  constexpr std::size_t kGroup = 8;
  CellTables::Bucket* buckets[kGroup];
  std::uint32_t residues[kGroup];
  bool done = false;
  for (std::size_t group = 0; group < w.layout.tables() && !done; group += kGroup) {
    const std::size_t n = std::min(kGroup, w.layout.tables() - group);
    for (std::size_t i = 0; i < n; ++i) {
      buckets[i] = &w.cells.bucket(group + i, w.bucket_of(group + i, fp.bits, mix));
      residues[i] = w.layout.residue(group + i, fp.bits);
      w.cells.prefetch_header(*buckets[i]);
    }
    for (std::size_t i = 0; i < n; ++i) w.cells.prefetch_cells(*buckets[i]);
    for (std::size_t i = 0; i < n && !done; ++i) {
      // Expired cells are not popped here (that would read the sequence array
      // up front, a cache miss per table): the rare filter survivors are checked
      // for liveness instead, and inserts pop.
      const CellTables::Bucket& b = *buckets[i];
      bool exact = false;
      examined += w.cells.scan(b, residues[i], k, [&](std::uint32_t seq32) {
        const std::uint32_t age = static_cast<std::uint32_t>(seq32 - oldest);
        if (age >= live) return false;  // expired, not yet popped
        const std::uint64_t seq = w.head_seq + age;
        const std::size_t pos = w.pos_of(seq);
        const Entry& e = w.ring[pos];
        const int d = std::popcount(e.fp ^ fp.bits);
        if (d > best_distance || (d == best_distance && seq >= best_seq) || e.ref == self.value)
          return false;
        if (e.count() == kRetired || (w.options.scoped && w.scopes[pos] != scope.value))
          return false;
        const Match m = w.match_at(seq, d);
        if (!accept(ctx, m)) return false;
        best = m;
        best_distance = d;
        best_seq = seq;
        // Every entry at distance 0 shares this bucket and cells run oldest first,
        // so the first accepted exact duplicate is the answer.
        exact = d == 0;
        return exact;
      });
      done = exact || best_distance == 0;
    }
  }
  w.counters.candidates += examined;
  return best;
}

void Window::prefetch(Fingerprint fp, ScopeId scope) const {
  Impl& w = *impl_;
  const std::uint64_t mix = w.mix_of(scope);
  for (std::size_t t = 0; t < w.layout.tables(); ++t) {
    w.cells.prefetch_header(w.cells.bucket(t, w.bucket_of(t, fp.bits, mix)));
  }
}

void Window::prefetch_cells(Fingerprint fp, ScopeId scope) const {
  Impl& w = *impl_;
  const std::uint64_t mix = w.mix_of(scope);
  for (std::size_t t = 0; t < w.layout.tables(); ++t) {
    w.cells.prefetch_cells(w.cells.bucket(t, w.bucket_of(t, fp.bits, mix)));
  }
}

std::optional<Match> Window::entry(std::uint64_t sequence) const {
  const Impl& w = *impl_;
  if (!w.live_seq(sequence) || w.ring[w.pos_of(sequence)].count() == kRetired) return std::nullopt;
  return w.match_at(sequence, 0);
}

std::uint32_t Window::count_duplicate(std::uint64_t sequence) {
  Impl& w = *impl_;
  if (!w.live_seq(sequence)) return 0;
  Entry& e = w.at(sequence);
  const std::uint32_t count = e.count();
  if (count == kRetired) return 0;
  if (count < kMaxCount) e.set_count(count + 1);
  return e.count();
}

void Window::reserve(std::size_t entries) {
  Impl& w = *impl_;
  const std::size_t cap = std::min(entries, w.capacity);
  if (cap > w.ring_cap) w.resize_ring(cap);
}

void Window::retire(std::uint64_t sequence) {
  Impl& w = *impl_;
  if (w.live_seq(sequence)) w.at(sequence).set_count(kRetired);
}

std::uint64_t Window::insert(Fingerprint fp, EventTime time, RecordRef ref, ScopeId scope,
                             std::uint32_t duplicates) {
  Impl& w = *impl_;
  w.advance(time);
  if (w.capacity == 0) return w.tail_seq - 1;
  if (w.live() == w.capacity) w.evict_oldest();
  if (w.live() == w.ring_cap) w.grow_ring();

  const std::uint64_t seq = w.tail_seq;
  std::size_t pos = w.head_pos + w.live();
  if (pos >= w.ring_cap) pos -= w.ring_cap;
  w.ring[pos] =
      Entry{fp.bits, Entry::make_stamp(time.ms, std::min(duplicates, kMaxCount)), ref.value};
  if (w.options.scoped) w.scopes[pos] = scope.value;
  ++w.tail_seq;

  const auto oldest = static_cast<std::uint32_t>(w.head_seq);
  const auto live = static_cast<std::uint32_t>(w.live());
  const std::uint64_t mix = w.mix_of(scope);
  // Tables go in groups, as in probe_filtered: every bucket's front sequence
  // and tail are requested before any is popped. Whether a front cell has
  // expired is a coin toss the branch predictor loses, so popping table by
  // table would wait out each table's miss in turn.
  constexpr std::size_t kGroup = 8;
  CellTables::Bucket* buckets[kGroup];
  for (std::size_t group = 0; group < w.layout.tables(); group += kGroup) {
    const std::size_t n = std::min(kGroup, w.layout.tables() - group);
    for (std::size_t i = 0; i < n; ++i) {
      buckets[i] = &w.cells.bucket(group + i, w.bucket_of(group + i, fp.bits, mix));
      __builtin_prefetch(buckets[i]);
    }
    for (std::size_t i = 0; i < n; ++i) w.cells.prefetch_ends(*buckets[i]);
    for (std::size_t i = 0; i < n; ++i) {
      CellTables::Bucket& b = *buckets[i];
      w.cells.pop_expired(b, oldest, live);
      w.cells.push(b, w.layout.residue(group + i, fp.bits), static_cast<std::uint32_t>(seq));
    }
  }
  if (--w.sweep_countdown == 0) {
    w.sweep_countdown = kSweepEvery;
    w.sweep();
  }
  // The spill allowance of the footprint is rarely used up; when it is, the
  // oldest entries go early (never the one just inserted).
  if (w.options.max_memory != 0) {
    while (w.bytes() > w.options.max_memory && w.live() > 1) w.evict_and_pop();
  }
  return seq;
}

WindowStats Window::stats() const {
  const Impl& w = *impl_;
  WindowStats s = w.counters;
  s.entries = w.live();
  s.bytes = w.bytes();
  s.cells = w.cells.cells();
  s.tables = w.layout.tables();
  s.blocks = w.layout.blocks();
  return s;
}

std::size_t Window::size() const { return impl_->live(); }

std::size_t Window::capacity() const { return impl_->capacity; }

std::uint64_t Window::candidates() const { return impl_->counters.candidates; }

int Window::max_distance() const { return impl_->k; }

}  // namespace neardup::dedup
