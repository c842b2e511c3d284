// What metrics cost the service (issue: counting must not slow the hot path).
// The pipeline thread only bumps plain counters in its snapshot; every
// progress tick (500 ms by default) it converts and publishes a copy, and each
// scrape renders the last copy. These benchmarks time those two steps, so the
// share of a core they take is publish_time * 2/s + render_time * scrapes/s.
#include <benchmark/benchmark.h>

#include <string>

#include "metrics/metrics.h"
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

}  // namespace
