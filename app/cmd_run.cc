// `neardup run`: the service (consume -> dedup -> produce) on Kafka.
#include <iostream>

#include "app/cli.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "stream/service/host.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup run [--config FILE] [--brokers HOST:PORT,...] [--bootstrap-file F]\n"
    "\n"
    "Consumes kafka.input_topics, fingerprints each message and republishes:\n"
    "unique messages to kafka.output_topic (key, value, headers, timestamp intact);\n"
    "near-duplicates by `action`: drop (counted only), tag (republished with\n"
    "neardup-* headers) or route (to kafka.duplicates_topic with those headers);\n"
    "invalid messages to kafka.dead_letter_topic with a neardup-error header.\n"
    "At-least-once: offsets are committed only after the outputs are acknowledged.\n"
    "Window changelog (kafka.changelog_topic, \"\" = off): every kept message is also\n"
    "recorded there; on start the window is rebuilt from it before any input is read\n"
    "(/readyz turns ready after that), and instances follow each other's records.\n"
    "SIGTERM/SIGINT stop fetching, flush, commit and exit 0.\n"
    "\n"
    "  --config FILE        YAML configuration (see `neardup config check`)\n"
    "  --brokers LIST       bootstrap servers; overrides kafka.brokers. Without any,\n"
    "                       neardup starts its embedded broker (a librdkafka mock\n"
    "                       cluster on 127.0.0.1; keeps only a few MB per partition)\n"
    "  --bootstrap-file F   write the embedded broker's address to F\n"
    "\n"
    "example:\n"
    "  neardup run --config deploy/examples/cluster.yaml --brokers kafka-1:9092\n";

int run_run(std::span<const std::string> raw) {
  cli::Args args(raw, {"config", "brokers", "bootstrap-file"});
  args.expect_no_positionals();
  config::Config cfg = cli::kafka_command_config(args);
  stream::configure_logging(cfg.log);
  stream::HostOptions host;
  host.page_access = cli::page_access(cfg.metrics);
  host.bootstrap_file = args.get("bootstrap-file").value_or("");
  stream::ServiceSnapshot last;
  int status = stream::host_service(cfg, host, &last);
  stream::log(status == 0 ? config::LogLevel::info : config::LogLevel::error,
              "stopped: in=" + std::to_string(last.consumed) + " unique=" +
                  std::to_string(last.unique) + " duplicates=" + std::to_string(last.duplicate) +
                  " invalid=" + std::to_string(last.invalid) + " produced=" +
                  std::to_string(last.produced) + " committed=" + std::to_string(last.committed));
  return status;
}

const cli::Registrar kRun{{"run",
                           "the service: consume Kafka, drop/tag/route near-duplicates, republish",
                           kHelp, run_run}};

}  // namespace
}  // namespace neardup::app
