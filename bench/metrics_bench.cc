// What metrics cost the service (counting must not slow the hot path).
// The pipeline thread only bumps plain counters in its snapshot; every
// progress tick (500 ms by default) it converts and publishes a copy, and each
// scrape renders the last copy. These benchmarks time those two steps, so the
// share of a core they take is publish_time * 2/s + render_time * scrapes/s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/page/recent_pairs.h"
#include "metrics/render.h"

namespace {

neardup::metrics::ServiceStats busy_stats() {
  auto stats = neardup::metrics::ServiceStats::with_buckets(3);
  for (int i = 0; i < 1000; ++i) {
    stats.match_distance.observe(i % 4);
    stats.candidates_per_probe.observe(i % 700);
    stats.processing_seconds.observe(1e-6 * (i % 50));
    stats.end_to_end_latency_seconds.observe(1e-3 * (i % 500));
  }
  for (int p = 0; p < 8; ++p) stats.consumer_lag[{"input", p}] = 100 * p;
  stats.unique = 800000;
  stats.duplicate = 200000;
  return stats;
}

void BM_MetricsPublish(benchmark::State& state) {
  neardup::metrics::Exporter exporter("127.0.0.1:0", {"bench", {{"k", "3"}}});
  const auto stats = busy_stats();
  for (auto _ : state) exporter.publish(stats);
}
BENCHMARK(BM_MetricsPublish);

void BM_MetricsRender(benchmark::State& state) {
  const auto stats = busy_stats();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = neardup::metrics::render_text(stats, {"bench", {{"k", "3"}}}, true);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsRender);

// The page's record on the pipeline thread (metrics/page/recent_pairs.h): a kept
// message's text into the cache (~200-byte ASCII texts, the cache full and
// turning over), and a duplicate pair into the ring with its original's text.
std::string bench_text(std::uint64_t i) {
  std::string text = "Oslo: the orchestra cancels the old bridge after a record year; ";
  text += std::to_string(i);
  text +=
      " people signed up in the first week. Tickets sell out within hours every year. "
      "Critics called the decision rushed.";
  return text;
}

void BM_RecentPairsKept(benchmark::State& state) {
  neardup::metrics::RecentPairs pairs;
  std::vector<std::string> texts;
  for (std::uint64_t i = 0; i < 8192; ++i) texts.push_back(bench_text(i));
  std::uint64_t key = 0;
  for (auto _ : state) {
    pairs.kept(key, texts[key & 8191]);
    ++key;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(texts[0].size()));
}
BENCHMARK(BM_RecentPairsKept);

// A duplicate recorded for the page, its original one of range(0) originals:
// 4096 turn the originals table (256) and the stories of the hour (64) over,
// each duplicate's original taking the least one's place; 16 (a few big
// stories) find theirs in both tables.
void BM_RecentPairsDuplicate(benchmark::State& state) {
  neardup::metrics::RecentPairs pairs;
  for (std::uint64_t key = 0; key < 4096; ++key) pairs.kept(key, bench_text(key));
  const std::string dup = bench_text(1) + " #news";
  const auto mask = static_cast<std::uint64_t>(state.range(0)) - 1;
  std::uint64_t i = 0;
  for (auto _ : state) {
    neardup::metrics::DuplicateSeen seen;
    seen.original_key = (i * 7) & mask;
    seen.original = {"input", 0, static_cast<std::int64_t>(seen.original_key)};
    seen.duplicate = {"input", 0, static_cast<std::int64_t>(5000 + i)};
    seen.duplicate_text = dup;
    seen.distance = 3;
    pairs.duplicate(seen);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecentPairsDuplicate)->ArgName("originals")->Arg(4096)->Arg(16);

}  // namespace
