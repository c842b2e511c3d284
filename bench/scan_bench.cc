// `neardup scan` throughput over ~200-byte JSON Lines records (target >= 400k records/s).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/json.h"
#include "bench/feed.h"
#include "dedup/engine/engine.h"
#include "dedup/fingerprint/fingerprinter.h"
#include "stream/records/json_out.h"
#include "stream/scan/scan.h"

namespace {

// ~200-byte JSON Lines records, ~20% edited reposts (bench/feed.h).
std::string make_feed(std::size_t records) {
  neardup::bench::FeedGenerator generator;
  std::string feed, line;
  std::size_t i = 0;
  for (const auto& text : generator.feed(records, 170)) {
    line = "{\"id\":" + std::to_string(++i) + ",\"text\":";
    neardup::base::append_json_string(line, text);
    line += "}\n";
    feed += line;
  }
  return feed;
}

void BM_ScanJsonl200Bytes(benchmark::State& state) {
  const std::size_t records = static_cast<std::size_t>(state.range(0));
  std::string feed = make_feed(records);
  neardup::config::Config config;
  config.input.format = neardup::config::InputFormat::json;
  std::FILE* sink = std::fopen("/dev/null", "w");
  // A regular file, as `neardup scan FILE` reads (scan sizes its window from the file's size).
  std::FILE* in = std::tmpfile();
  if (in == nullptr || std::fwrite(feed.data(), 1, feed.size(), in) != feed.size()) {
    state.SkipWithError("cannot write the feed to a temporary file");
    if (in != nullptr) std::fclose(in);
    std::fclose(sink);
    return;
  }
  for (auto _ : state) {
    std::rewind(in);
    const auto stats = neardup::stream::scan_stream(config, in, sink);
    benchmark::DoNotOptimize(stats.duplicate);
    state.counters["duplicate_share"] =
        static_cast<double>(stats.duplicate) / static_cast<double>(stats.records);
  }
  std::fclose(in);
  std::fclose(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * records));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * feed.size()));
  state.counters["bytes_per_record"] =
      static_cast<double>(feed.size()) / static_cast<double>(records);
}
BENCHMARK(BM_ScanJsonl200Bytes)->Arg(200000)->Unit(benchmark::kMillisecond);

// The bare loop that BM_ScanJsonl200Bytes is held against: the same texts,
// already decoded and in memory, analyzed as the default configuration
// analyzes each record (normalize, features, SimHash, MinHash sketch), with no
// JSON, no window, no decision and no output. bench/scan_bare.sh takes the
// ratio of the two in one run.
void BM_FingerprintLoop200Bytes(benchmark::State& state) {
  const std::size_t records = static_cast<std::size_t>(state.range(0));
  neardup::bench::FeedGenerator generator;
  const std::vector<std::string> texts = generator.feed(records, 170);
  const neardup::config::Config config;
  neardup::dedup::Fingerprinter fingerprinter(config.dedup.text, config.dedup.sketch);
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& text : texts) {
      const neardup::dedup::Analysis analysis = neardup::dedup::analyze(fingerprinter, text);
      sum += analysis.summary.fingerprint.bits;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * records));
}
BENCHMARK(BM_FingerprintLoop200Bytes)->Arg(200000)->Unit(benchmark::kMillisecond);

// The same scan with its analysis on `threads` threads (scan_stream's threads;
// `neardup scan --threads`): wall-clock time, since the point is the cores.
// bench/scan_threads.sh measures the binary the same way and prints the ratio.
void BM_ScanJsonl200BytesThreads(benchmark::State& state) {
  const std::size_t records = static_cast<std::size_t>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  std::string feed = make_feed(records);
  neardup::config::Config config;
  config.input.format = neardup::config::InputFormat::json;
  std::FILE* sink = std::fopen("/dev/null", "w");
  for (auto _ : state) {
    std::FILE* in = fmemopen(feed.data(), feed.size(), "r");
    const auto stats = neardup::stream::scan_stream(config, in, sink, threads);
    std::fclose(in);
    benchmark::DoNotOptimize(stats.duplicate);
  }
  std::fclose(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * records));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * feed.size()));
}
BENCHMARK(BM_ScanJsonl200BytesThreads)
    ->ArgNames({"records", "threads"})
    ->Args({200000, 1})
    ->Args({200000, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
