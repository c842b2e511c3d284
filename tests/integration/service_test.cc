// The service against the embedded broker, in process: actions, headers,
// offsets, restarts, broker outages and injected produce errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "stream/embedded_broker.h"
#include "stream/kafka.h"
#include "stream/service.h"

namespace neardup::stream {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPartitions = 2;

struct Record {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::optional<std::string> key;
  std::string value;
  std::int64_t timestamp = 0;
  std::map<std::string, std::string> headers;
};

/// Texts whose pairwise SimHash distance is far above k: random 8-letter words.
std::vector<std::string> distinct_texts(std::size_t n, std::uint64_t seed) {
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

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A stopped instance's group membership must not hold up the next one for long.
    cfg_.kafka.consumer["session.timeout.ms"] = "6000";
    for (const auto& t : service_topics(cfg_.kafka)) broker_.create_topic(t, kPartitions);
  }

  void produce(const std::vector<std::string>& values, std::int32_t partition = RD_KAFKA_PARTITION_UA,
               const std::optional<std::string>& key = std::nullopt,
               const std::map<std::string, std::string>& headers = {}, std::int64_t timestamp = 0) {
    kafka::Producer producer(default_producer_properties(broker_.bootstrap()), [](const rd_kafka_message_t& m) {
      ASSERT_EQ(m.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    });
    for (const auto& v : values) {
      kafka::Producer::Record rec;
      rec.topic = "input";
      rec.partition = partition;
      rec.value = v;
      if (key) {
        rec.key = *key;
        rec.has_key = true;
      }
      if (!headers.empty()) {
        rec.headers = rd_kafka_headers_new(headers.size());
        for (const auto& [n, hv] : headers) rd_kafka_header_add(rec.headers, n.c_str(), -1, hv.data(), static_cast<ssize_t>(hv.size()));
      }
      rec.timestamp_ms = timestamp;
      ASSERT_EQ(producer.produce(rec), RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
  }

  /// Reads a topic from the beginning until `count` records arrived or `limit` passed.
  std::vector<Record> read(const std::string& topic, std::size_t count, std::chrono::seconds limit = std::chrono::seconds(30)) {
    auto props = default_consumer_properties(broker_.bootstrap(), "reader");
    kafka::Consumer consumer(props, nullptr);
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(kPartitions));
    for (int p = 0; p < kPartitions; ++p) rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
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
          for (std::size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
            r.headers[name] = std::string(static_cast<const char*>(value), size);
          }
        }
        out.push_back(std::move(r));
      }
    }
    return out;
  }

  /// A service running on its own thread; stop() waits for it.
  struct Running {
    std::unique_ptr<Service> service;
    std::thread thread;
    std::atomic<std::uint64_t> consumed{0}, committed{0};
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

  std::unique_ptr<Running> start(config::Action action) {
    auto running = std::make_unique<Running>();
    ServiceOptions options;
    options.config = cfg_;
    options.config.action = action;
    options.brokers = broker_.bootstrap();
    options.progress_interval = std::chrono::milliseconds(20);
    Running* r = running.get();
    options.on_progress = [r](const ServiceSnapshot& s) {
      r->consumed.store(s.consumed);
      r->committed.store(s.committed);
    };
    running->service = std::make_unique<Service>(std::move(options));
    running->thread = std::thread([r] { r->status.store(r->service->run()); });
    return running;
  }

  /// Committed offsets of the service's group, per input partition.
  std::map<int, std::int64_t> committed_offsets() {
    kafka::Consumer consumer(default_consumer_properties(broker_.bootstrap(), cfg_.kafka.group_id), nullptr);
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(kPartitions));
    for (int p = 0; p < kPartitions; ++p) rd_kafka_topic_partition_list_add(list.get(), "input", p);
    EXPECT_EQ(rd_kafka_committed(consumer.handle(), list.get(), 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    std::map<int, std::int64_t> out;
    for (int i = 0; i < list->cnt; ++i) out[list->elems[i].partition] = list->elems[i].offset;
    return out;
  }

  config::Config cfg_;
  EmbeddedBroker broker_;
};

TEST_F(ServiceTest, DropRepublishesUniquesIntactAndDeadLettersInvalid) {
  const std::string original = "Storm closes the harbour bridge as rivers rise across the county tonight";
  // A timestamp a minute ago: within the 24 h event-time window of the next message.
  const std::int64_t stamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count() - 60'000;
  produce({original}, 1, "k1", {{"trace", "abc"}}, stamp);
  produce({"STORM closes the harbour bridge, as rivers rise across the county tonight!"}, 1, "k2");
  produce({"Council approves the new school budget after a long debate on housing"}, 0, "k3");
  produce({""}, 0, "k4");  // empty text: invalid
  auto running = start(config::Action::drop);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 4; }));
  ASSERT_EQ(running->stop(), 0);

  auto out = read("output", 2);
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, Record> by_key;
  for (auto& r : out) by_key[r.key.value_or("")] = r;
  ASSERT_TRUE(by_key.count("k1") && by_key.count("k3")) << out[0].key.value_or("null") << " / " << out[1].key.value_or("null");
  EXPECT_EQ(by_key["k1"].value, original);
  EXPECT_EQ(by_key["k1"].partition, 1);  // as many output partitions: partition preserved
  EXPECT_EQ(by_key["k1"].timestamp, stamp);
  EXPECT_EQ(by_key["k1"].headers["trace"], "abc");
  EXPECT_EQ(by_key["k1"].headers.count("neardup-verdict"), 0u);
  EXPECT_EQ(by_key["k3"].partition, 0);

  auto dead = read("dead-letters", 1);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].key, "k4");
  EXPECT_FALSE(dead[0].headers["neardup-error"].empty());
  EXPECT_EQ(running->last.dropped, 1u);
  EXPECT_EQ(running->last.duplicate, 1u);
  EXPECT_EQ(running->last.invalid, 1u);
}

TEST_F(ServiceTest, TagRepublishesDuplicatesWithProvenanceHeaders) {
  produce({"Prices of energy fall for the third month as exports recover slowly"}, 0, "orig");
  produce({"prices of ENERGY fall for the third month, as exports recover slowly."}, 1, "copy");
  auto running = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 2; }));
  ASSERT_EQ(running->stop(), 0);
  auto out = read("output", 2);
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, Record> by_key;
  for (auto& r : out) by_key[r.key.value_or("")] = r;
  // Which one is kept depends on consumption order across partitions; the other points at it.
  const bool copy_is_dup = by_key["copy"].headers.count("neardup-verdict") > 0;
  Record& dup = copy_is_dup ? by_key["copy"] : by_key["orig"];
  Record& kept = copy_is_dup ? by_key["orig"] : by_key["copy"];
  EXPECT_EQ(dup.headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(dup.headers["neardup-of"], "input/" + std::to_string(kept.partition) + "/" + std::to_string(kept.offset));
  EXPECT_EQ(dup.headers["neardup-distance"], "0");
  EXPECT_EQ(dup.headers["neardup-fingerprint"].size(), 16u);
  EXPECT_EQ(kept.headers.count("neardup-verdict"), 0u);
}

TEST_F(ServiceTest, RouteSendsDuplicatesToTheDuplicatesTopic) {
  produce({"Railway strike halts trains into the city for a second day running",
           "railway strike halts trains into the city, for a second day running!",
           "Museum reopens its science wing after a year of careful restoration"},
          0);
  auto running = start(config::Action::route);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 3; }));
  ASSERT_EQ(running->stop(), 0);
  auto out = read("output", 2);
  auto dups = read("duplicates", 1);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(dups.size(), 1u);
  EXPECT_EQ(dups[0].value, "railway strike halts trains into the city, for a second day running!");
  EXPECT_EQ(dups[0].headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(dups[0].headers["neardup-of"], "input/0/0");
  for (const auto& r : out) EXPECT_EQ(r.headers.count("neardup-verdict"), 0u);
}

TEST_F(ServiceTest, CommitsOffsetsAndARestartContinuesWithoutLossOrRepeat) {
  auto first = distinct_texts(200, 1), second = distinct_texts(200, 2);
  produce(first);
  {
    auto running = start(config::Action::tag);
    ASSERT_TRUE(eventually([&] { return running->committed.load() >= 200; }));
    ASSERT_EQ(running->stop(), 0);
  }
  // A partition that received nothing has no committed offset (negative).
  std::int64_t committed = 0;
  for (const auto& [partition, offset] : committed_offsets()) committed += std::max<std::int64_t>(offset, 0);
  EXPECT_EQ(committed, 200);
  produce(second);
  auto running = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 200; }));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.consumed, 200u);  // the restart read only the new messages
  auto out = read("output", 400);
  std::set<std::string> values;
  for (const auto& r : out) values.insert(r.value);
  for (const auto& t : first) EXPECT_TRUE(values.count(t));
  for (const auto& t : second) EXPECT_TRUE(values.count(t));
}

TEST_F(ServiceTest, BrokerDownAndProduceErrorsLoseNothing) {
  auto texts = distinct_texts(600, 3);
  auto running = start(config::Action::tag);
  produce({texts.begin(), texts.begin() + 200});
  ASSERT_TRUE(eventually([&] { return running->consumed.load() >= 100; }));
  broker_.push_request_errors(EmbeddedBroker::kApiProduce,
                              {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                               RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION});
  produce({texts.begin() + 200, texts.begin() + 400});
  broker_.set_down(1);
  // The outage lasts about three seconds; nothing is asserted about timing.
  auto up_at = Clock::now() + std::chrono::seconds(3);
  eventually([&] { return Clock::now() >= up_at; }, std::chrono::seconds(4));
  broker_.set_up(1);
  produce({texts.begin() + 400, texts.end()});
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 600; }, std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  auto out = read("output", 600, std::chrono::seconds(60));
  std::set<std::string> values;
  for (const auto& r : out) values.insert(r.value);
  for (const auto& t : texts) EXPECT_TRUE(values.count(t)) << t;
}

TEST_F(ServiceTest, StopMidStreamThenRestartAccountsForEveryMessage) {
  auto texts = distinct_texts(3000, 4);
  produce(texts);
  {
    auto running = start(config::Action::drop);
    ASSERT_TRUE(eventually([&] { return running->consumed.load() >= 300; }));
    ASSERT_EQ(running->stop(), 0);  // stop mid-stream: flush, commit, exit 0
  }
  auto running = start(config::Action::drop);
  ASSERT_TRUE(eventually([&] {
    // A partition that received nothing (sticky partitioner) has no committed offset (-1001).
    std::int64_t sum = 0;
    for (const auto& [partition, offset] : committed_offsets()) sum += std::max<std::int64_t>(offset, 0);
    return sum >= 3000;
  }, std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  auto out = read("output", 3000, std::chrono::seconds(60));
  auto dead = read("dead-letters", 0, std::chrono::seconds(1));
  std::set<std::string> values;
  for (const auto& r : out) values.insert(r.value);
  // Every input is accounted for: republished (distinct texts are all unique).
  std::size_t accounted = 0;
  for (const auto& t : texts) accounted += values.count(t);
  EXPECT_EQ(accounted + dead.size(), texts.size());
}

}  // namespace
}  // namespace neardup::stream
