// `neardup demo`: the README's run command. The service on the embedded broker,
// fed a demo stream (deploy/demo/feed.jsonl: news items and reposts with small
// edits), with a progress line, metrics, and a summary at the end.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "app/cli.h"
#include "stream/host.h"
#include "stream/kafka.h"

#ifndef NEARDUP_SOURCE_DIR_DEFAULT
#define NEARDUP_SOURCE_DIR_DEFAULT "."
#endif

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup demo [--feed FILE] [--rate N] [--action drop|tag|route] [--metrics-listen "
    "ADDR]\n"
    "\n"
    "Starts the embedded Kafka broker and the service, feeds it a demo stream of\n"
    "news items and reposts with small edits (JSON Lines with a \"text\" field),\n"
    "shows a progress line, and prints a summary: in / unique / duplicates /\n"
    "invalid and example pairs with their Hamming distance. Metrics are served\n"
    "while it runs.\n"
    "\n"
    "  --feed FILE            default deploy/demo/feed.jsonl\n"
    "  --rate N               messages per second fed (default 100)\n"
    "  --action A             drop (default), tag or route\n"
    "  --metrics-listen ADDR  default 127.0.0.1:9464 (\"\" disables)\n"
    "\n"
    "example:\n"
    "  neardup demo --rate 500\n";

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read the demo feed '" + path +
                             "' (run from the repository root or pass --feed)");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw std::runtime_error("the demo feed '" + path + "' is empty");
  return lines;
}

int run_demo(std::span<const std::string> raw) {
  cli::Args args(raw, {"feed", "rate", "action", "metrics-listen"});
  if (!args.positionals().empty())
    throw cli::UsageError("unexpected argument '" + args.positionals()[0] + "'");
  const auto feed = read_lines(args.get("feed").value_or("deploy/demo/feed.jsonl"));
  const long long rate = args.get_int("rate", 1, 1'000'000).value_or(100);

  config::Config cfg;
  cfg.kafka.brokers.reset();  // always the embedded broker
  cfg.kafka.group_id = "neardup-demo";
  cfg.input.format = config::InputFormat::json;
  cfg.input.text_fields = {"/text"};
  cfg.input.id_field = "/id";
  if (auto action = args.get("action")) {
    if (*action == "drop")
      cfg.action = config::Action::drop;
    else if (*action == "tag")
      cfg.action = config::Action::tag;
    else if (*action == "route")
      cfg.action = config::Action::route;
    else
      throw cli::UsageError("--action: expected drop, tag or route, got '" + *action + "'");
  }
  if (auto listen = args.get("metrics-listen")) cfg.metrics.listen = *listen;
  stream::configure_logging(cfg.log);

  // Texts by source coordinates, to show example pairs at the end.
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> texts;
  struct Pair {
    std::string kept, duplicate;
    int distance;
    std::optional<double> similarity;
  };
  std::vector<Pair> examples;

  std::atomic<bool> stop_feeder{false};
  std::thread feeder;
  stream::HostOptions host;
  host.force_progress = true;
  host.progress_every = std::chrono::milliseconds(500);
  host.on_brokers = [&](const std::string& brokers) {
    feeder = std::thread([&, brokers] {
      std::atomic<int> failed{0};
      stream::kafka::Producer producer(
          stream::default_producer_properties(brokers),
          [&](const rd_kafka_message_t& m) { failed += m.err ? 1 : 0; });
      auto next = std::chrono::steady_clock::now();
      const auto gap = std::chrono::nanoseconds(1'000'000'000LL / rate);
      for (const auto& line : feed) {
        if (stop_feeder.load()) break;
        std::this_thread::sleep_until(next);  // pacing the demo feed, not a test wait
        next += gap;
        stream::kafka::Producer::Record rec;
        rec.topic = cfg.kafka.input_topics.front();
        rec.value = line;
        producer.produce(rec);
        producer.poll(std::chrono::milliseconds(0));
      }
      producer.flush(std::chrono::seconds(10));
      if (failed.load())
        stream::log(config::LogLevel::error,
                    "demo feeder: " + std::to_string(failed.load()) + " records not delivered");
    });
  };
  host.on_verdict = [&](const stream::VerdictEvent& e) {
    texts[{e.partition, e.offset}] = std::string(e.text);
    if (e.verdict->kind == dedup::VerdictKind::duplicate && e.verdict->match &&
        examples.size() < 5) {
      auto it = texts.find({e.of_partition, e.of_offset});
      if (it != texts.end())
        examples.push_back(
            {it->second, std::string(e.text), e.verdict->match->distance, e.verdict->similarity});
    }
  };
  const std::uint64_t total = feed.size();
  host.done = [total](const stream::ServiceSnapshot& s) {
    return s.consumed >= total && s.committed >= total;
  };

  stream::ServiceSnapshot last;
  int status = 1;
  try {
    status = stream::host_service(cfg, host, &last);
  } catch (...) {
    stop_feeder = true;
    if (feeder.joinable()) feeder.join();
    throw;
  }
  stop_feeder = true;
  if (feeder.joinable()) feeder.join();

  auto clip = [](const std::string& t) {  // at most ~90 bytes, never inside a UTF-8 sequence
    if (t.size() <= 90) return t;
    std::size_t end = 87;
    while (end > 0 && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) --end;
    return t.substr(0, end) + "...";
  };
  std::cout << "\nneardup demo summary (action " << args.get("action").value_or("drop") << ")\n"
            << "  in:         " << last.consumed << " of " << feed.size() << " fed\n"
            << "  unique:     " << last.unique << "\n"
            << "  duplicates: " << last.duplicate << "\n"
            << "  invalid:    " << last.invalid << " (sent to the dead-letter topic)\n"
            << "  republished and acknowledged: " << last.produced << "\n";
  const auto reposts = std::count_if(feed.begin(), feed.end(), [](const std::string& line) {
    return line.find("\"repost_of\"") != std::string::npos;
  });
  if (reposts > 0)
    std::cout << "  (the feed holds " << reposts << " deliberate reposts, marked repost_of)\n";
  if (!examples.empty()) {
    std::cout << "example pairs (SimHash distance in bits of 64; estimated shingle similarity when "
                 "the sketch decided):\n";
  }
  for (const auto& p : examples) {
    char similarity[32] = "";
    if (p.similarity) std::snprintf(similarity, sizeof similarity, "  sim=%.2f", *p.similarity);
    std::cout << "  d=" << p.distance << similarity << "\n       kept: " << clip(p.kept) << "\n"
              << "       dup:  " << clip(p.duplicate) << "\n";
  }
  return status;
}

const cli::Registrar kDemo{{"demo",
                            "the service on the embedded broker with a demo feed, and a summary",
                            kHelp, run_demo}};

}  // namespace
}  // namespace neardup::app
