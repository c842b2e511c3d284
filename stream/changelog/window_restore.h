#pragma once
// The window's state from the changelog: rebuilding it at start (every
// partition read to its high watermark, replayed in event-time order, only what
// the window would still hold) and the sketch compatibility check shared with
// following other instances' records afterwards.
//
// Pipeline thread only, before the dedup worker gets its first slot (the
// engine is the caller's then).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine.h"
#include "stream/changelog/changelog_reader.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/dedup_worker.h"

namespace neardup::stream {

/// Which changelog sketches this engine can use: only those made with the same
/// dedup.sketch options and sketch scheme (dedup::kSketchScheme: a build with
/// another definition of the sketch); others are remembered by their
/// fingerprint alone (said once in the log).
class SketchCompatibility {
 public:
  explicit SketchCompatibility(const dedup::SketchOptions& options) : options_(options) {}
  /// The record's sketch if usable, else an empty one (shingles 0).
  const dedup::SketchResult& usable(const ChangelogRecord& record);

 private:
  const dedup::SketchOptions& options_;
  bool mismatch_logged_ = false;
};

struct RestoreHooks {
  std::function<void()> progress;  ///< called every progress_every while reading (publish counters)
  std::chrono::milliseconds progress_every{500};
  ChangelogReader::Corrupt corrupt;  ///< an unreadable record
  std::function<bool()> stopped;     ///< a stop was requested
};

/// Logs an unreadable changelog record as a warning, `prefix` first ("" or
/// "judge: "): the first 10 counted in `logged` one by one; the caller's
/// summary line gives the total.
void warn_unreadable_record(std::string_view prefix, const std::string& topic,
                            std::int32_t partition, std::int64_t offset, const std::string& reason,
                            std::uint64_t& logged);

/// Reads the whole changelog and remembers in `engine` what the window would
/// still hold (the newest window.max_entries within window.duration), in event
/// time order; the same message written twice (reprocessed after a crash) once.
/// Returns the entries remembered, or nullopt if stopped first. Throws
/// kafka::KafkaError (fatal errors).
std::optional<std::size_t> restore_window(ChangelogReader& reader, dedup::Engine& engine,
                                          const config::Config& config, Sources& sources,
                                          SketchCompatibility& sketches, const RestoreHooks& hooks);

/// The changelog's read side for one service: the rebuild at start, then
/// other instances' records as they come (this process's own are skipped:
/// they are in the window already). Counts into the service's snapshot and
/// logs unreadable records (the first ten one by one). Pipeline thread only.
class ChangelogFollower {
 public:
  /// Opens the changelog topic with the service's consumer properties. Throws
  /// kafka::KafkaError (fatal) when the topic does not exist, naming the fix.
  ChangelogFollower(const config::Config& config, const kafka::Properties& consumer_properties,
                    Sources& sources, ServiceSnapshot& stats, std::uint64_t instance);

  /// Rebuilds `engine` from the whole changelog (restore_window), fills the
  /// snapshot's changelog counters and logs the result. False if stopped first.
  bool rebuild(dedup::Engine& engine, RestoreHooks hooks);
  /// Appends what other instances kept since the last call, without waiting.
  void follow(std::vector<Remembered>& out);
  /// On an assignment: reads to the changelog's current end (10 s at most), so
  /// that what the partitions' previous owners kept is known before their
  /// messages are judged; logs when it could not.
  void read_to_end(std::vector<Remembered>& out);

 private:
  void remember(const ChangelogRecord& r, std::int64_t now, std::vector<Remembered>& out);
  void on_corrupt(std::int32_t partition, std::int64_t offset, const std::string& reason);
  ChangelogReader::Corrupt corrupt_handler();

  const config::Config& cfg_;
  Sources& sources_;
  ServiceSnapshot& stats_;
  const std::uint64_t instance_;
  ChangelogReader reader_;
  SketchCompatibility sketches_;
  std::uint64_t corrupt_logged_ = 0;
};

}  // namespace neardup::stream
