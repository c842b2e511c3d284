// `neardup demo`: the README's run command. The service on the embedded broker,
// fed a demo stream (deploy/demo/feed.jsonl: news items and reposts with small
// edits; installed as share/neardup/demo/feed.jsonl) at a steady rate, with a
// progress line, metrics and the page, for --duration; then a summary that is
// the same on every run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "app/cli.h"
#include "config/values.h"
#include "stream/kafka/kafka.h"
#include "stream/service/host.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup demo [--duration D] [--rate N] [--feed FILE] [--action drop|tag|route]\n"
    "                    [--metrics-listen ADDR]\n"
    "\n"
    "Starts the embedded Kafka broker and the service and feeds it a demo stream\n"
    "of news items and reposts with small edits (JSON Lines with a \"text\" field)\n"
    "at a steady rate, with a progress line; the page (http://ADDR/) shows the\n"
    "pairs it finds and /metrics is served. After --duration (or on Ctrl-C) it\n"
    "prints a summary: in / unique / duplicates / invalid and the first example\n"
    "pairs. It feeds each line of the feed once, on one partition, with event\n"
    "times 1/rate apart, as many as fit rate x duration: the same flags give the\n"
    "same summary on every run. After the feed it stays up until the duration ends.\n"
    "\n"
    "  --duration D           how long to run: 60s (default), 5m, 90 (seconds), ...\n"
    "  --rate N               lines per second (default 5: the demo feed's 291\n"
    "                         lines take 58 s)\n"
    "  --feed FILE            default: deploy/demo/feed.jsonl in the repository\n"
    "                         (the current directory), else the installed copy,\n"
    "                         ../share/neardup/demo/feed.jsonl from the executable\n"
    "  --action A             drop (default), tag or route\n"
    "  --metrics-listen ADDR  default 127.0.0.1:9464 (\"\" disables)\n"
    "\n"
    "examples:\n"
    "  neardup demo                         # then open http://127.0.0.1:9464/\n"
    "  neardup demo --duration 5 --rate 97  # the whole feed in 3 s\n";

// The demo feed without --feed: the repository's (run from its root), else the
// one installed beside the executable (CMakeLists.txt installs it to
// share/neardup/demo/ under the prefix, the executable to bin/). Throws, naming
// every place it looked, when there is none.
std::string find_feed() {
  namespace fs = std::filesystem;
  std::vector<fs::path> looked{"deploy/demo/feed.jsonl"};
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error)
    looked.push_back(
        (executable.parent_path() / "../share/neardup/demo/feed.jsonl").lexically_normal());
  for (const auto& path : looked) {
    if (fs::is_regular_file(path, error)) return path.string();
  }
  std::string places;
  for (const auto& path : looked) places += (places.empty() ? "" : ", ") + path.string();
  throw std::runtime_error("cannot find the demo feed: looked in " + places +
                           " (run from the repository root, install neardup, or pass --feed FILE)");
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the demo feed '" + path + "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw std::runtime_error("the demo feed '" + path + "' is empty");
  return lines;
}

int run_demo(std::span<const std::string> raw) {
  cli::Args args(raw, {"feed", "rate", "duration", "action", "metrics-listen"});
  args.expect_no_positionals();
  const auto feed = read_lines(args.has("feed") ? *args.get("feed") : find_feed());
  const long long rate = args.get_int("rate", 1, 1'000'000).value_or(5);
  std::chrono::milliseconds duration{60'000};
  if (auto text = args.get("duration")) {
    const auto parsed = config::parse_duration(*text);
    if (!parsed || *parsed < std::chrono::milliseconds(1) || *parsed > std::chrono::hours(24 * 7))
      throw cli::UsageError("--duration: expected a duration from 1ms to 7d like 60s or 5m, got '" +
                            *text + "'");
    duration = *parsed;
  }
  // The feed's lines once, or as many as fit rate x duration (at least one):
  // fixed by the flags, not by the clock.
  const std::uint64_t total = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(rate) * static_cast<std::uint64_t>(duration.count()) / 1000, 1,
      feed.size());

  config::Config cfg;
  cfg.kafka.brokers.reset();  // always the embedded broker
  cfg.kafka.group_id = "neardup-demo";
  config::derive_group_topics(cfg.kafka);  // its own topics, as any group's
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

  // The first example pairs, for the summary (the page shows the latest ones).
  // Texts by source coordinates are kept only until the examples are found.
  constexpr std::size_t kExamples = 5;
  constexpr std::size_t kMaxTexts = 10'000;
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> texts;
  struct Pair {
    std::string kept, duplicate;
    int distance;
    std::optional<double> similarity;
  };
  std::vector<Pair> examples;

  std::atomic<bool> stop_feeder{false};
  std::atomic<std::uint64_t> fed{0};
  const auto started = std::chrono::steady_clock::now();
  std::thread feeder;
  stream::HostOptions host;
  // (the "\r" progress line only on a terminal: `neardup demo 2>file` gets log lines alone)
  host.progress_every = std::chrono::milliseconds(500);
  host.http_workers = 64;  // one person's browser and a scraper; Ctrl-C joins them all
  host.on_brokers = [&](const std::string& brokers) {
    feeder = std::thread([&, brokers] {
      std::atomic<int> failed{0};
      stream::kafka::Producer producer(
          stream::default_producer_properties(brokers),
          [&](stream::kafka::Message report) { failed += report.error() ? 1 : 0; });
      // Event times 1/rate apart from the start, whatever the pacing: the
      // window's time-based expiry then decides the same on every run.
      const std::int64_t start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
      const auto begin = std::chrono::steady_clock::now();
      for (std::uint64_t i = 0; i < total; ++i) {
        // Paced by the schedule (record i at i/rate s), checking for a stop at least every 100 ms.
        const auto due = begin + std::chrono::nanoseconds(static_cast<std::int64_t>(
                                     i * 1'000'000'000ULL / static_cast<std::uint64_t>(rate)));
        while (!stop_feeder.load() && !stream::stop_signalled() &&
               std::chrono::steady_clock::now() < due) {
          std::this_thread::sleep_until(
              std::min(due, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
        }
        if (stop_feeder.load() || stream::stop_signalled()) break;
        stream::kafka::Producer::Record rec;
        rec.topic = cfg.kafka.input_topics.front();
        rec.partition = 0;  // one partition: one order, the same verdicts every run
        rec.value = feed[i];
        rec.timestamp_ms =
            start_ms + static_cast<std::int64_t>(i * 1000 / static_cast<std::uint64_t>(rate));
        producer.produce(rec);
        producer.poll(std::chrono::milliseconds(0));
        fed.store(i + 1);
      }
      const bool stopped = stop_feeder.load() || stream::stop_signalled();
      producer.flush(stopped ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10'000));
      if (failed.load() && !stopped)
        stream::log(config::LogLevel::error,
                    "demo feeder: " + std::to_string(failed.load()) + " records not delivered");
    });
  };
  host.on_verdict = [&](const stream::VerdictEvent& e) {
    if (examples.size() >= kExamples) return;
    if (texts.size() < kMaxTexts) texts[{e.partition, e.offset}] = std::string(e.text);
    if (e.verdict->kind == dedup::VerdictKind::duplicate && e.verdict->match) {
      auto it = texts.find({e.of_partition, e.of_offset});
      if (it != texts.end())
        examples.push_back(
            {it->second, std::string(e.text), e.verdict->match->distance, e.verdict->similarity});
      if (examples.size() >= kExamples) texts.clear();
    }
  };
  // Runs for the whole duration (the page and the metrics stay up after the
  // feed), and on until everything fed is judged and committed.
  // The feeder's producer goes while the embedded broker still answers it.
  host.on_stopped = [&] {
    stop_feeder = true;
    if (feeder.joinable()) feeder.join();
  };
  host.done = [&, total](const stream::ServiceSnapshot& s) {
    return std::chrono::steady_clock::now() - started >= duration && fed.load() >= total &&
           s.consumed >= total && s.committed >= total;
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
  const bool complete = fed.load() >= total && last.consumed >= total;
  std::cout << "\nneardup demo summary (action " << args.get("action").value_or("drop") << ", "
            << total << " records at " << rate << "/s)\n";
  if (!complete)
    std::cout << "  stopped early: " << fed.load() << " of " << total
              << " records fed (the counts below are partial)\n";
  std::cout << "  in:         " << last.consumed << " of " << total << " fed\n"
            << "  unique:     " << last.unique << "\n"
            << "  duplicates: " << last.duplicate << "\n"
            << "  invalid:    " << last.invalid << " (sent to the dead-letter topic)\n"
            << "  republished and acknowledged: " << last.produced << "\n";
  std::uint64_t reposts = 0;
  for (std::uint64_t i = 0; i < total; ++i)
    reposts += feed[i].find("\"repost_of\"") != std::string::npos ? 1 : 0;
  if (reposts > 0)
    std::cout << "  (the records fed hold " << reposts
              << " deliberate reposts, marked repost_of)\n";
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
