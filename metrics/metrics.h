#pragma once
// Prometheus exposition for neardup. The pipeline thread never touches
// prometheus-cpp: it fills a plain ServiceStats (counters and fixed-bucket
// histograms, no atomics, no locks) and publish()es a copy every few hundred
// milliseconds; scrapes read the last published copy. So counting costs the hot
// path a few increments per message.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/http/page_access.h"

namespace neardup::metrics {

/// A cumulative histogram with fixed upper bounds (le), plus +Inf.
struct Histogram {
  std::vector<double> bounds;         ///< ascending upper bounds
  std::vector<std::uint64_t> counts;  ///< per bucket (not cumulative), bounds.size() + 1
  double sum = 0;
  std::uint64_t count = 0;

  Histogram() = default;
  explicit Histogram(std::vector<double> upper_bounds);
  /// O(log buckets).
  void observe(double value);
};

struct ServiceStats {
  std::uint64_t unique = 0, duplicate = 0, invalid = 0;  ///< neardup_messages_total{verdict}
  /// RecentPairs::recorded() when these counts were taken (by the thread that
  /// records the pairs): the page lists no pair newer than its counts. Absent:
  /// read when published.
  std::optional<std::uint64_t> pairs_recorded;
  Histogram match_distance;  ///< one bucket per bit 0..k
  Histogram candidates_per_probe;
  std::uint64_t window_entries = 0, window_bytes = 0, window_evictions = 0;
  Histogram processing_seconds;          ///< per message, inside neardup
  Histogram end_to_end_latency_seconds;  ///< message timestamp -> output acked
  std::map<std::pair<std::string, std::int32_t>, std::int64_t>
      consumer_lag;  ///< {topic, partition}
  std::uint64_t produce_errors = 0, dead_letters = 0;
  std::uint64_t dead_letters_truncated =
      0;  ///< dead letters cut to fit the producer's record limit
  /// neardup_changelog_records_total{result}: window changelog records
  std::uint64_t changelog_written = 0;   ///< result="written": appended and acknowledged
  std::uint64_t changelog_replayed = 0;  ///< result="replayed": remembered by the start-up rebuild
  std::uint64_t changelog_followed = 0;  ///< result="followed": other instances' records remembered
  std::uint64_t changelog_corrupt = 0;   ///< result="corrupt": skipped as unreadable
  std::uint64_t changelog_foreign_schema = 0;  ///< entries of another fingerprint schema, not used
  std::uint64_t judge_foreign_schema = 0;  ///< request entries of another schema, answered invalid
  double window_rebuild_seconds = 0;       ///< neardup_window_rebuild_seconds
  std::uint64_t window_rebuild_entries_read = 0;  ///< neardup_window_rebuild_entries_read
  /// Kafka broker connections, as the service's clients see them
  /// (stream/kafka/clients/broker_health.h).
  bool kafka_brokers_up = true;            ///< neardup_kafka_brokers_up: false during an outage
  std::uint64_t kafka_broker_outages = 0;  ///< neardup_kafka_broker_outages_total
  std::map<std::string, bool> kafka_broker_up;  ///< neardup_kafka_broker_up{broker="host:port"}
  /// Consistent scale-out (the group judge; docs/KAFKA.md "Several instances").
  bool judged_by_group = false;        ///< the judge_* series below are exported
  bool judge_active = false;           ///< neardup_judge_active
  std::uint64_t judge_decisions = 0;   ///< neardup_judge_decisions_total
  std::uint64_t judge_takeovers = 0;   ///< neardup_judge_takeovers_total
  double judge_takeover_seconds = 0;   ///< neardup_judge_takeover_seconds
  std::uint64_t judge_awaiting = 0;    ///< neardup_judge_awaiting_messages
  double judge_waiting_seconds = 0;    ///< neardup_judge_waiting_seconds
  std::uint64_t judge_resends = 0;     ///< neardup_judge_resends_total
  Histogram judge_round_trip_seconds;  ///< request produced -> its verdicts read
  /// Story summaries (kafka.summary_topic): exported when `summarizing`.
  bool summarizing = false;
  std::uint64_t story_summaries_interim = 0;  ///< neardup_story_summaries_total{kind="interim"}
  std::uint64_t story_summaries_final = 0;    ///< neardup_story_summaries_total{kind="final"}
  std::uint64_t stories_open = 0;             ///< neardup_stories_open
  Histogram story_duplicates;                 ///< neardup_story_duplicates, at final summaries

  /// Histograms with neardup's standard buckets for max distance k.
  static ServiceStats with_buckets(int max_distance);
};

class RecentPairs;

struct BuildInfo {
  std::string version;
  std::map<std::string, std::string> labels;  ///< extra labels, e.g. {"k","3"}, {"blocks","4"}
};

/// Serves /metrics, /healthz (200 while the process is alive), /readyz
/// (200 once set_ready(true): partitions assigned, window rebuilt and Kafka
/// brokers reachable; 503 otherwise, the body saying why), and the page: "/"
/// (HTML) and "/api/summary" (JSON), metrics/page/page.h, as `access` allows
/// (metrics/http/page_access.h): 403 when not served, 401 without its credentials.
/// Every answer on the page's paths carries a Content-Security-Policy and
/// X-Content-Type-Options: nosniff.
/// Thread-safe: publish() and set_ready() may be called from any thread.
class Exporter {
 public:
  /// Binds `listen` ("host:port"; port 0 picks a free one). Throws std::runtime_error
  /// with an actionable message when the address is malformed or cannot be bound.
  /// `pairs` (not owned; may be null: the page then shows counts only) must
  /// outlive the Exporter: the page's requests read it on the HTTP threads.
  /// `max_workers`: the HTTP server's worker ceiling (metrics/http/http_server.h).
  /// Logs page_exposure_warning() (level warn) when it applies to the bound address.
  Exporter(const std::string& listen, const BuildInfo& build, const RecentPairs* pairs = nullptr,
           int max_workers = 1024, PageAccess access = {});
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  void publish(const ServiceStats& stats);
  /// `why_not` (when not ready) becomes /readyz's body: "not ready: <why_not>".
  void set_ready(bool ready, std::string why_not = {});
  /// "host:port" actually bound.
  std::string address() const;
  /// Whether the page and /api/summary are served on it.
  bool page_served() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::metrics
