#include "stream/host.h"

#include <memory>

#include "metrics/progress.h"
#include "metrics/recent_pairs.h"
#include "stream/broker_health.h"
#include "stream/embedded_broker.h"
#include "stream/process.h"

namespace neardup::stream {

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
    log(config::LogLevel::info, "the page at http://" + exporter->address() + "/");
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
  options.on_progress = [&](const ServiceSnapshot& snapshot) {
    metrics::ServiceStats m = to_metrics(snapshot, k);
    const BrokerHealth::Snapshot kafka = broker_health.snapshot();
    add_to_metrics(kafka, m);
    if (exporter) {
      exporter->publish(m);
      const std::string why_not = not_ready_reason(kafka, snapshot.assigned, snapshot.window_ready);
      exporter->set_ready(why_not.empty(), why_not);
    }
    progress.update(m, std::chrono::steady_clock::now());
    if (host.done && self && host.done(snapshot)) self->request_stop();
  };
  Service service(std::move(options));
  self = &service;
  if (host.on_brokers) host.on_brokers(brokers);
  log(config::LogLevel::info, "consuming " + std::to_string(config.kafka.input_topics.size()) +
                                  " topic(s) from " + brokers + " as group '" +
                                  config.kafka.group_id + "'");
  int status = service.run();
  progress.finish();
  if (host.on_stopped) host.on_stopped();
  ServiceSnapshot last = service.snapshot();
  if (exporter) {
    metrics::ServiceStats m = to_metrics(last, k);
    add_to_metrics(broker_health.snapshot(), m);
    exporter->publish(m);
  }
  if (final) *final = std::move(last);
  return status;
}

}  // namespace neardup::stream
