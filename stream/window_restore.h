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

#include "config/config.h"
#include "dedup/engine.h"
#include "stream/changelog.h"
#include "stream/sources.h"

namespace neardup::stream {

/// Which changelog sketches this engine can use: only those made with the same
/// dedup.sketch options; others are remembered by their fingerprint alone
/// (said once in the log).
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
  std::function<void()> progress;       ///< called every progress_every while reading (publish counters)
  std::chrono::milliseconds progress_every{500};
  ChangelogReader::Corrupt corrupt;     ///< an unreadable record
  std::function<bool()> stopped;        ///< a stop was requested
};

/// Reads the whole changelog and remembers in `engine` what the window would
/// still hold (the newest window.max_entries within window.duration), in event
/// time order; the same message written twice (reprocessed after a crash) once.
/// Returns the entries remembered, or nullopt if stopped first. Throws
/// kafka::KafkaError (fatal errors).
std::optional<std::size_t> restore_window(ChangelogReader& reader, dedup::Engine& engine, const config::Config& config,
                                          Sources& sources, SketchCompatibility& sketches, const RestoreHooks& hooks);

}  // namespace neardup::stream
