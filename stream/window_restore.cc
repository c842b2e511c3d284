#include "stream/window_restore.h"

#include <algorithm>
#include <vector>

#include "stream/process.h"

namespace neardup::stream {

const dedup::SketchResult& SketchCompatibility::usable(const ChangelogRecord& r) {
  static const dedup::SketchResult kNone{};
  if (!r.has_sketch || !options_.enabled) return kNone;
  if (r.bits != options_.bits || r.band_bins != options_.band_bins || r.bands != options_.bands) {
    if (!mismatch_logged_) {
      mismatch_logged_ = true;
      log(config::LogLevel::warn, "window changelog: records made with other dedup.sketch options (bits/bands/"
                                  "band_bins) are remembered by their fingerprint only");
    }
    return kNone;
  }
  return r.sketch;
}

std::optional<std::size_t> restore_window(ChangelogReader& reader, dedup::Engine& engine, const config::Config& cfg,
                                          Sources& sources, SketchCompatibility& sketches, const RestoreHooks& hooks) {
  struct Replayed {
    dedup::EventTime time;
    dedup::RecordRef ref;
    dedup::Fingerprint fingerprint;
    dedup::SketchResult sketch;
  };
  using Clock = std::chrono::steady_clock;
  std::vector<Replayed> entries;
  auto last_progress = Clock::now(), last_log = Clock::now();
  const bool complete = reader.catch_up(
      [&](const ChangelogRecord& r) {
        entries.push_back(Replayed{r.time, pack_ref(sources.intern(r.topic, r.partition), r.offset), r.fingerprint,
                                   sketches.usable(r)});
        if ((entries.size() & 4095) == 0 && Clock::now() - last_progress >= hooks.progress_every) {
          last_progress = Clock::now();
          if (hooks.progress) hooks.progress();
          if (last_progress - last_log >= std::chrono::seconds(10)) {
            last_log = last_progress;
            log(config::LogLevel::info,
                "rebuilding the window: " + std::to_string(reader.records_read()) + " changelog records read");
          }
        }
      },
      hooks.corrupt, hooks.stopped);
  if (!complete) return std::nullopt;
  // Event-time order; the same message written twice (reprocessed after a
  // crash) is remembered once.
  std::stable_sort(entries.begin(), entries.end(), [](const Replayed& a, const Replayed& b) {
    return a.time != b.time ? a.time < b.time : a.ref.value < b.ref.value;
  });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const Replayed& a, const Replayed& b) {
                              return a.time == b.time && a.ref == b.ref && a.fingerprint == b.fingerprint;
                            }),
                entries.end());
  std::size_t first = 0;
  if (!entries.empty()) {
    // Only what the window would still hold: the newest max_entries, within the duration.
    const std::int64_t horizon = entries.back().time.ms - cfg.dedup.window.duration.count();
    if (entries.size() > cfg.dedup.window.max_entries) first = entries.size() - cfg.dedup.window.max_entries;
    while (first < entries.size() && entries[first].time.ms < horizon) ++first;
  }
  for (std::size_t i = first; i < entries.size(); ++i) {
    const Replayed& e = entries[i];
    engine.remember(e.fingerprint, e.time, e.ref, e.sketch);
  }
  return entries.size() - first;
}

}  // namespace neardup::stream
