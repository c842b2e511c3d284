#pragma once
// `neardup run`'s service: consume -> decode -> analysis -> window decision ->
// produce -> commit, at-least-once (default) or exactly-once (kafka.delivery:
// outputs, changelog entries and input offsets in one Kafka transaction,
// stream/kafka/clients/transaction.h).
//
// Threads: the pipeline thread runs run() (poll, route, produce, commit,
// rebalance callbacks, stop); the dedup worker (stream/pipeline/dedup_worker.h)
// decodes and analyzes the batch just polled, in order, while the pipeline
// thread routes the batch before it; with the group judge (the default,
// kafka.judge_topic) a judge thread (stream/judge/) decides the whole group's
// messages in one order while this process holds the judge topic. A revoke or
// a stop first finishes the batch in flight. librdkafka's own threads do the
// network I/O.
//
// The parts, one concern each (each header says what it owns):
//   decider.h          how verdicts are taken: locally (the worker owns the
//                      window; the changelog carries it) or by the group's
//                      judge (requests out, verdicts in); chosen once. A
//                      decider calls the loop back only through its
//                      DecisionSink, never the state below
//   delivery.h         how outputs and input offsets become durable:
//                      at-least-once or exactly-once (transactions); chosen
//                      once. It calls the loop back only through its
//                      DeliveryLoop
//   output_router.h    output records, headers, dead letters (cut to fit)
//   service_impl.h     the state of one service, shared by service.cc (the
//                      loop, the per-message steps), service_delivery.cc
//                      (delivery reports, the drain, the input's hold) and
//                      service_rebalance.cc
//   host.h             the embedded broker, metrics endpoint and progress line around a Service
//   stream/core/       sources (window refs), the offset ledger, the counters
//
// Delivery: every input message gets an entry in the OffsetLedger with the
// number of its outputs not yet acknowledged (its records, its changelog
// entry, or its verdict from the judge); offsets are committed only past the
// prefix whose outputs are all acknowledged, so a crash replays (never loses)
// what was in flight. A record a topic refuses as a record (too large,
// invalid) goes to the dead-letter topic instead; a cluster fault
// (authorization, missing topic, fenced producer, a record undeliverable after
// librdkafka's retries) stops the service (non-zero exit) before its offset
// is committed.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "stream/core/process.h"
#include "stream/core/service_stats.h"
#include "stream/kafka/client_properties.h"

namespace neardup::metrics {
class RecentPairs;
}

namespace neardup::stream {

class BrokerHealth;

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
  /// Benchmark baseline: forward every message unchanged, no decode or dedup
  /// (the passthrough decider, at-least-once).
  bool bypass_dedup = false;
  std::chrono::milliseconds commit_interval{200};
  std::chrono::milliseconds progress_interval{500};
  std::chrono::milliseconds shutdown_flush{8000};           ///< SIGTERM must exit within 10 s
  std::function<void(const ServiceSnapshot&)> on_progress;  ///< pipeline thread
  std::function<void(const VerdictEvent&)> on_verdict;      ///< pipeline thread
  /// exactly-once: also commit each transaction's input offsets through the
  /// consumer, synchronously, once the transaction committed (the same
  /// offsets). Needed by brokers that do not keep transactional offset
  /// commits: librdkafka 2.0.2's mock cluster (`neardup broker`, the embedded
  /// broker) accepts TxnOffsetCommit and drops the offsets. On a real broker it
  /// costs one request per commit interval; a crash between the two commits
  /// costs nothing there (the transaction holds the offsets).
  bool commit_offsets_after_transaction = true;
  /// Fed by the service's producer and consumer (stream/kafka/clients/broker_health.h); not
  /// owned, must outlive the Service. nullptr: no broker connection tracking.
  BrokerHealth* broker_health = nullptr;
  /// The page's data (metrics/page/recent_pairs.h): each kept message's text and
  /// each duplicate pair, recorded where the verdict is routed (with or
  /// without a judge). Not owned, must outlive the Service; nullptr: not recorded.
  metrics::RecentPairs* recent_pairs = nullptr;
};

/// Owns the consumer, the producer and the Engine. Construct and run() on one
/// thread; request_stop() from any thread (or a signal handler: it only stores
/// an atomic flag).
class Service {
 public:
  struct Impl;  ///< internal: stream/service/service_impl.h
  /// run()'s status when the cluster's topics do not fit the configuration
  /// (a judge or verdict topic with more than one partition): restarting
  /// cannot help, as with a configuration error (`neardup run` exits 2).
  static constexpr int kTopicLayoutError = 2;
  /// run()'s status when another process joined the group with this one's
  /// kafka.instance_id (the coordinator fenced this one): a restart would
  /// fence the other in turn, so it is not one a supervisor should retry.
  static constexpr int kFencedInstance = 2;
  /// Throws config::ConfigError / kafka::KafkaError / std::invalid_argument for
  /// an unusable configuration (bad property, bad dedup options).
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Runs until request_stop() or a stop signal (then: stop fetching, flush, commit; returns 0)
  /// or a fatal Kafka error (logged clearly; returns 1, offsets of undelivered
  /// messages are not committed), or kTopicLayoutError / kFencedInstance (logged as clearly).
  int run();
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  /// The last error that stopped run() with status 1 or kTopicLayoutError ("" if none).
  const std::string& fatal_error() const;
  /// A copy of the counters (pipeline thread only, or after run() returned).
  ServiceSnapshot snapshot() const;

 private:
  friend struct ServiceTesting;  ///< tests: simulated crashes (service_testing.h)
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace neardup::stream
