#include "stream/service/host.h"

#include <atomic>
#include <memory>
#include <thread>

#include "metrics/page/recent_pairs.h"
#include "metrics/progress.h"
#include "stream/core/process.h"
#include "stream/kafka/clients/broker_health.h"
#include "stream/kafka/clients/embedded_broker.h"

namespace neardup::stream {
namespace {

/// Keeps the brokers' state and readiness current on the metrics endpoint
/// while the pipeline thread, which publishes on its progress ticks, is held
/// up in a Kafka call (a transaction's commit waits up to its timeout through
/// an outage). Its own thread; reads BrokerHealth (thread-safe) and the last
/// stats the pipeline published.
class StaleGuard {
 public:
  StaleGuard(metrics::Exporter& exporter, BrokerHealth& health)
      : exporter_(exporter), health_(health), thread_([this] { run(); }) {}
  ~StaleGuard() {
    quit_.store(true);
    thread_.join();
  }
  StaleGuard(const StaleGuard&) = delete;
  StaleGuard& operator=(const StaleGuard&) = delete;

  /// The pipeline thread's publish: what to repeat with fresh broker state.
  void published(const metrics::ServiceStats& stats, const Readiness& readiness) {
    base::MutexLock lock(mutex_);
    stats_ = stats;
    readiness_ = readiness;
    at_ = std::chrono::steady_clock::now();
    has_ = true;
  }

 private:
  static constexpr std::chrono::milliseconds kStaleAfter{1500};

  void run() {
    while (!quit_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      metrics::ServiceStats stats;
      Readiness readiness;
      {
        base::MutexLock lock(mutex_);
        if (!has_ || std::chrono::steady_clock::now() - at_ < kStaleAfter) continue;
        stats = stats_;
        readiness = readiness_;
      }
      const BrokerHealth::Snapshot kafka = health_.snapshot();
      add_to_metrics(kafka, stats);
      exporter_.publish(stats);
      const std::string why_not = not_ready_reason(kafka, readiness);
      exporter_.set_ready(why_not.empty(), why_not);
    }
  }

  metrics::Exporter& exporter_;
  BrokerHealth& health_;
  base::Mutex mutex_;
  metrics::ServiceStats stats_ GUARDED_BY(mutex_);
  Readiness readiness_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point at_ GUARDED_BY(mutex_);
  bool has_ GUARDED_BY(mutex_) = false;
  std::atomic<bool> quit_{false};
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace

int host_service(const config::Config& config, const HostOptions& host, ServiceSnapshot* final) {
  install_stop_signal_handlers();
  std::unique_ptr<EmbeddedBroker> broker;
  std::string brokers;
  if (config.kafka.brokers && !config.kafka.brokers->empty()) {
    brokers = *config.kafka.brokers;
  } else {
    broker = std::make_unique<EmbeddedBroker>();
    for (const auto& topic : service_topics(config.kafka))
      broker->create_topic(topic, config.kafka.embedded_partitions);
    for (const auto& topic : judge_topics(config.kafka)) broker->create_topic(topic, 1);
    brokers = broker->bootstrap();
    log(config::LogLevel::info, "embedded broker at " + brokers);
    if (!host.bootstrap_file.empty()) write_bootstrap_file(host.bootstrap_file, brokers);
  }

  std::unique_ptr<metrics::RecentPairs> pairs;  // before the exporter: its requests read it
  std::unique_ptr<metrics::Exporter> exporter;
  if (!config.metrics.listen.empty()) {
    pairs = std::make_unique<metrics::RecentPairs>();
    metrics::BuildInfo build;
#ifdef NEARDUP_VERSION
    build.version = NEARDUP_VERSION;
#endif
    build.labels = {{"k", std::to_string(config.dedup.index.max_distance)},
                    {"action", config.action == config::Action::drop  ? "drop"
                               : config.action == config::Action::tag ? "tag"
                                                                      : "route"}};
    exporter = std::make_unique<metrics::Exporter>(config.metrics.listen, build, pairs.get(),
                                                   host.http_workers, host.page_access);
    log(config::LogLevel::info, "metrics at http://" + exporter->address() + "/metrics");
    if (exporter->page_served()) {
      log(config::LogLevel::info, "the page at http://" + exporter->address() + "/");
    } else {
      log(config::LogLevel::info, "no page: / and /api/summary on " + exporter->address() +
                                      " answer 403: " + metrics::page_off_reason(host.page_access));
    }
  }
  metrics::ProgressLine progress(stderr, host.progress_every, host.force_progress);

  BrokerHealth broker_health;  // before the service: its clients report here until they are gone
  ServiceOptions options;
  options.config = config;
  options.brokers = brokers;
  options.on_verdict = host.on_verdict;
  options.broker_health = &broker_health;
  options.recent_pairs = pairs.get();
  Service* self = nullptr;
  const int k = config.dedup.index.max_distance;
  std::unique_ptr<StaleGuard> stale_guard;  // (set once the service exists)
  options.on_progress = [&](const ServiceSnapshot& snapshot) {
    metrics::ServiceStats m = to_metrics(snapshot, k);
    if (pairs) m.pairs_recorded = pairs->recorded();  // (this thread records them)
    const BrokerHealth::Snapshot kafka = broker_health.snapshot();
    add_to_metrics(kafka, m);
    if (exporter) {
      exporter->publish(m);
      const Readiness readiness{.assigned = snapshot.assigned,
                                .window_ready = snapshot.window_ready,
                                .judge_waiting_seconds = snapshot.judge_waiting_seconds,
                                .judge_awaiting = snapshot.judge_awaiting};
      const std::string why_not = not_ready_reason(kafka, readiness);
      exporter->set_ready(why_not.empty(), why_not);
      if (stale_guard) stale_guard->published(m, readiness);
    }
    progress.update(m, std::chrono::steady_clock::now());
    if (host.done && self && host.done(snapshot)) self->request_stop();
  };
  Service service(std::move(options));
  self = &service;
  if (exporter) stale_guard = std::make_unique<StaleGuard>(*exporter, broker_health);
  if (host.on_brokers) host.on_brokers(brokers);
  log(config::LogLevel::info, "consuming " + std::to_string(config.kafka.input_topics.size()) +
                                  " topic(s) from " + brokers + " as group '" +
                                  config.kafka.group_id + "'");
  int status = service.run();
  stale_guard.reset();
  progress.finish();
  if (host.on_stopped) host.on_stopped();
  ServiceSnapshot last = service.snapshot();
  if (exporter) {
    metrics::ServiceStats m = to_metrics(last, k);
    if (pairs) m.pairs_recorded = pairs->recorded();
    add_to_metrics(broker_health.snapshot(), m);
    exporter->publish(m);
  }
  if (final) *final = std::move(last);
  return status;
}

}  // namespace neardup::stream
