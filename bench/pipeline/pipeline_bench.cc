// neardup_pipeline_bench: end-to-end throughput of `neardup run` against a
// plain consume -> produce passthrough with the same client settings, both on
// the embedded broker in this one process, on the same generated feed
// (~200-byte messages, ~20% near-duplicates).
//
// The feed is produced WHILE the service consumes (the mock broker keeps only a
// few MB per partition): the feeder stays at most --ahead messages ahead of the
// pipeline, so nothing is trimmed before it is read. The clock starts when the
// feeder starts (after the consumer group has its partitions) and stops when
// every input offset is covered by acknowledged outputs.
//
// usage: neardup_pipeline_bench [--messages N] [--partitions P] [--ahead A] [--action
// drop|tag|route] [--metrics]
//                               [--only passthrough|neardup] [--repeat N]
// --only runs one of the two (for profiling one side; no ratio is printed).
// --repeat N runs N passthrough/neardup pairs (fresh topics and groups each)
// and reports the pair with the median ratio: on a shared machine one pair can
// land in a slow or a fast moment; the pairs' spread is printed too.
// --metrics adds a third run, neardup with its Prometheus exporter on and scraped,
// and prints metrics_on/metrics_off (issue: counting must not slow the hot path).
// (drop, the default action, republishes ~20% fewer records than the
// passthrough; tag republishes every record, the like-for-like comparison)
// Last line: passthrough=<msg/s> neardup=<msg/s> ratio=<neardup/passthrough>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/feed.h"
#include "metrics/metrics.h"
#include "stream/embedded_broker.h"
#include "stream/kafka.h"
#include "stream/service.h"

namespace {

using namespace neardup;
using Clock = std::chrono::steady_clock;

/// ~200-byte news-like messages, ~20% edited reposts (bench/feed.h).
std::vector<std::string> make_feed(std::size_t n) { return bench::FeedGenerator().feed(n, 190); }

struct Result {
  double rate = 0;
  std::int64_t p50_ms = 0, p99_ms = 0;
  double processing_p99_us = 0;
  stream::ServiceSnapshot snapshot;
};

double histogram_quantile(const metrics::Histogram& h, double q) {
  if (h.count == 0) return 0;
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(h.count - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    seen += h.counts[i];
    if (seen >= rank) return i < h.bounds.size() ? h.bounds[i] : h.bounds.back();
  }
  return h.bounds.back();
}

/// One GET of http://address/metrics, as a Prometheus scrape would; returns the body size.
std::size_t scrape(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(address.c_str() + colon + 1)));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  std::size_t total = 0;
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const char request[] = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    if (write(fd, request, sizeof request - 1) > 0) {
      char buffer[8192];
      for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
        total += static_cast<std::size_t>(n);
    }
  }
  if (fd >= 0) close(fd);
  return total;
}

/// `with_metrics`: also run the Prometheus exporter as `neardup run` does
/// (publish on every progress tick) and scrape it every 100 ms, 10x more often
/// than a typical Prometheus, so the cost of counting and exporting shows.
Result run_one(const std::string& brokers, const std::vector<std::string>& feed,
               const std::string& name, bool bypass, std::size_t ahead, config::Action action,
               bool with_metrics = false) {
  const std::string in = name + "-in", out = name + "-out";
  config::Config cfg;
  cfg.kafka.group_id = name;
  cfg.kafka.input_topics = {in};
  cfg.kafka.output_topic = out;
  cfg.kafka.duplicates_topic = name + "-dup";
  cfg.kafka.dead_letter_topic = name + "-dead";
  cfg.kafka.changelog_topic =
      name + "-window";  // one per run: a shared one would replay the other run's window
  cfg.action = action;
  config::apply_env_overrides(cfg);  // e.g. NEARDUP_DEDUP_SKETCH_ENABLED=false to measure a variant

  std::atomic<std::uint64_t> consumed{0};
  std::atomic<bool> assigned{false};
  stream::Service* self = nullptr;
  Clock::time_point finished;
  stream::ServiceOptions options;
  options.config = cfg;
  options.brokers = brokers;
  options.bypass_dedup = bypass;
  options.progress_interval = std::chrono::milliseconds(20);
  options.commit_interval = std::chrono::milliseconds(100);
  std::unique_ptr<metrics::Exporter> exporter;
  if (with_metrics)
    exporter = std::make_unique<metrics::Exporter>("127.0.0.1:0", metrics::BuildInfo{"bench", {}});
  options.on_progress = [&](const stream::ServiceSnapshot& s) {
    if (exporter) exporter->publish(stream::to_metrics(s, cfg.dedup.index.max_distance));
    consumed.store(s.consumed);
    if (s.assigned) assigned.store(true);
    if (s.committed >= feed.size() && self) {
      finished = Clock::now();
      self->request_stop();
    }
  };
  stream::Service service(options);
  self = &service;

  Clock::time_point started;
  std::atomic<bool> abort_feed{false};
  std::thread feeder([&] {
    stream::kafka::Producer producer(stream::default_producer_properties(brokers),
                                     [](const rd_kafka_message_t&) {});
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!assigned.load() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    started = Clock::now();
    std::uint64_t sent = 0;
    for (const auto& text : feed) {
      while (sent - consumed.load() > ahead && !abort_feed.load()) {
        producer.poll(std::chrono::milliseconds(1));
      }
      if (abort_feed.load()) break;
      stream::kafka::Producer::Record rec;
      rec.topic = in;
      rec.value = text;
      rec.key = std::string_view(text).substr(0, 12);
      rec.has_key = true;
      producer.produce(rec);
      ++sent;
      if ((sent & 1023) == 0) producer.poll(std::chrono::milliseconds(0));
    }
    producer.flush(std::chrono::seconds(30));
  });

  // A bounded run: stop after 10 minutes whatever happens.
  std::thread watchdog([&] {
    auto deadline = Clock::now() + std::chrono::minutes(10);
    while (Clock::now() < deadline && !abort_feed.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    service.request_stop();
  });
  std::atomic<std::size_t> scraped{0};
  std::thread scraper([&] {
    while (exporter && !abort_feed.load()) {
      scraped += scrape(exporter->address()) > 0 ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  int status = service.run();
  abort_feed.store(true);
  feeder.join();
  watchdog.join();
  scraper.join();
  if (exporter && scraped.load() == 0) {
    std::fprintf(stderr, "%s: the metrics endpoint never answered\n", name.c_str());
    std::exit(1);
  }
  if (status != 0) {
    std::fprintf(stderr, "%s: service failed: %s\n", name.c_str(), service.fatal_error().c_str());
    std::exit(1);
  }
  Result r;
  r.snapshot = service.snapshot();
  if (r.snapshot.committed < feed.size()) {
    std::fprintf(stderr, "%s: only %llu of %zu messages completed before the time limit\n",
                 name.c_str(), static_cast<unsigned long long>(r.snapshot.committed), feed.size());
    std::exit(1);
  }
  double seconds = std::chrono::duration<double>(finished - started).count();
  r.rate = static_cast<double>(feed.size()) / seconds;
  r.p50_ms = r.snapshot.end_to_end.quantile_ms(0.5);
  r.p99_ms = r.snapshot.end_to_end.quantile_ms(0.99);
  r.processing_p99_us = histogram_quantile(r.snapshot.processing_seconds, 0.99) * 1e6;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t messages = 300'000, ahead = 50'000;
  int partitions = 8;
  config::Action action = config::Action::drop;
  std::string action_name = "drop";
  bool with_metrics = false;
  std::string only;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> long long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (arg == "--messages")
      messages = static_cast<std::size_t>(std::max(1LL, value()));
    else if (arg == "--partitions")
      partitions = static_cast<int>(std::max(1LL, value()));
    else if (arg == "--ahead")
      ahead = static_cast<std::size_t>(std::max(100LL, value()));
    else if (arg == "--metrics")
      with_metrics = true;
    else if (arg == "--repeat")
      repeat = static_cast<int>(std::clamp(value(), 1LL, 25LL));
    else if (arg == "--only" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "passthrough" || std::string(argv[i + 1]) == "neardup"))
      only = argv[++i];
    else if (arg == "--action" && i + 1 < argc) {
      action_name = argv[++i];
      if (action_name == "drop")
        action = config::Action::drop;
      else if (action_name == "tag")
        action = config::Action::tag;
      else if (action_name == "route")
        action = config::Action::route;
      else {
        std::fprintf(stderr, "--action: expected drop, tag or route\n");
        return 2;
      }
    } else {
      std::fprintf(
          stderr,
          "usage: neardup_pipeline_bench [--messages N] [--partitions P] [--ahead A] [--action "
          "drop|tag|route] [--metrics] [--only passthrough|neardup] [--repeat N]\n");
      return 2;
    }
  }
  neardup::stream::EmbeddedBroker broker;
  // Run r of a side uses its own topics and group: "<side>" for the first, "<side>-<r>" after.
  auto run_name = [](const char* side, int r) {
    return r == 0 ? std::string(side) : std::string(side) + "-" + std::to_string(r);
  };
  for (const char* side : {"passthrough", "neardup", "metrics"}) {
    for (int r = 0; r < (std::string(side) == "metrics" ? 1 : repeat); ++r)
      for (const char* suffix : {"-in", "-out", "-dup", "-dead", "-window"})
        broker.create_topic(run_name(side, r) + suffix, partitions);
  }
  auto feed = make_feed(messages);
  std::size_t bytes = 0;
  for (const auto& t : feed) bytes += t.size();
  std::printf("feed: %zu messages, %.0f bytes average, %d partitions, embedded broker %s\n",
              feed.size(), static_cast<double>(bytes) / static_cast<double>(feed.size()),
              partitions, broker.bootstrap().c_str());

  if (only == "passthrough") {
    Result pass = run_one(broker.bootstrap(), feed, "passthrough", true, ahead, action);
    std::printf("passthrough: %.0f msg/s, end-to-end latency p50=%lldms p99=%lldms\n", pass.rate,
                static_cast<long long>(pass.p50_ms), static_cast<long long>(pass.p99_ms));
    return 0;
  }
  auto print_neardup = [&](const Result& dedup) {
    std::printf(
        "neardup (action %s): %.0f msg/s, unique=%llu duplicate=%llu invalid=%llu, end-to-end "
        "latency p50=%lldms p99=%lldms, "
        "processing p99<=%.1fus\n",
        action_name.c_str(), dedup.rate, static_cast<unsigned long long>(dedup.snapshot.unique),
        static_cast<unsigned long long>(dedup.snapshot.duplicate),
        static_cast<unsigned long long>(dedup.snapshot.invalid),
        static_cast<long long>(dedup.p50_ms), static_cast<long long>(dedup.p99_ms),
        dedup.processing_p99_us);
  };
  if (!only.empty()) {
    print_neardup(run_one(broker.bootstrap(), feed, "neardup", false, ahead, action));
    return 0;
  }
  struct Pair {
    Result pass, dedup;
    double ratio() const { return dedup.rate / pass.rate; }
  };
  std::vector<Pair> pairs;
  for (int r = 0; r < repeat; ++r) {
    Pair pair;
    pair.pass = run_one(broker.bootstrap(), feed, run_name("passthrough", r), true, ahead, action);
    std::printf("passthrough: %.0f msg/s, end-to-end latency p50=%lldms p99=%lldms\n",
                pair.pass.rate, static_cast<long long>(pair.pass.p50_ms),
                static_cast<long long>(pair.pass.p99_ms));
    pair.dedup = run_one(broker.bootstrap(), feed, run_name("neardup", r), false, ahead, action);
    print_neardup(pair.dedup);
    if (repeat > 1) std::printf("pair %d of %d: ratio=%.3f\n", r + 1, repeat, pair.ratio());
    pairs.push_back(std::move(pair));
  }
  std::vector<const Pair*> by_ratio;
  for (const Pair& p : pairs) by_ratio.push_back(&p);
  std::sort(by_ratio.begin(), by_ratio.end(),
            [](const Pair* a, const Pair* b) { return a->ratio() < b->ratio(); });
  const Pair& median = *by_ratio[(by_ratio.size() - 1) / 2];
  const Result& pass = median.pass;
  const Result& dedup = median.dedup;
  if (repeat > 1)
    std::printf(
        "%d pairs: ratio min=%.3f median=%.3f max=%.3f (the lines below are the median pair's)\n",
        repeat, by_ratio.front()->ratio(), median.ratio(), by_ratio.back()->ratio());
  std::printf(
      "p99 added latency: %lldms (end-to-end p99 neardup %lldms - passthrough %lldms; in-engine "
      "p99 <= %.1fus)\n",
      static_cast<long long>(dedup.p99_ms - pass.p99_ms), static_cast<long long>(dedup.p99_ms),
      static_cast<long long>(pass.p99_ms), dedup.processing_p99_us);
  if (with_metrics) {
    Result on = run_one(broker.bootstrap(), feed, "metrics", false, ahead, action, true);
    std::printf(
        "metrics_off=%.0f metrics_on=%.0f metrics_ratio=%.3f (exporter publishing every tick, "
        "scraped every 100ms)\n",
        dedup.rate, on.rate, on.rate / dedup.rate);
  }
  std::printf("passthrough=%.0f neardup=%.0f ratio=%.3f\n", pass.rate, dedup.rate,
              dedup.rate / pass.rate);
  return 0;
}
