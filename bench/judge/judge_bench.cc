// neardup_judge_bench: what consistent scale-out (stream/judge/judge.h) costs, on the
// embedded broker in this one process.
//
// 1. The ceiling: one Judge reads a judge topic filled beforehand with the
//    analyses of --messages feed messages (request records of --batch entries,
//    as instances send them) and answers them; decisions/s from its takeover to
//    the last decision, the engine's share of it, and bytes per entry on the
//    judge topic.
// 2. Latency: 1 and 2 instances fed at a steady --rate msg/s for --seconds,
//    each instance judging its own messages (kafka.judge_topic "") and through
//    the group judge (the default): end-to-end latency p50/p99 (message
//    timestamp -> output acknowledged) and the judge round trip p50/p99
//    (request produced -> its verdicts read).
// 3. Takeover: a judge starts on a changelog of --takeover entries (batches of
//    1000 over 16 partitions, as instances write them; the mock broker keeps a
//    few MB per partition; every other entry with a sketch, as short texts) and reports how long it
//    took from its partition's assignment to its first possible decision (reading the changelog,
//    rebuilding the window), and the time to being active with the group join.
//
// usage: neardup_judge_bench [--messages N] [--batch B] [--rate R] [--seconds S]
//                            [--takeover ENTRIES] [--only ceiling|latency|takeover]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/feed.h"
#include "stream/core/process.h"
#include "stream/judge/judge.h"
#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/pipeline.h"
#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"
#include "stream/service/service.h"

namespace {

using namespace neardup;
using Clock = std::chrono::steady_clock;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

config::Config base_config(const std::string& name) {
  config::Config cfg;
  cfg.kafka.group_id = name;
  cfg.kafka.input_topics = {name + "-in"};
  cfg.kafka.output_topic = name + "-out";
  cfg.kafka.duplicates_topic = name + "-dup";
  cfg.kafka.dead_letter_topic = name + "-dead";
  cfg.kafka.changelog_topic = name + "-window";
  cfg.kafka.judge_topic = name + "-judge";
  cfg.kafka.verdict_topic = name + "-verdicts";
  cfg.kafka.consumer["session.timeout.ms"] = "6000";
  cfg.metrics.listen = "";
  cfg.log.level = config::LogLevel::warn;
  return cfg;
}

void create_topics(stream::EmbeddedBroker& broker, const config::Config& cfg, int partitions) {
  for (const auto& t : stream::service_topics(cfg.kafka)) broker.create_topic(t, partitions);
  for (const auto& t : stream::judge_topics(cfg.kafka)) broker.create_topic(t, 1);
}

/// A producer that fills topics before a measurement (a failed delivery is printed).
std::unique_ptr<stream::kafka::Producer> feeder(stream::EmbeddedBroker& broker) {
  return std::make_unique<stream::kafka::Producer>(
      stream::default_producer_properties(broker.bootstrap()), [](stream::kafka::Message report) {
        if (report.error()) std::fprintf(stderr, "produce failed\n");
      });
}

/// A judge of `cfg`'s group on the embedded broker, as `neardup run` starts one.
stream::JudgeOptions judge_options(stream::EmbeddedBroker& broker, const config::Config& cfg) {
  stream::JudgeOptions options;
  options.config = cfg;
  options.consumer_properties = stream::default_consumer_properties(broker.bootstrap(), "unused");
  options.consumer_properties["session.timeout.ms"] = "6000";
  options.producer_properties = stream::default_producer_properties(broker.bootstrap());
  return options;
}

// ------------------------------------------------------------------ 1. ceiling

void ceiling(stream::EmbeddedBroker& broker, const std::vector<std::string>& feed,
             std::size_t batch) {
  const config::Config cfg = base_config("ceiling");
  create_topics(broker, cfg, 1);
  stream::Analyzer analyzer(cfg);
  stream::Prepared prepared;
  stream::JudgeRequestWriter writer(dedup::fingerprint_schema(cfg.dedup));
  std::size_t bytes = 0, records = 0;
  {
    const auto producer_owner = feeder(broker);
    stream::kafka::Producer& producer = *producer_owner;
    const std::int64_t t0 = wall_ms();
    for (std::size_t first = 0; first < feed.size(); first += batch) {
      writer.start(1, records);
      for (std::size_t i = first; i < std::min(feed.size(), first + batch); ++i) {
        analyzer.prepare(feed[i], prepared);
        writer.add(cfg.kafka.input_topics[0], 0, static_cast<std::int64_t>(i),
                   dedup::EventTime{t0 + static_cast<std::int64_t>(i)}, prepared.analysis);
      }
      stream::kafka::Producer::Record rec;
      rec.topic = cfg.kafka.judge_topic;
      rec.partition = 0;
      rec.value = writer.finish();
      bytes += rec.value.size();
      ++records;
      producer.produce(rec);
    }
    producer.flush(std::chrono::seconds(60));
  }
  stream::Judge judge(judge_options(broker, cfg));
  while (!judge.stats().active) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::minutes(5);
  while (judge.stats().decisions < feed.size() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const stream::JudgeStats s = judge.stats();
  judge.stop();
  std::printf(
      "ceiling: one judge decided %llu messages in %.2f s: %.0f decisions/s (engine alone %.2f "
      "us/decision = %.0f/s); judge topic %.1f bytes/entry (%zu records of %zu entries)\n",
      static_cast<unsigned long long>(s.decisions), seconds,
      static_cast<double>(s.decisions) / seconds,
      static_cast<double>(s.decide_ns) / 1e3 /
          static_cast<double>(std::max<std::uint64_t>(1, s.decisions)),
      static_cast<double>(s.decisions) / (static_cast<double>(s.decide_ns) * 1e-9),
      static_cast<double>(bytes) / static_cast<double>(feed.size()), records, batch);
}

// ------------------------------------------------------------------ 3. takeover

void takeover(stream::EmbeddedBroker& broker, std::size_t entries) {
  config::Config cfg = base_config("takeover");
  constexpr int kPartitions = 16;
  create_topics(broker, cfg, kPartitions);
  {
    const auto producer_owner = feeder(broker);
    stream::kafka::Producer& producer = *producer_owner;
    stream::ChangelogBatch batch(42);
    std::uint64_t rng = 7;
    const std::int64_t t0 = wall_ms() - static_cast<std::int64_t>(entries);
    std::size_t records = 0;
    for (std::size_t i = 0; i < entries; ++i) {
      stream::ChangelogRecord r;
      r.fingerprint.bits = bench::splitmix64(rng);
      r.time.ms = t0 + static_cast<std::int64_t>(i);
      r.topic = cfg.kafka.input_topics[0];
      r.partition = static_cast<std::int32_t>(i % kPartitions);
      r.offset = static_cast<std::int64_t>(i / kPartitions);
      if (i % 2 == 0 && cfg.dedup.sketch.enabled) {  // half of them short texts, with a sketch
        r.has_sketch = true;
        r.bits = cfg.dedup.sketch.bits;
        r.band_bins = cfg.dedup.sketch.band_bins;
        r.bands = cfg.dedup.sketch.bands;
        r.sketch.shingles = 1;
        r.sketch.sketch.words = {bench::splitmix64(rng), bench::splitmix64(rng)};
        for (int b = 0; b < r.bands; ++b)
          r.sketch.band_keys[static_cast<std::size_t>(b)] = bench::splitmix64(rng);
      }
      batch.add(r);
      if (batch.entries() == 1000 || i + 1 == entries) {
        const auto encoded = batch.take();
        stream::kafka::Producer::Record rec;
        rec.topic = cfg.kafka.changelog_topic;
        rec.partition = static_cast<std::int32_t>(records++ % kPartitions);
        rec.key = encoded.key;
        rec.has_key = true;
        rec.value = encoded.value;
        producer.produce(rec);
        producer.poll(std::chrono::milliseconds(0));
      }
    }
    producer.flush(std::chrono::seconds(60));
  }
  const auto started = Clock::now();
  stream::Judge judge(judge_options(broker, cfg));
  const auto deadline = started + std::chrono::minutes(5);
  while (!judge.stats().active && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double to_active = std::chrono::duration<double>(Clock::now() - started).count();
  const stream::JudgeStats s = judge.stats();
  judge.stop();
  std::printf(
      "takeover: %llu of %zu changelog entries rebuilt; assignment to first decision %.2f s; "
      "start to active %.2f s (with the group join)\n",
      static_cast<unsigned long long>(s.restored), entries,
      static_cast<double>(s.takeover_ns) * 1e-9, to_active);
}

// ------------------------------------------------------------------ 2. latency

struct Instance {
  std::unique_ptr<stream::Service> service;
  std::thread thread;
  std::atomic<std::uint64_t> committed{0};
  std::atomic<bool> assigned{false};
};

void merge(stream::LatencyHistogram& into, const stream::LatencyHistogram& from) {
  for (std::size_t i = 0; i < into.counts.size(); ++i) into.counts[i] += from.counts[i];
  for (std::size_t i = 0; i < into.slow.size(); ++i) into.slow[i] += from.slow[i];
  into.beyond += from.beyond;
  into.total += from.total;
  into.sum_ms += from.sum_ms;
}

void latency(stream::EmbeddedBroker& broker, const std::vector<std::string>& feed, int instances,
             bool judged, int rate, int seconds_long) {
  static int run = 0;
  const std::string name = "lat" + std::to_string(run++);
  config::Config cfg = base_config(name);
  if (!judged) cfg.kafka.judge_topic = "";
  create_topics(broker, cfg, 4);
  std::vector<std::unique_ptr<Instance>> group;
  for (int i = 0; i < instances; ++i) {
    auto in = std::make_unique<Instance>();
    stream::ServiceOptions options;
    options.config = cfg;
    options.brokers = broker.bootstrap();
    options.progress_interval = std::chrono::milliseconds(50);
    Instance* raw = in.get();
    options.on_progress = [raw](const stream::ServiceSnapshot& s) {
      raw->committed.store(s.committed);
      raw->assigned.store(s.assigned);
    };
    in->service = std::make_unique<stream::Service>(std::move(options));
    in->thread = std::thread([raw] { raw->service->run(); });
    group.push_back(std::move(in));
  }
  const auto settle = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < settle &&
         !std::all_of(group.begin(), group.end(), [](const auto& i) { return i->assigned.load(); }))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the judge's takeover
  stream::kafka::Producer producer(stream::default_producer_properties(broker.bootstrap()),
                                   [](stream::kafka::Message) {});
  const std::size_t total = std::min(
      feed.size(), static_cast<std::size_t>(rate) * static_cast<std::size_t>(seconds_long));
  const auto start = Clock::now();
  for (std::size_t i = 0; i < total; ++i) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(static_cast<std::int64_t>(
                                              i * 1'000'000 / static_cast<std::size_t>(rate))));
    stream::kafka::Producer::Record rec;
    rec.topic = cfg.kafka.input_topics[0];
    rec.partition = static_cast<std::int32_t>(i % 4);
    rec.value = feed[i];
    producer.produce(rec);
    producer.poll(std::chrono::milliseconds(0));
  }
  producer.flush(std::chrono::seconds(30));
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  auto committed = [&] {
    std::uint64_t n = 0;
    for (const auto& i : group) n += i->committed.load();
    return n;
  };
  while (committed() < total && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stream::LatencyHistogram end_to_end, round_trip;
  for (auto& i : group) {
    i->service->request_stop();
    i->thread.join();
    const stream::ServiceSnapshot s = i->service->snapshot();
    merge(end_to_end, s.end_to_end);
    merge(round_trip, s.judge_round_trip);
  }
  std::printf("latency: %d instance(s), %s, %d msg/s for %d s: end-to-end p50=%lldms p99=%lldms",
              instances, judged ? "group judge" : "each its own window", rate, seconds_long,
              static_cast<long long>(end_to_end.quantile_ms(0.5)),
              static_cast<long long>(end_to_end.quantile_ms(0.99)));
  if (judged) {
    std::printf(", judge round trip p50=%lldms p99=%lldms",
                static_cast<long long>(round_trip.quantile_ms(0.5)),
                static_cast<long long>(round_trip.quantile_ms(0.99)));
  }
  std::printf(" (%llu of %zu committed)\n", static_cast<unsigned long long>(committed()), total);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t messages = 30'000, batch = 500, takeover_entries = 300'000;
  int rate = 2000, seconds = 5;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> long {
      if (i + 1 >= argc) return -1;
      return std::strtol(argv[++i], nullptr, 10);
    };
    long value = 0;
    if (arg == "--messages" && (value = next()) > 0) {
      messages = static_cast<std::size_t>(value);
    } else if (arg == "--batch" && (value = next()) > 0) {
      batch = static_cast<std::size_t>(value);
    } else if (arg == "--rate" && (value = next()) > 0) {
      rate = static_cast<int>(value);
    } else if (arg == "--seconds" && (value = next()) > 0) {
      seconds = static_cast<int>(value);
    } else if (arg == "--takeover" && (value = next()) > 0) {
      takeover_entries = static_cast<std::size_t>(value);
    } else if (arg == "--only" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "ceiling" || std::string(argv[i + 1]) == "latency" ||
                std::string(argv[i + 1]) == "takeover")) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: neardup_judge_bench [--messages N] [--batch B] [--rate R] "
                   "[--seconds S] [--takeover ENTRIES] [--only ceiling|latency|takeover]\n");
      return 2;
    }
  }
  config::LogOptions quiet;
  quiet.level = config::LogLevel::warn;
  stream::configure_logging(quiet);
  stream::EmbeddedBroker broker;
  const auto feed = bench::FeedGenerator().feed(messages, 190);
  if (only.empty() || only == "ceiling") ceiling(broker, feed, batch);
  if (only.empty() || only == "latency") {
    for (int instances : {1, 2}) {
      for (bool judged : {false, true}) latency(broker, feed, instances, judged, rate, seconds);
    }
  }
  if (only.empty() || only == "takeover") takeover(broker, takeover_entries);
  return 0;
}
