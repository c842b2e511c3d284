#pragma once
// What `neardup run` and `neardup demo` share around a Service: the embedded
// broker when kafka.brokers is absent, the metrics endpoint, the progress line,
// SIGTERM/SIGINT. Called on the main thread.

#include <chrono>
#include <functional>
#include <string>

#include "config/config.h"
#include "metrics/http/page_access.h"
#include "stream/service/service.h"

namespace neardup::stream {

/// The embedded broker is started when kafka.brokers is absent (topics created,
/// "embedded broker at ADDR" logged).
struct HostOptions {
  std::string bootstrap_file;   ///< write the embedded broker's address here
  bool force_progress = false;  ///< show the progress line even when stderr is not a terminal
  std::chrono::milliseconds progress_every{2000};
  /// The metrics endpoint's worker ceiling (metrics/http/http_server.h; the demo needs few).
  int http_workers = 1024;
  /// Who may read the page's message texts (metrics.page*; app/cli.h page_access()).
  metrics::PageAccess page_access;
  /// Called once the brokers are known, before the service runs (the demo starts its feeder here).
  std::function<void(const std::string& brokers)> on_brokers;
  std::function<void(const VerdictEvent&)> on_verdict;
  /// Checked on every progress tick; returning true stops the service gracefully.
  std::function<bool(const ServiceSnapshot&)> done;
  /// Called once the service has stopped, before the metrics endpoint and the
  /// embedded broker go (the demo stops its feeder here, while the broker still answers).
  std::function<void()> on_stopped;
};

/// Runs the service until a signal, `done`, or a fatal error. Returns the exit
/// status (0 after a graceful stop, 1 after a fatal Kafka error). `final` gets
/// the last snapshot. Throws for startup failures (bad config, port in use).
int host_service(const config::Config& config, const HostOptions& host,
                 ServiceSnapshot* final = nullptr);

}  // namespace neardup::stream
