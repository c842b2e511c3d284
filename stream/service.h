#pragma once
// `neardup run`'s engine room: consume -> decode -> dedup::Engine -> produce,
// with at-least-once delivery. Two threads: a dedup worker, which owns the
// window, decodes, analyzes (normalize, SimHash, sketch) and judges
// (Engine::decide) the batch just polled, in order, while the pipeline thread
// produces the batch before it by its verdicts. Everything else (offsets,
// produce, commit, rebalance, following the changelog, stop) is on the pipeline
// thread; a revoke or a stop first finishes the batch in flight.
// librdkafka's own threads do the network I/O.
//
// Delivery: every input message gets an entry in its partition's pending list
// with the number of output records not yet acknowledged. Offsets are committed
// only for the contiguous prefix whose outputs are all acknowledged, so a crash
// replays (never loses) what was in flight. A record that librdkafka cannot
// deliver after its own retries stops the service (non-zero exit) before its
// offset is committed.
//
// Window changelog (kafka.changelog_topic, "" = off; stream/changelog.h): every
// kept message also appends a fingerprint record there, and that record counts
// as one of the message's outputs (its offset commits only after both are
// acknowledged). run() first reads the whole changelog (every partition, to the
// high watermark as of the start) and replays it into the Engine in event-time
// order, then subscribes to the input; afterwards it keeps following the
// changelog and remembers the records other instances write.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "dedup/engine.h"
#include "metrics/metrics.h"

namespace neardup::stream {

// ------------------------------------------------------------------ logging
/// One log line through metrics' logger (format and level from the `log:` config).
/// Thread-safe. Not for the per-message path.
void log(config::LogLevel level, std::string_view message);
/// Applies the `log:` section (format, level) to the process-wide logger.
void configure_logging(const config::LogOptions& options);

// ------------------------------------------------------------------ signals
/// SIGTERM and SIGINT set a process-wide flag (async-signal-safe); Service::run()
/// and the broker command poll it.
void install_stop_signal_handlers();
bool stop_signalled();

// ------------------------------------------------------------------ refs
/// Packs (interned source index, offset) into a dedup::RecordRef: 16 bits of
/// source index (a topic-partition), 48 bits of offset. The same message read
/// twice gets the same ref, so a replay is never its own duplicate.
constexpr dedup::RecordRef pack_ref(std::uint32_t source, std::int64_t offset) {
  return dedup::RecordRef{(static_cast<std::uint64_t>(source) << 48) |
                          (static_cast<std::uint64_t>(offset) & ((std::uint64_t{1} << 48) - 1))};
}
constexpr std::uint32_t ref_source(dedup::RecordRef ref) { return static_cast<std::uint32_t>(ref.value >> 48); }
constexpr std::int64_t ref_offset(dedup::RecordRef ref) {
  return static_cast<std::int64_t>(ref.value & ((std::uint64_t{1} << 48) - 1));
}

// ------------------------------------------------------------------ stats
/// Latency distribution: milliseconds up to 60 s, whole seconds up to an
/// hour, then one count (a replay of old data lands there). sum_ms is exact.
struct LatencyHistogram {
  static constexpr std::size_t kBuckets = 60'001;       ///< counts[ms], 0..60000 ms
  static constexpr std::size_t kFirstSlowSecond = 61;   ///< slow[s - kFirstSlowSecond]: (s - 1, s] seconds
  static constexpr std::size_t kSlowSeconds = 3600;     ///< ... up to s = kSlowSeconds
  std::vector<std::uint64_t> counts = std::vector<std::uint64_t>(kBuckets, 0);
  std::vector<std::uint64_t> slow = std::vector<std::uint64_t>(kSlowSeconds + 1 - kFirstSlowSecond, 0);
  std::uint64_t beyond = 0;  ///< over kSlowSeconds
  std::uint64_t total = 0;
  double sum_ms = 0;
  void observe_ms(std::int64_t ms);
  /// The q-quantile in ms (0 when empty), to the second above 60 s; beyond an hour, an hour. O(buckets).
  std::int64_t quantile_ms(double q) const;
};

/// Plain counters of one service run; copied out through ServiceOptions::on_progress.
struct ServiceSnapshot {
  std::uint64_t consumed = 0;      ///< input messages read
  std::uint64_t unique = 0, duplicate = 0, invalid = 0;
  std::uint64_t passed = 0;        ///< bypass mode: messages forwarded without dedup
  std::uint64_t produced = 0;      ///< output records acknowledged (any topic)
  std::uint64_t dead_letters = 0;  ///< dead-letter records acknowledged
  std::uint64_t dropped = 0;       ///< duplicates not republished (action drop)
  std::uint64_t produce_errors = 0;
  std::uint64_t committed = 0;     ///< input messages whose offsets are committed
  bool assigned = false;           ///< the consumer holds partitions
  bool window_ready = false;       ///< the window is rebuilt from the changelog (or there is none)
  std::uint64_t changelog_replayed = 0;  ///< entries remembered by the rebuild at start
  std::uint64_t changelog_followed = 0;  ///< other instances' records remembered while running
  std::uint64_t changelog_corrupt = 0;   ///< changelog records skipped as unreadable
  std::uint64_t changelog_written = 0;   ///< changelog records acknowledged (not in `produced`)
  double changelog_rebuild_seconds = 0;
  std::vector<std::uint64_t> match_distance;  ///< duplicates per distance 0..k
  LatencyHistogram end_to_end;     ///< message timestamp -> output acknowledged
  std::uint64_t processing_ns = 0; ///< time inside decode + analysis (worker) + decision, summed
  metrics::Histogram processing_seconds = metrics::ServiceStats::with_buckets(0).processing_seconds;
  metrics::Histogram candidates_per_probe = metrics::ServiceStats::with_buckets(0).candidates_per_probe;
  dedup::EngineStats engine;
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> consumer_lag;
};

/// Everything the per-verdict hook sees (demo, tests). `text` is valid only during the call.
struct VerdictEvent {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string_view text;
  const dedup::Verdict* verdict = nullptr;
  std::string_view of_topic;  ///< for duplicates: the kept original
  std::int32_t of_partition = 0;
  std::int64_t of_offset = 0;
};

struct ServiceOptions {
  config::Config config;
  std::string brokers;  ///< bootstrap.servers (overrides config.kafka.brokers)
  /// Benchmark baseline: forward every message unchanged, no decode or dedup.
  bool bypass_dedup = false;
  std::chrono::milliseconds commit_interval{200};
  std::chrono::milliseconds progress_interval{500};
  std::chrono::milliseconds shutdown_flush{8000};  ///< SIGTERM must exit within 10 s
  std::function<void(const ServiceSnapshot&)> on_progress;  ///< pipeline thread
  std::function<void(const VerdictEvent&)> on_verdict;      ///< pipeline thread
};

/// Owns the consumer, the producer and the Engine. Construct and run() on one
/// thread; request_stop() from any thread (or a signal handler: it only stores
/// an atomic flag).
class Service {
 public:
  /// Throws config::ConfigError / kafka::KafkaError / std::invalid_argument for
  /// an unusable configuration (bad property, bad dedup options).
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Runs until request_stop() or a stop signal (then: stop fetching, flush, commit; returns 0)
  /// or a fatal Kafka error (logged clearly; returns 1, offsets of undelivered
  /// messages are not committed).
  int run();
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  /// The last error that stopped run() with status 1 ("" if none).
  const std::string& fatal_error() const;
  /// A copy of the counters (pipeline thread only, or after run() returned).
  ServiceSnapshot snapshot() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

/// What `neardup run` and `neardup demo` share around a Service: the embedded
/// broker when kafka.brokers is absent (topics created, "embedded broker at
/// ADDR" logged), the metrics endpoint, the progress line, SIGTERM/SIGINT.
struct HostOptions {
  std::string bootstrap_file;        ///< write the embedded broker's address here
  bool force_progress = false;       ///< show the progress line even when stderr is not a terminal
  std::chrono::milliseconds progress_every{2000};
  /// Called once the brokers are known, before the service runs (the demo starts its feeder here).
  std::function<void(const std::string& brokers)> on_brokers;
  std::function<void(const VerdictEvent&)> on_verdict;
  /// Checked on every progress tick; returning true stops the service gracefully.
  std::function<bool(const ServiceSnapshot&)> done;
};

/// Runs the service until a signal, `done`, or a fatal error. Returns the exit
/// status (0 after a graceful stop, 1 after a fatal Kafka error). `final` gets
/// the last snapshot. Throws for startup failures (bad config, port in use).
int host_service(const config::Config& config, const HostOptions& host, ServiceSnapshot* final = nullptr);

/// The Prometheus view of a snapshot (metrics::Exporter::publish takes it).
metrics::ServiceStats to_metrics(const ServiceSnapshot& snapshot, int max_distance);

/// The librdkafka properties neardup uses (tuned for throughput; the user's
/// kafka.consumer / kafka.producer maps override them).
std::map<std::string, std::string> default_consumer_properties(const std::string& brokers, const std::string& group);
std::map<std::string, std::string> default_producer_properties(const std::string& brokers);

}  // namespace neardup::stream
