#pragma once
// What the integration tests share: an embedded broker fixture with helpers to
// produce, read back, run a Service on its own thread, and poll for conditions.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/service/service.h"
#include "stream/service/service_testing.h"

namespace neardup::stream::testing {

using Clock = std::chrono::steady_clock;
inline constexpr int kPartitions = 2;

/// Polls `condition` until it holds or `limit` passes; returns whether it held.
template <typename F>
bool eventually(F condition, std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

/// Random 8-letter words: pairwise far apart in SimHash and in shingles.
inline std::vector<std::string> distinct_texts(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::string text;
    for (int w = 0; w < 16; ++w) {
      if (w) text += ' ';
      for (int c = 0; c < 8; ++c) text += static_cast<char>('a' + rng() % 26);
    }
    out.push_back(text);
  }
  return out;
}

inline std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A test's crash points: where `at` returns true.
class CrashWhere final : public CrashPoints {
 public:
  explicit CrashWhere(std::function<bool(std::string_view)> at) : at_(std::move(at)) {}
  bool crash_at(std::string_view point) const override { return at_(point); }

 private:
  std::function<bool(std::string_view)> at_;
};

struct Record {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::optional<std::string> key;
  std::string value;
  std::int64_t timestamp = 0;
  std::map<std::string, std::string> headers;
};

/// A service on its own thread; its snapshot counters mirrored into atomics.
struct Running {
  std::unique_ptr<Service> service;
  std::thread thread;
  std::atomic<std::uint64_t> consumed{0}, produced{0}, committed{0}, written{0}, replayed{0},
      followed{0}, corrupt{0};
  std::atomic<bool> ready{false}, assigned{false};
  std::atomic<bool> judging{false};     // this process's judge is the group's active one
  std::atomic<std::uint64_t> owned{0};  // bit p: input partition p is assigned (p < 64)
  std::atomic<std::int64_t> round_trip_p50{0}, round_trip_p99{0};  // judge round trip, ms
  std::atomic<std::int64_t> lag{0};            // summed over the partitions in lag_partitions
  std::atomic<std::size_t> lag_partitions{0};  // partitions with a lag figure
  std::atomic<int> status{-1};
  ServiceSnapshot last;
  int stop() {
    service->request_stop();
    if (thread.joinable()) thread.join();
    last = service->snapshot();
    return status.load();
  }
  ~Running() {
    if (thread.joinable()) stop();
  }
};

class BrokerTest : public ::testing::Test {
 protected:
  explicit BrokerTest(int brokers = 1) : broker_(brokers) {}

  void SetUp() override {
    // A stopped instance's group membership must not hold up the next one for long.
    cfg_.kafka.consumer["session.timeout.ms"] = "6000";
    for (const auto& t : service_topics(cfg_.kafka)) broker_.create_topic(t, kPartitions);
    for (const auto& t : judge_topics(cfg_.kafka)) broker_.create_topic(t, 1);
  }

  void produce_to(const std::string& topic, const std::vector<std::string>& values,
                  std::int32_t partition = kafka::kAnyPartition,
                  const std::optional<std::string>& key = std::nullopt,
                  const std::map<std::string, std::string>& headers = {},
                  std::int64_t timestamp = 0) {
    kafka::Producer producer(
        default_producer_properties(broker_.bootstrap()),
        [](kafka::Message report) { ASSERT_EQ(report.error(), kafka::errc::no_error); });
    for (const auto& v : values) {
      kafka::Producer::Record rec;
      rec.topic = topic;
      rec.partition = partition;
      rec.value = v;
      if (key) {
        rec.key = *key;
        rec.has_key = true;
      }
      kafka::Headers with;
      for (const auto& [n, hv] : headers) with.add(n, hv);
      rec.timestamp_ms = timestamp;
      ASSERT_EQ(producer.produce(rec, std::move(with)), kafka::errc::no_error);
    }
    ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
  }

  /// Every record of `topic` up to the high watermarks as of the call (at-least-once
  /// outputs can hold repeats, so a count of records is not a count of messages).
  std::vector<Record> read_all(const std::string& topic,
                               std::chrono::seconds limit = std::chrono::seconds(30)) {
    kafka::Consumer probe(default_consumer_properties(broker_.bootstrap(), "reader"), nullptr);
    std::size_t total = 0;
    for (int p = 0; p < kPartitions; ++p) {
      const auto w = probe.query_watermarks(topic, p, std::chrono::seconds(10));
      if (w.error) {
        ADD_FAILURE() << "watermarks of " << topic << "/" << p << ": " << kafka::describe(w.error);
        continue;
      }
      total += static_cast<std::size_t>(std::max<std::int64_t>(w.high - w.low, 0));
    }
    return read(topic, total, limit);
  }

  /// Reads `topic` from the beginning until `count` records arrived or `limit` passed.
  std::vector<Record> read(const std::string& topic, std::size_t count,
                           std::chrono::seconds limit = std::chrono::seconds(30)) {
    kafka::Consumer consumer(default_consumer_properties(broker_.bootstrap(), "reader"), nullptr);
    kafka::TopicPartitions list(kPartitions);
    for (int p = 0; p < kPartitions; ++p) list.add(topic, p, kafka::kOffsetBeginning);
    consumer.assign(list);
    std::vector<Record> out;
    auto deadline = Clock::now() + limit;
    std::vector<kafka::MessagePtr> batch;
    while (out.size() < count && Clock::now() < deadline) {
      batch.clear();
      consumer.poll_batch(batch, 500, std::chrono::milliseconds(100));
      for (const kafka::Message m : batch) {
        if (m.error()) continue;
        Record r;
        r.partition = m.partition();
        r.offset = m.offset();
        if (m.has_key()) r.key = std::string(m.key());
        r.value = m.payload();
        r.timestamp = m.timestamp();
        m.for_each_header([&](std::string_view name, std::string_view value) {
          r.headers[std::string(name)] = std::string(value);
        });
        out.push_back(std::move(r));
      }
    }
    return out;
  }

  /// Committed offsets of the service's group, per input partition (a
  /// partition without one reads kafka::kOffsetInvalid, -1001).
  std::map<int, std::int64_t> committed_offsets() {
    kafka::Consumer consumer(default_consumer_properties(broker_.bootstrap(), cfg_.kafka.group_id),
                             nullptr);
    kafka::TopicPartitions list(kPartitions);
    for (int p = 0; p < kPartitions; ++p) list.add("input", p);
    EXPECT_EQ(consumer.committed(list, std::chrono::seconds(10)), kafka::errc::no_error);
    std::map<int, std::int64_t> out;
    for (const kafka::TopicPartition e : list) out[e.partition] = e.offset;
    return out;
  }

  /// Starts a service with `cfg` on its own thread.
  /// `crash_at`: where it crashes (CrashPoints::crash_at), for tests that simulate a crash.
  /// `recent_pairs`: ServiceOptions::recent_pairs (the page's record), not owned.
  std::unique_ptr<Running> start_service(const config::Config& cfg,
                                         std::function<bool(std::string_view)> crash_at = {},
                                         metrics::RecentPairs* recent_pairs = nullptr) {
    auto running = std::make_unique<Running>();
    ServiceOptions options;
    options.config = cfg;
    options.recent_pairs = recent_pairs;
    options.brokers = broker_.bootstrap();
    options.progress_interval = std::chrono::milliseconds(20);
    Running* r = running.get();
    options.on_progress = [r](const ServiceSnapshot& s) {
      r->consumed.store(s.consumed);
      r->produced.store(s.produced);
      r->committed.store(s.committed);
      r->written.store(s.changelog_written);
      r->replayed.store(s.changelog_replayed);
      r->followed.store(s.changelog_followed);
      r->corrupt.store(s.changelog_corrupt);
      r->ready.store(s.window_ready);
      r->assigned.store(s.assigned);
      r->judging.store(s.judge_active);
      std::uint64_t owned = 0;
      for (const auto& [partition, value] : s.consumer_lag)
        if (partition.second < 64) owned |= std::uint64_t{1} << partition.second;
      r->owned.store(owned);
      if (s.judge_round_trip.total) {
        r->round_trip_p50.store(s.judge_round_trip.quantile_ms(0.5));
        r->round_trip_p99.store(s.judge_round_trip.quantile_ms(0.99));
      }
      std::int64_t lag = 0;
      for (const auto& [partition, value] : s.consumer_lag) lag += value;
      r->lag.store(lag);
      r->lag_partitions.store(s.consumer_lag.size());
    };
    running->service = std::make_unique<Service>(std::move(options));
    if (crash_at) {
      ServiceTesting::set_crash_points(*running->service,
                                       std::make_shared<CrashWhere>(std::move(crash_at)));
    }
    running->thread = std::thread([r] { r->status.store(r->service->run()); });
    return running;
  }

  config::Config cfg_;
  EmbeddedBroker broker_;
};

}  // namespace neardup::stream::testing
