// Sliding-window index benchmarks: probe+insert with a full window (so every
// insert evicts), and query-only probes at radius 3, both at k=3 with the
// default layout (4 blocks, 4 tables of 16-bit keys).
//
//   build/index/bench/neardup_bench --benchmark_filter=Window

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "bench/feed.h"
#include "dedup/index/index.h"
#include "dedup/index/window.h"

namespace neardup::dedup {
namespace {

using bench::splitmix64;

struct FilledWindow {
  std::unique_ptr<Window> window;
  std::uint64_t rng = 12345;
  std::uint64_t next_ref = 0;
};

// Filling 10M entries takes seconds: do it once per size and reuse it across
// benchmark runs (probe+insert keeps it full, so its shape does not change).
FilledWindow& filled(std::size_t entries) {
  static std::map<std::size_t, FilledWindow> windows;
  FilledWindow& w = windows[entries];
  if (!w.window) {
    WindowOptions options;
    options.max_entries = entries;
    options.duration = std::chrono::hours(24 * 365);
    w.window = std::make_unique<Window>(IndexOptions{3, 0}, options);
    for (std::size_t i = 0; i < entries; ++i) {
      w.window->insert(Fingerprint{splitmix64(w.rng)}, EventTime{0}, RecordRef{w.next_ref++});
    }
  }
  return w;
}

void set_counters(benchmark::State& state, const Window& window, std::uint64_t probes_before,
                  std::uint64_t candidates_before) {
  const WindowStats s = window.stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_entry"] = static_cast<double>(s.bytes) / static_cast<double>(s.entries);
  state.counters["entries"] = static_cast<double>(s.entries);
  state.counters["cells_per_probe"] = static_cast<double>(s.candidates - candidates_before) /
                                      static_cast<double>(s.probes - probes_before);
}

/// What the engine does per unique-looking message: probe, insert when nothing matched.
int probe_or_insert(Window& window, Fingerprint fp, RecordRef ref) {
  if (window.probe(fp, EventTime{0}, ref)) return 1;
  window.insert(fp, EventTime{0}, ref);
  return 0;
}

void BM_WindowProbeInsert(benchmark::State& state) {
  FilledWindow& w = filled(static_cast<std::size_t>(state.range(0)));
  Window& window = *w.window;
  const WindowStats before = window.stats();
  std::uint64_t duplicates = 0;
  for (auto _ : state) {
    const Fingerprint fp{splitmix64(w.rng)};
    duplicates += probe_or_insert(window, fp, RecordRef{w.next_ref++});
  }
  benchmark::DoNotOptimize(duplicates);
  set_counters(state, window, before.probes, before.candidates);
}
BENCHMARK(BM_WindowProbeInsert)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Unit(benchmark::kNanosecond);

// As above, but the caller hints the fingerprints ahead, as a batch pipeline can:
// bucket headers two items ahead (Window::prefetch), cells one item ahead
// (Window::prefetch_cells), so the probe finds its data in cache.
void BM_WindowProbeInsertPrefetched(benchmark::State& state) {
  FilledWindow& w = filled(static_cast<std::size_t>(state.range(0)));
  Window& window = *w.window;
  const WindowStats before = window.stats();
  std::uint64_t duplicates = 0;
  Fingerprint ahead[2] = {Fingerprint{splitmix64(w.rng)}, Fingerprint{splitmix64(w.rng)}};
  for (auto _ : state) {
    const Fingerprint fp = ahead[0];
    ahead[0] = ahead[1];
    ahead[1] = Fingerprint{splitmix64(w.rng)};
    window.prefetch(ahead[1]);
    window.prefetch_cells(ahead[0]);
    duplicates += probe_or_insert(window, fp, RecordRef{w.next_ref++});
  }
  benchmark::DoNotOptimize(duplicates);
  set_counters(state, window, before.probes, before.candidates);
}
BENCHMARK(BM_WindowProbeInsertPrefetched)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Unit(benchmark::kNanosecond);

// The floor under BM_WindowProbeInsert/10000000 that no code change of the
// default layout can go below: the same memory reads and writes with no
// work on them. Per op, as the probe and insert at 10M entries (4 tables,
// ~153 cells a bucket): for each table a random slot of the window's size,
// its header and packed 3-byte residues read (8 + 3 * 153 bytes), the
// sequence at the bucket's front read and one at its tail written (two more
// random lines), and one 24-byte ring entry written; all of it in an array
// as large as the window's (bytes_per_entry * entries, huge pages as the
// window), and the next op's slots prefetched one op ahead as the engine does.
void BM_WindowMemoryFloor(benchmark::State& state) {
  const auto entries = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kSlot = 1344;  // the window's slot stride at 10M entries
  constexpr std::size_t kTables = 4;
  const std::size_t slots = kTables * 65536;
  HugeArray<std::uint64_t> memory(slots * kSlot / 8);
  HugeArray<std::uint64_t> ring(entries * 3);
  for (std::size_t i = 0; i < memory.size(); i += 512) memory[i] = i;  // fault every page in
  for (std::size_t i = 0; i < ring.size(); i += 512) ring[i] = i;
  std::uint64_t rng = 99, sum = 0, tail = 0;
  auto slot_of = [&](std::uint64_t r, std::size_t t) {
    return reinterpret_cast<const unsigned char*>(memory.begin()) +
           (t * 65536 + ((r >> (16 * t)) & 0xffff)) * kSlot;
  };
  std::uint64_t next = splitmix64(rng);
  for (auto _ : state) {
    const std::uint64_t r = next;
    next = splitmix64(rng);
    for (std::size_t t = 0; t < kTables; ++t)
      for (std::size_t l = 0; l < 8; ++l) __builtin_prefetch(slot_of(next, t) + 64 * l);
    for (std::size_t t = 0; t < kTables; ++t) {
      const unsigned char* slot = slot_of(r, t);
      for (std::size_t b = 0; b < 8 + 3 * 153; b += 64) {
        std::uint64_t word;
        std::memcpy(&word, slot + b, 8);
        sum += word;
      }
      // front sequence (read) and tail sequence (written): the back half of the slot
      std::uint64_t word;
      std::memcpy(&word, slot + 8 + 3 * 185 + 4 * ((r >> 7) % 185), 4);
      sum += word;
      auto* write = const_cast<unsigned char*>(slot) + 8 + 3 * 185 + 4 * ((r >> 23) % 185);
      std::memcpy(write, &sum, 4);
    }
    ring[(tail++ % entries) * 3] = sum;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WindowMemoryFloor)->Arg(10'000'000)->Unit(benchmark::kNanosecond);

// The floor under BM_WindowProbeInsert/10000000 itself, which knows each
// fingerprint only when its turn comes: the memory of BM_WindowMemoryFloor
// with no op ahead to overlap, and the front and tail sequences located from
// the header just read, as the real buckets are (a second, dependent miss).
// What separates this floor from the one above is latency, not bandwidth.
void BM_WindowLatencyFloor(benchmark::State& state) {
  const auto entries = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kSlot = 1344;
  constexpr std::size_t kTables = 4;
  const std::size_t slots = kTables * 65536;
  HugeArray<std::uint64_t> memory(slots * kSlot / 8);
  HugeArray<std::uint64_t> ring(entries * 3);
  std::uint64_t rng = 99, sum = 0, tail = 0;
  for (std::size_t i = 0; i < memory.size(); i += kSlot / 8) memory[i] = splitmix64(rng);
  for (std::size_t i = 0; i < ring.size(); i += 512) ring[i] = i;
  auto slot_of = [&](std::uint64_t r, std::size_t t) {
    return reinterpret_cast<unsigned char*>(memory.begin()) +
           (t * 65536 + ((r >> (16 * t)) & 0xffff)) * kSlot;
  };
  for (auto _ : state) {
    const std::uint64_t r = splitmix64(rng);
    std::uint64_t header[kTables];
    for (std::size_t t = 0; t < kTables; ++t) {
      const unsigned char* slot = slot_of(r, t);
      for (std::size_t l = 0; l < 8; ++l) __builtin_prefetch(slot + 64 * l);
    }
    for (std::size_t t = 0; t < kTables; ++t) std::memcpy(&header[t], slot_of(r, t), 8);
    for (std::size_t t = 0; t < kTables; ++t) {
      unsigned char* slot = slot_of(r, t);
      __builtin_prefetch(slot + 8 + 3 * 185 + 4 * ((header[t] + sum) % 185));
      __builtin_prefetch(slot + 8 + 3 * 185 + 4 * ((header[t] >> 8) % 185));
    }
    for (std::size_t t = 0; t < kTables; ++t) {
      unsigned char* slot = slot_of(r, t);
      for (std::size_t b = 0; b < 8 + 3 * 153; b += 64) {
        std::uint64_t word;
        std::memcpy(&word, slot + b, 8);
        sum += word;
      }
      std::uint32_t front;
      std::memcpy(&front, slot + 8 + 3 * 185 + 4 * ((header[t] + sum) % 185), 4);
      sum += front;
      std::memcpy(slot + 8 + 3 * 185 + 4 * ((header[t] >> 8) % 185), &sum, 4);
    }
    ring[(tail++ % entries) * 3] = sum;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WindowLatencyFloor)->Arg(10'000'000)->Unit(benchmark::kNanosecond);

// The probe's own work without its memory waits: the same fingerprint probed
// `repeat` times per iteration (the repeats find its buckets cached), so
// (time at 5 - time at 1) / 4 is one cached probe at 10M entries.
void BM_WindowProbeRepeated(benchmark::State& state) {
  FilledWindow& w = filled(10'000'000);
  Window& window = *w.window;
  const auto repeat = state.range(0);
  std::uint64_t query_rng = 777;
  std::uint64_t found = 0;
  for (auto _ : state) {
    const Fingerprint fp{splitmix64(query_rng)};
    for (int r = 0; r < repeat; ++r)
      found += window.probe(fp, EventTime{0}, RecordRef{~0ULL}).has_value();
  }
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WindowProbeRepeated)->Arg(1)->Arg(5);

// The next fingerprints of a FilledWindow's stream, `ahead` + 1 of them
// known at a time, with the hints a pipeline that far ahead gives: bucket
// headers `ahead` items ahead, cells ahead/2 items ahead (none at 0).
class Lookahead {
 public:
  Lookahead(FilledWindow& w, std::size_t ahead) : w_(w), ahead_(ahead), ring_(ahead + 1) {
    for (Fingerprint& fp : ring_) fp = Fingerprint{splitmix64(w_.rng)};
  }
  /// The next fingerprint, after hinting the ones ahead of it.
  Fingerprint next() {
    const std::size_t n = ring_.size();
    const Fingerprint fp = ring_[i_ % n];
    if (ahead_ > 0) {
      w_.window->prefetch(ring_[(i_ + ahead_) % n]);
      w_.window->prefetch_cells(ring_[(i_ + ahead_ / 2) % n]);
    }
    ring_[i_ % n] = Fingerprint{splitmix64(w_.rng)};
    ++i_;
    return fp;
  }

 private:
  FilledWindow& w_;
  std::size_t ahead_;
  std::vector<Fingerprint> ring_;
  std::size_t i_ = 0;
};

// Probe+insert at 10M entries with the hints further ahead
// (BM_WindowProbeInsertPrefetched is ahead = 2).
void BM_WindowProbeInsertAhead(benchmark::State& state) {
  FilledWindow& w = filled(10'000'000);
  Lookahead stream(w, static_cast<std::size_t>(state.range(0)));
  std::uint64_t duplicates = 0;
  for (auto _ : state)
    duplicates += probe_or_insert(*w.window, stream.next(), RecordRef{w.next_ref++});
  benchmark::DoNotOptimize(duplicates);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WindowProbeInsertAhead)->Arg(2)->Arg(4)->Arg(8)->Arg(16);

// Insert alone at 10M entries (every insert evicts), hinted `ahead` items
// ahead (0: no hint).
void BM_WindowInsertOnly(benchmark::State& state) {
  FilledWindow& w = filled(10'000'000);
  Lookahead stream(w, static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) w.window->insert(stream.next(), EventTime{0}, RecordRef{w.next_ref++});
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WindowInsertOnly)->Arg(0)->Arg(2)->Arg(8);

// Query-only, radius 3 (compare: Faiss IndexBinaryMultiHash at ~6.5k queries/s here).
void BM_WindowQueryRadius3(benchmark::State& state) {
  FilledWindow& w = filled(static_cast<std::size_t>(state.range(0)));
  Window& window = *w.window;
  const WindowStats before = window.stats();
  std::uint64_t query_rng = 777;
  std::uint64_t found = 0;
  for (auto _ : state) {
    auto match = window.probe(Fingerprint{splitmix64(query_rng)}, EventTime{0}, RecordRef{~0ULL});
    found += match.has_value();
  }
  benchmark::DoNotOptimize(found);
  set_counters(state, window, before.probes, before.candidates);
}
BENCHMARK(BM_WindowQueryRadius3)->Arg(10'000'000)->Unit(benchmark::kNanosecond);

// A window rebuilt from its changelog (stream/changelog/window_restore.cc): N entries
// inserted into an empty window of the default max_entries (10M). mode 0: it
// grows as it goes (by half, each step moving every entry and cell); 1: sized
// at once with Window::reserve; 2: reserve and each insert's buckets
// prefetched 8 entries ahead, as restore_window does.
void BM_WindowRebuild(benchmark::State& state) {
  const auto entries = static_cast<std::size_t>(state.range(0));
  const std::int64_t mode = state.range(1);
  WindowOptions options;  // the default max_entries
  options.duration = std::chrono::hours(24 * 365);
  constexpr std::size_t kAhead = 8;
  for (auto _ : state) {
    Window window(IndexOptions{3, 0}, options);
    if (mode >= 1) window.reserve(entries);
    std::uint64_t rng = 12345, ahead_rng = 12345;
    if (mode == 2)
      for (std::size_t i = 0; i < kAhead; ++i) window.prefetch(Fingerprint{splitmix64(ahead_rng)});
    for (std::size_t i = 0; i < entries; ++i) {
      if (mode == 2) window.prefetch(Fingerprint{splitmix64(ahead_rng)});
      window.insert(Fingerprint{splitmix64(rng)}, EventTime{0}, RecordRef{i});
    }
    benchmark::DoNotOptimize(window.stats().entries);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(entries));
}
BENCHMARK(BM_WindowRebuild)
    ->ArgsProduct({{100'000, 1'000'000, 3'000'000, 10'000'000}, {0, 1, 2}})
    ->ArgNames({"entries", "mode"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace neardup::dedup
