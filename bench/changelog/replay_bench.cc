// The window's rebuild from a changelog held in memory, without a broker: N
// entries (default 10,000,000, the default window.max_entries) of kept
// messages over 8 partitions with the default sketch, encoded as the service
// writes them (batches of 1000), then decoded alone, then decoded and
// replayed into a default dedup::Engine through stream::WindowReplay (the code
// of the rebuild at start and of a judge's takeover): with the default
// window.rebuild_memory (64 MiB), 10M entries outgrow it, so the records are
// read a second time, slice by slice, as restore_window does. Prints
// entries/s of each phase, the encoded bytes per entry and the peak RSS after
// each phase.
//
//   neardup_changelog_replay_bench [--entries N] [--rebuild-memory BYTES]
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/sources.h"
#include "stream/records/changelog_record.h"

namespace {

using namespace neardup;
using Clock = std::chrono::steady_clock;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // (kB on Linux)
}

double current_rss_mb() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof line, status) != nullptr)
    if (std::strncmp(line, "VmRSS:", 6) == 0) kb = std::strtod(line + 6, nullptr);
  std::fclose(status);
  return kb / 1024.0;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 10'000'000;
  std::size_t rebuild_memory = config::Config{}.dedup.window.rebuild_memory;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--entries") == 0 && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--rebuild-memory") == 0 && i + 1 < argc) {
      rebuild_memory = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: neardup_changelog_replay_bench [--entries N] [--rebuild-memory "
                   "BYTES]\n");
      return 2;
    }
  }
  config::Config cfg;
  cfg.dedup.window.rebuild_memory = rebuild_memory;
  const dedup::FingerprintSchema schema = dedup::fingerprint_schema(cfg.dedup);
  const int bands = cfg.dedup.sketch.bands;

  // Encode: what the service's ChangelogWriter produces, batch by batch.
  auto start = Clock::now();
  std::vector<std::string> records;
  std::size_t bytes = 0;
  {
    stream::ChangelogBatch batch(42, schema);
    std::uint64_t rng = 7;
    std::int64_t time = 1'764'000'000'000;
    std::int64_t offsets[8] = {};
    stream::ChangelogRecord r;
    r.topic = "events.raw";
    r.has_sketch = true;
    r.bits = cfg.dedup.sketch.bits;
    r.band_bins = cfg.dedup.sketch.band_bins;
    r.scheme = dedup::kSketchScheme;
    r.bands = bands;
    r.sketch.shingles = 1;
    for (std::size_t i = 0; i < n; ++i) {
      r.partition = static_cast<std::int32_t>((i / 125) % 8);  // a poll's run of one partition
      offsets[r.partition] += 1 + static_cast<std::int64_t>(splitmix64(rng) % 3);
      r.offset = offsets[r.partition];
      time += static_cast<std::int64_t>(splitmix64(rng) % 2);
      r.time.ms = time;
      r.fingerprint.bits = splitmix64(rng);
      r.sketch.sketch.words = {splitmix64(rng), splitmix64(rng)};
      for (int b = 0; b < bands; ++b)
        r.sketch.band_keys[static_cast<std::size_t>(b)] = splitmix64(rng);
      batch.add(r);
      if (batch.entries() == 1000 || i + 1 == n) {
        const auto encoded = batch.take();
        records.emplace_back(encoded.value);
        bytes += encoded.value.size();
      }
    }
  }
  const double encode_s = seconds_since(start);
  const double rss_encoded = peak_rss_mb();
  std::printf("entries %zu, records %zu, %.2f bytes/entry (headers included), encoded in %.2f s\n",
              n, records.size(), static_cast<double>(bytes) / static_cast<double>(n), encode_s);
  std::printf("peak RSS after encoding (the records held): %.0f MB\n", rss_encoded);

  // Decode alone.
  start = Clock::now();
  std::vector<stream::ChangelogRecord> out;
  std::size_t decoded = 0;
  std::string error;
  for (const std::string& value : records) {
    out.clear();
    if (!stream::decode_changelog(value, out, &error)) {
      std::fprintf(stderr, "decode failed: %s\n", error.c_str());
      return 1;
    }
    decoded += out.size();
  }
  const double decode_s = seconds_since(start);
  std::printf("decode: %zu entries in %.2f s, %.2f M entries/s; peak RSS %.0f MB\n", decoded,
              decode_s, static_cast<double>(decoded) / decode_s / 1e6, peak_rss_mb());

  // Decode and replay into the window, as the rebuild at start does.
  start = Clock::now();
  dedup::Engine engine(cfg.dedup);
  stream::Sources sources;
  stream::SchemaCompatibility schemas(schema);
  auto replay_owner = std::make_unique<stream::WindowReplay>(cfg, sources, schemas);
  stream::WindowReplay& replay = *replay_owner;
  for (const std::string& value : records) {
    out.clear();
    stream::decode_changelog(value, out, &error);
    for (const stream::ChangelogRecord& e : out) replay.add(e);
  }
  const double read_s = seconds_since(start);
  const double rss_first = peak_rss_mb();
  std::size_t remembered = 0, slices = 0;
  if (replay.collected_all()) {
    remembered = replay.finish(engine);
  } else {
    // The second pass, as restore_window makes it: the records of each slice
    // (by their timestamp, the newest entry's time) read again in turn.
    const std::vector<std::int64_t> starts = replay.second_pass(engine);
    slices = starts.size();
    std::size_t next = 0;  // the first record not read again yet
    for (std::size_t j = 0; j < starts.size(); ++j) {
      const bool last = j + 1 == starts.size();
      for (; next < records.size(); ++next) {
        out.clear();
        stream::decode_changelog(records[next], out, &error);
        std::int64_t stamp = 0;
        for (const stream::ChangelogRecord& e : out) stamp = std::max(stamp, e.time.ms);
        if (!last && stamp >= starts[j + 1]) break;
        if (stamp < starts[0]) continue;
        for (const stream::ChangelogRecord& e : out) replay.add_again(e);
      }
      replay.remember_slice(engine);
    }
    remembered = replay.remembered();
  }
  const double replay_s = seconds_since(start);
  std::printf(
      "replay: %zu entries remembered in %.2f s (decode and collect %.2f s, peak RSS %.0f MB; "
      "%s %.2f s), %.2f M entries/s; peak RSS %.0f MB\n",
      remembered, replay_s, read_s, rss_first,
      slices ? ("read again in " + std::to_string(slices) + " slices and remembered").c_str()
             : "sort and remember",
      replay_s - read_s, static_cast<double>(remembered) / replay_s / 1e6, peak_rss_mb());
  // The window alone: what stays resident once the records and the replay
  // are gone (malloc_trim returns freed heap pages).
  replay_owner.reset();
  const double peak_mb = peak_rss_mb();
  records = std::vector<std::string>();  // (`= {}` would keep the capacity)
  out = std::vector<stream::ChangelogRecord>();
  malloc_trim(0);
  const double window_mb = current_rss_mb();
  std::printf(
      "after the rebuild, without the records: %.0f MB resident (the window); the rebuild's peak "
      "beyond the records: %.0f MB, the window + %.0f MB\n",
      window_mb, peak_mb - rss_encoded, peak_mb - rss_encoded - window_mb);
  const dedup::EngineStats stats = engine.stats();
  std::printf("the window: %.0f MB of entries and SimHash tables, %.0f MB of sketch index\n",
              static_cast<double>(stats.window.bytes) / 1e6,
              static_cast<double>(stats.sketch.bytes) / 1e6);
  return remembered == n ? 0 : 1;
}
