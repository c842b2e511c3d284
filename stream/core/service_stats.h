#pragma once
// The counters of one service run (ServiceSnapshot, copied out through
// ServiceOptions::on_progress) and their Prometheus view (to_metrics). Plain
// values: the pipeline thread fills them, others read copies.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dedup/engine/engine.h"
#include "metrics/metrics.h"

namespace neardup::stream {

/// Latency distribution: milliseconds up to 60 s, whole seconds up to an
/// hour, then one count (a replay of old data lands there). sum_ms is exact.
struct LatencyHistogram {
  static constexpr std::size_t kBuckets = 60'001;  ///< counts[ms], 0..60000 ms
  static constexpr std::size_t kFirstSlowSecond =
      61;  ///< slow[s - kFirstSlowSecond]: (s - 1, s] seconds
  static constexpr std::size_t kSlowSeconds = 3600;  ///< ... up to s = kSlowSeconds
  std::vector<std::uint64_t> counts = std::vector<std::uint64_t>(kBuckets, 0);
  std::vector<std::uint64_t> slow =
      std::vector<std::uint64_t>(kSlowSeconds + 1 - kFirstSlowSecond, 0);
  std::uint64_t beyond = 0;  ///< over kSlowSeconds
  std::uint64_t total = 0;
  double sum_ms = 0;
  void observe_ms(std::int64_t ms);
  /// The q-quantile in ms (0 when empty), to the second above 60 s; beyond an hour, an hour.
  /// O(buckets).
  std::int64_t quantile_ms(double q) const;
};

/// Story summaries written (kafka.summary_topic; stream/pipeline/story_writer.h).
struct StoryStats {
  std::uint64_t interim = 0;  ///< interim summaries produced
  std::uint64_t finals = 0;   ///< final summaries produced
  std::uint64_t stories = 0;  ///< stories open now (originals in the window with duplicates)
  /// Duplicates per story at its final summary (neardup_story_duplicates).
  metrics::Histogram sizes = size_histogram();

  static metrics::Histogram size_histogram();
};

/// Plain counters of one service run; copied out through ServiceOptions::on_progress.
struct ServiceSnapshot {
  std::uint64_t consumed = 0;  ///< input messages read
  std::uint64_t unique = 0, duplicate = 0, invalid = 0;
  std::uint64_t passed = 0;        ///< bypass mode: messages forwarded without dedup
  std::uint64_t produced = 0;      ///< output records acknowledged (any topic)
  std::uint64_t dead_letters = 0;  ///< dead-letter records acknowledged
  std::uint64_t dead_letters_truncated =
      0;                      ///< dead letters whose value was cut to fit (or left out)
  std::uint64_t dropped = 0;  ///< duplicates not republished (action drop)
  std::uint64_t produce_errors = 0;
  std::uint64_t committed = 0;  ///< input messages whose offsets are committed
  bool assigned = false;        ///< the consumer holds partitions
  bool window_ready = false;    ///< the window is rebuilt from the changelog (or there is none)
  std::uint64_t changelog_replayed = 0;  ///< entries remembered by the rebuild at start
  std::uint64_t changelog_followed = 0;  ///< other instances' records remembered while running
  std::uint64_t changelog_corrupt = 0;   ///< changelog records skipped as unreadable
  /// Changelog entries of another fingerprint schema, not used (dedup/engine/schema.h).
  std::uint64_t changelog_foreign_schema = 0;
  /// Request entries the judge answered invalid: of another fingerprint schema.
  std::uint64_t judge_foreign_schema = 0;
  std::uint64_t changelog_written = 0;  ///< changelog records acknowledged (not in `produced`)
  double changelog_rebuild_seconds = 0;
  /// Changelog entries the last rebuild read (at start, or this process's
  /// judge's last takeover): about one window, whatever the topic holds.
  std::uint64_t changelog_rebuild_read = 0;
  std::vector<std::uint64_t> match_distance;  ///< duplicates per SimHash distance 0..64
  LatencyHistogram end_to_end;                ///< message timestamp -> output acknowledged
  std::uint64_t processing_ns = 0;  ///< time inside decode + analysis (worker) + decision, summed
  metrics::Histogram processing_seconds = metrics::ServiceStats::with_buckets(0).processing_seconds;
  metrics::Histogram candidates_per_probe =
      metrics::ServiceStats::with_buckets(0).candidates_per_probe;
  dedup::EngineStats engine;
  // Consistent scale-out (kafka.judge_topic; stream/judge/judge.h):
  bool judged_by_group = false;             ///< kafka.judge_topic is set
  std::uint64_t judge_requests = 0;         ///< request records sent to the judge
  std::uint64_t judge_request_entries = 0;  ///< messages in them
  std::uint64_t judge_request_bytes = 0;    ///< their values' bytes
  std::uint64_t judge_resends = 0;          ///< requests sent again, unanswered for 15 s
  std::uint64_t judge_awaiting = 0;         ///< messages waiting for verdicts now
  /// Seconds the oldest request without a verdict has waited (0: none waits).
  double judge_waiting_seconds = 0;
  LatencyHistogram judge_round_trip;  ///< a request produced -> its verdicts read
  std::uint64_t judge_decisions = 0;  ///< decided by this process's judge
  std::uint64_t judge_takeovers = 0;  ///< times this process became the judge
  double judge_takeover_seconds = 0;  ///< the last takeover: assignment to first decision possible
  bool judge_active = false;          ///< this process's judge holds the judge topic
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> consumer_lag;
  bool summarizing = false;  ///< kafka.summary_topic is set
  StoryStats stories;        ///< this process's story summaries (its pipeline's, or its judge's)
};

/// The Prometheus view of a snapshot (metrics::Exporter::publish takes it).
metrics::ServiceStats to_metrics(const ServiceSnapshot& snapshot, int max_distance);

}  // namespace neardup::stream
