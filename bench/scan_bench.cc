// `neardup scan` throughput over ~200-byte JSON Lines records (target >= 400k records/s).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "stream/json_out.h"
#include "stream/scan.h"

namespace {

// Deterministic ~200-byte records from a Zipf-like vocabulary; about 20% are
// edited reposts (one word changed, punctuation or case) of a recent record.
std::string make_feed(std::size_t records) {
  static const char* kWords[] = {
      "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by",
      "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had",
      "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if",
      "more", "when", "will", "would", "who", "so", "no", "market", "city", "council", "police", "storm",
      "election", "team", "season", "company", "shares", "report", "minister", "court", "river", "school",
      "hospital", "bridge", "train", "weather", "price", "energy", "festival", "museum", "record", "study"};
  constexpr std::size_t kVocabulary = sizeof kWords / sizeof kWords[0];
  std::mt19937_64 rng(42);
  std::vector<std::string> texts;
  std::string feed, line;
  for (std::size_t i = 0; i < records; ++i) {
    std::string text;
    if (texts.size() > 10 && rng() % 5 == 0) {
      text = texts[texts.size() - 1 - rng() % 10];
      const auto pos = text.find(' ', rng() % (text.size() / 2));
      text.insert(pos == std::string::npos ? 0 : pos, rng() % 2 ? " breaking" : "!");
    } else {
      while (text.size() < 170) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        text += kWords[static_cast<std::size_t>(u * u * kVocabulary)];
        text += ' ';
      }
      texts.push_back(text);
    }
    line = "{\"id\":" + std::to_string(i) + ",\"text\":";
    neardup::stream::append_json_string(line, text);
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
  for (auto _ : state) {
    std::FILE* in = fmemopen(feed.data(), feed.size(), "r");
    const auto stats = neardup::stream::scan_stream(config, in, sink);
    std::fclose(in);
    benchmark::DoNotOptimize(stats.duplicate);
    state.counters["duplicate_share"] = static_cast<double>(stats.duplicate) / static_cast<double>(stats.records);
  }
  std::fclose(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * records));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * feed.size()));
  state.counters["bytes_per_record"] = static_cast<double>(feed.size()) / static_cast<double>(records);
}
BENCHMARK(BM_ScanJsonl200Bytes)->Arg(200000)->Unit(benchmark::kMillisecond);

}  // namespace
