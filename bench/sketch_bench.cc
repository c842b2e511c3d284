// Cost of the sketch stage:
// - SketchWindowProbeInsert/N: a full window of N entries with the sketch index
//   beside it (random fingerprints, sketches and band keys), probe + verify +
//   insert per item; reports bytes_per_entry of window + sketch index together,
//   and sketch_candidates_per_probe (random band-bucket collisions).
// - ScanSketch/S/F: `neardup scan` of ~200-byte JSON Lines records with the
//   sketch stage off (S = 0, the classic engine) or on (S = 1, the default).
//   F = 0: the news-like feed of ScanJsonl200Bytes (bench/feed.h: Zipf words over
//   a 20k vocabulary, same records); F = 1: the old feed over a 76-word
//   vocabulary, where most texts share their common shingles: the band index's
//   worst case (long chains of true band matches that all fail verification).
// - Sketcher: the sketch of one text (ASCII ~200 bytes, Chinese ~60 characters).
//
//   build/accuracy/bench/neardup_bench --benchmark_filter='Sketch|Scan'

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"
#include "bench/feed.h"
#include "dedup/engine/engine.h"
#include "dedup/fingerprint/sketch.h"
#include "dedup/index/sketch_index.h"
#include "dedup/index/window.h"
#include "dedup/text/normalize.h"
#include "stream/records/json_out.h"
#include "stream/scan/scan.h"

namespace neardup::dedup {
namespace {

using bench::splitmix64;

SketchResult random_sketch(std::uint64_t& rng, int bands) {
  SketchResult r;
  r.sketch.words = {splitmix64(rng), splitmix64(rng)};
  for (int b = 0; b < bands; ++b) r.band_keys[static_cast<std::size_t>(b)] = splitmix64(rng);
  r.shingles = 100;
  return r;
}

struct Filled {
  std::unique_ptr<Window> window;
  std::unique_ptr<SketchIndex> sketches;
  std::uint64_t rng = 777;
  std::uint64_t next_ref = 0;
  std::uint64_t next_sequence = 0;
};

std::uint64_t oldest(const Filled& f) { return f.next_sequence - f.window->stats().entries; }

// Filling 10M entries takes seconds: once per size, reused across runs.
Filled& filled(std::size_t entries) {
  static std::map<std::size_t, Filled> cache;
  Filled& f = cache[entries];
  if (f.window) return f;
  const SketchOptions so;
  WindowOptions wo;
  wo.max_entries = entries;
  wo.duration = std::chrono::hours(24 * 365);
  f.window = std::make_unique<Window>(IndexOptions{3, 0}, wo);
  f.sketches = std::make_unique<SketchIndex>(so, entries);
  for (std::size_t i = 0; i < entries; ++i) {
    const SketchResult r = random_sketch(f.rng, so.bands);
    const std::uint64_t seq =
        f.window->insert(Fingerprint{splitmix64(f.rng)}, EventTime{0}, RecordRef{f.next_ref++});
    f.next_sequence = seq + 1;
    f.sketches->insert(seq, oldest(f), &r);
  }
  return f;
}

/// What the engine does per message with the sketch stage on: the window's
/// SimHash neighbours verified by sketch, then the band candidates; inserted
/// into both when neither found a duplicate. Returns 1 for a duplicate.
int probe_or_insert(Filled& f, Fingerprint fp, const SketchResult& r) {
  const SketchOptions so;
  const RecordRef ref{f.next_ref++};
  auto match = f.window->probe(fp, EventTime{0}, ref, [&](const Match& m) {
    const auto theirs = f.sketches->sketch(m.sequence, m.sequence);
    return !theirs || estimate_jaccard(r.sketch, *theirs, so.bits) >= so.threshold;
  });
  bool found = match.has_value();
  f.sketches->for_each_candidate(r, oldest(f), [&](std::uint64_t, const Sketch& theirs) {
    found = found || estimate_jaccard(r.sketch, theirs, so.bits) >= so.threshold;
  });
  if (found) return 1;
  const std::uint64_t seq = f.window->insert(fp, EventTime{0}, ref);
  f.next_sequence = seq + 1;
  f.sketches->insert(seq, oldest(f), &r);
  return 0;
}

void BM_SketchWindowProbeInsert(benchmark::State& state) {
  Filled& f = filled(static_cast<std::size_t>(state.range(0)));
  const SketchOptions so;
  const std::uint64_t probes_before = f.sketches->stats().probes;
  const std::uint64_t candidates_before = f.sketches->stats().candidates;
  std::uint64_t duplicates = 0;
  for (auto _ : state) {
    const Fingerprint fp{splitmix64(f.rng)};
    const SketchResult r = random_sketch(f.rng, so.bands);
    f.sketches->prefetch(r);
    duplicates += probe_or_insert(f, fp, r);
  }
  benchmark::DoNotOptimize(duplicates);
  const WindowStats ws = f.window->stats();
  const SketchIndexStats ss = f.sketches->stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["entries"] = static_cast<double>(ws.entries);
  state.counters["bytes_per_entry"] =
      static_cast<double>(ws.bytes + ss.bytes) / static_cast<double>(ws.entries);
  state.counters["window_bytes_per_entry"] =
      static_cast<double>(ws.bytes) / static_cast<double>(ws.entries);
  state.counters["sketch_bytes_per_entry"] =
      static_cast<double>(ss.bytes) / static_cast<double>(ws.entries);
  state.counters["sketch_candidates_per_probe"] =
      static_cast<double>(ss.candidates - candidates_before) /
      static_cast<double>(ss.probes - probes_before);
}
BENCHMARK(BM_SketchWindowProbeInsert)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Unit(benchmark::kNanosecond);

// As above, with the hints the engine's batch pipelines give (the dedup worker,
// the judge, scan: stream/pipeline/dedup_worker.cc): the window's bucket
// headers and the band heads two items ahead, the cells and each chain's first
// entry one item ahead.
void BM_SketchWindowProbeInsertPipelined(benchmark::State& state) {
  Filled& f = filled(static_cast<std::size_t>(state.range(0)));
  const SketchOptions so;
  struct Item {
    Fingerprint fp;
    SketchResult sketch;
  };
  auto make = [&] { return Item{Fingerprint{splitmix64(f.rng)}, random_sketch(f.rng, so.bands)}; };
  Item ahead[3] = {make(), make(), make()};
  std::uint64_t duplicates = 0;
  for (auto _ : state) {
    const Item item = ahead[0];
    ahead[0] = ahead[1];
    ahead[1] = ahead[2];
    ahead[2] = make();
    f.window->prefetch(ahead[1].fp);
    f.sketches->prefetch(ahead[1].sketch);
    f.window->prefetch_cells(ahead[0].fp);
    f.sketches->prefetch_cells(ahead[0].sketch, oldest(f));
    duplicates += probe_or_insert(f, item.fp, item.sketch);
  }
  benchmark::DoNotOptimize(duplicates);
  state.SetItemsProcessed(state.iterations());
  const WindowStats ws = f.window->stats();
  const SketchIndexStats ss = f.sketches->stats();
  state.counters["bytes_per_entry"] =
      static_cast<double>(ws.bytes + ss.bytes) / static_cast<double>(ws.entries);
}
BENCHMARK(BM_SketchWindowProbeInsertPipelined)->Arg(10'000'000)->Unit(benchmark::kNanosecond);

void BM_Sketcher(benchmark::State& state) {
  const std::string text = state.range(0) == 0
                               ? std::string(
                                     "The city council met on Tuesday evening to discuss the "
                                     "proposed budget for the coming "
                                     "year; residents filled the hall and spoke about roads, buses "
                                     "and the pool. #budget")
                               : std::string(
                                     "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。春眠不覺曉，"
                                     "處處聞啼鳥。夜來風雨聲，花落知多少。"
                                     "作者：李白");
  Normalizer normalizer;
  Sketcher sketcher(SketchOptions{});
  const NormalizedText norm = normalizer.run(text);
  for (auto _ : state) benchmark::DoNotOptimize(sketcher.run(norm));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Sketcher)->Arg(0)->Arg(1);

std::string to_jsonl(const std::vector<std::string>& texts) {
  std::string feed, line;
  std::size_t i = 0;
  for (const auto& text : texts) {
    line = "{\"id\":" + std::to_string(++i) + ",\"text\":";
    neardup::base::append_json_string(line, text);
    line += "}\n";
    feed += line;
  }
  return feed;
}

// feed 0: the records of bench/scan_bench.cc (same generator, same seed), so
// ScanSketch/1/0 and ScanJsonl200Bytes measure the same work. feed 1: the
// small-vocabulary worst case below.
std::string make_feed(std::size_t records, int feed);

std::string make_small_vocabulary_feed(std::size_t records) {
  static const char* kWords[] = {
      "the",      "of",      "and",    "to",      "in",       "a",      "is",       "that",
      "for",      "it",      "as",     "was",     "with",     "be",     "by",       "on",
      "not",      "he",      "this",   "are",     "or",       "his",    "from",     "at",
      "which",    "but",     "have",   "an",      "had",      "they",   "you",      "were",
      "their",    "one",     "all",    "we",      "can",      "her",    "has",      "there",
      "been",     "if",      "more",   "when",    "will",     "would",  "who",      "so",
      "no",       "market",  "city",   "council", "police",   "storm",  "election", "team",
      "season",   "company", "shares", "report",  "minister", "court",  "river",    "school",
      "hospital", "bridge",  "train",  "weather", "price",    "energy", "festival", "museum",
      "record",   "study"};
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
    neardup::base::append_json_string(line, text);
    line += "}\n";
    feed += line;
  }
  return feed;
}

std::string make_feed(std::size_t records, int feed) {
  if (feed == 1) return make_small_vocabulary_feed(records);
  neardup::bench::FeedGenerator generator;
  return to_jsonl(generator.feed(records, 170));
}

// The engine alone over the feed's texts (no JSON): candidates per probe of
// the band index and the share of duplicates found only through it.
// sketch:0 is the SimHash-only engine, sketch:1 the default two-stage one, and
// sketch:2 the SimHash-only engine fed analyses that include the sketch
// (computed, then neither stored nor used): the floor of any sketch stage
// that computes this sketch, whatever its index costs.
void BM_EngineSketch(benchmark::State& state) {
  constexpr std::size_t kRecords = 200000;
  static const std::vector<std::string> texts_by_feed[2] = {
      [] {
        neardup::bench::FeedGenerator generator;
        return generator.feed(kRecords, 170);
      }(),
      [] {
        std::vector<std::string> out;
        const std::string feed = make_small_vocabulary_feed(kRecords);
        std::size_t at = 0;
        while (at < feed.size()) {
          const std::size_t end = feed.find('\n', at);
          const std::size_t open = feed.find("\"text\":\"", at) + 8;
          out.push_back(feed.substr(open, feed.rfind('"', end) - open));
          at = end + 1;
        }
        return out;
      }()};
  const std::vector<std::string>& texts = texts_by_feed[state.range(1)];
  const bool computed_only = state.range(0) == 2;
  DedupOptions options;
  options.sketch.enabled = state.range(0) == 1;
  EngineStats stats;
  for (auto _ : state) {
    Engine engine(options);
    std::optional<Fingerprinter>
        sketching;  // sketch:2 only: the default sketch, for a SimHash-only engine
    if (computed_only) sketching.emplace(options.text, DedupOptions{}.sketch);
    std::uint64_t ref = 0;
    for (const auto& text : texts) {
      if (computed_only) {
        const Analysis analysis = analyze(*sketching, text);
        engine.prefetch(analysis);
        benchmark::DoNotOptimize(engine.decide(analysis, EventTime{0}, RecordRef{++ref}));
      } else {
        benchmark::DoNotOptimize(engine.process(text, EventTime{0}, RecordRef{++ref}));
      }
    }
    stats = engine.stats();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * texts.size()));
  state.counters["duplicate_share"] =
      static_cast<double>(stats.duplicate) / static_cast<double>(texts.size());
  state.counters["sketch_only_share"] =
      static_cast<double>(stats.sketch_matches) / static_cast<double>(texts.size());
  state.counters["sketch_candidates_per_probe"] =
      stats.sketch.probes
          ? static_cast<double>(stats.sketch.candidates) / static_cast<double>(stats.sketch.probes)
          : 0;
}
BENCHMARK(BM_EngineSketch)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->ArgNames({"sketch", "feed"})
    ->Unit(benchmark::kMillisecond);

void BM_ScanSketch(benchmark::State& state) {
  constexpr std::size_t kRecords = 200000;
  static const std::string feeds[2] = {make_feed(kRecords, 0), make_feed(kRecords, 1)};
  const std::string& feed = feeds[state.range(1)];
  neardup::config::Config config;
  config.input.format = neardup::config::InputFormat::json;
  config.dedup.sketch.enabled = state.range(0) != 0;
  std::FILE* sink = std::fopen("/dev/null", "w");
  for (auto _ : state) {
    std::FILE* in = fmemopen(const_cast<char*>(feed.data()), feed.size(), "r");
    const auto stats = neardup::stream::scan_stream(config, in, sink);
    std::fclose(in);
    state.counters["duplicate_share"] =
        static_cast<double>(stats.duplicate) / static_cast<double>(stats.records);
  }
  std::fclose(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kRecords));
}
BENCHMARK(BM_ScanSketch)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"sketch", "feed"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace neardup::dedup
