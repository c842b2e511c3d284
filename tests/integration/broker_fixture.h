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

#include "stream/kafka/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/service/service.h"
#include "stream/service/service_test_hooks.h"

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
                  std::int32_t partition = RD_KAFKA_PARTITION_UA,
                  const std::optional<std::string>& key = std::nullopt,
                  const std::map<std::string, std::string>& headers = {},
                  std::int64_t timestamp = 0) {
    kafka::Producer producer(
        default_producer_properties(broker_.bootstrap()),
        [](const rd_kafka_message_t& m) { ASSERT_EQ(m.err, RD_KAFKA_RESP_ERR_NO_ERROR); });
    for (const auto& v : values) {
      kafka::Producer::Record rec;
      rec.topic = topic;
      rec.partition = partition;
      rec.value = v;
      if (key) {
        rec.key = *key;
        rec.has_key = true;
      }
      if (!headers.empty()) {
        rec.headers = rd_kafka_headers_new(headers.size());
        for (const auto& [n, hv] : headers) {
          rd_kafka_header_add(rec.headers, n.c_str(), -1, hv.data(),
                              static_cast<ssize_t>(hv.size()));
        }
      }
      rec.timestamp_ms = timestamp;
      ASSERT_EQ(producer.produce(rec), RD_KAFKA_RESP_ERR_NO_ERROR);
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
      std::int64_t low = 0, high = 0;
      const rd_kafka_resp_err_t err =
          rd_kafka_query_watermark_offsets(probe.handle(), topic.c_str(), p, &low, &high, 10000);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        ADD_FAILURE() << "watermarks of " << topic << "/" << p << ": " << rd_kafka_err2str(err);
        continue;
      }
      total += static_cast<std::size_t>(std::max<std::int64_t>(high - low, 0));
    }
    return read(topic, total, limit);
  }

  /// Reads `topic` from the beginning until `count` records arrived or `limit` passed.
  std::vector<Record> read(const std::string& topic, std::size_t count,
                           std::chrono::seconds limit = std::chrono::seconds(30)) {
    kafka::Consumer consumer(default_consumer_properties(broker_.bootstrap(), "reader"), nullptr);
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(kPartitions));
    for (int p = 0; p < kPartitions; ++p) {
      rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(consumer.handle(), list.get());
    std::vector<Record> out;
    auto deadline = Clock::now() + limit;
    std::vector<kafka::MessagePtr> batch;
    while (out.size() < count && Clock::now() < deadline) {
      batch.clear();
      consumer.poll_batch(batch, 500, std::chrono::milliseconds(100));
      for (const auto& m : batch) {
        if (m->err) continue;
        Record r;
        r.partition = m->partition;
        r.offset = m->offset;
        if (m->key) r.key = std::string(static_cast<const char*>(m->key), m->key_len);
        r.value.assign(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
        rd_kafka_timestamp_type_t type;
        r.timestamp = rd_kafka_message_timestamp(m.get(), &type);
        rd_kafka_headers_t* hdrs = nullptr;
        if (rd_kafka_message_headers(m.get(), &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
          const char* name;
          const void* value;
          std::size_t size;
          for (std::size_t i = 0;
               rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
               ++i) {
            r.headers[name] = std::string(static_cast<const char*>(value), size);
          }
        }
        out.push_back(std::move(r));
      }
    }
    return out;
  }

  /// Committed offsets of the service's group, per input partition (a
  /// partition without one reads RD_KAFKA_OFFSET_INVALID, -1001).
  std::map<int, std::int64_t> committed_offsets() {
    kafka::Consumer consumer(default_consumer_properties(broker_.bootstrap(), cfg_.kafka.group_id),
                             nullptr);
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(kPartitions));
    for (int p = 0; p < kPartitions; ++p) rd_kafka_topic_partition_list_add(list.get(), "input", p);
    EXPECT_EQ(rd_kafka_committed(consumer.handle(), list.get(), 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    std::map<int, std::int64_t> out;
    for (int i = 0; i < list->cnt; ++i) out[list->elems[i].partition] = list->elems[i].offset;
    return out;
  }

  /// Starts a service with `cfg` on its own thread.
  /// `crash_at`: ServiceTestHooks::crash_at (tests that simulate a crash).
  /// `recent_pairs`: ServiceOptions::recent_pairs (the page's record), not owned.
  std::unique_ptr<Running> start_service(const config::Config& cfg,
                                         std::function<bool(std::string_view)> crash_at = {},
                                         metrics::RecentPairs* recent_pairs = nullptr) {
    auto running = std::make_unique<Running>();
    ServiceOptions options;
    options.config = cfg;
    if (crash_at)
      options.test_hooks =
          std::make_shared<ServiceTestHooks>(ServiceTestHooks{std::move(crash_at)});
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
    running->thread = std::thread([r] { r->status.store(r->service->run()); });
    return running;
  }

  config::Config cfg_;
  EmbeddedBroker broker_;
};

}  // namespace neardup::stream::testing
