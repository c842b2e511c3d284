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

#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/event_time.h"
#include "stream/records/story_record.h"
#include "stream/service/service.h"
#include "tests/integration/broker_fixture.h"

namespace neardup::stream {
namespace {

using namespace testing;

class ServiceTest : public BrokerTest {
 protected:
  explicit ServiceTest(int brokers = 1) : BrokerTest(brokers) {}
  void produce(const std::vector<std::string>& values,
               std::int32_t partition = kafka::kAnyPartition,
               const std::optional<std::string>& key = std::nullopt,
               const std::map<std::string, std::string>& headers = {}, std::int64_t timestamp = 0) {
    produce_to("input", values, partition, key, headers, timestamp);
  }

  std::unique_ptr<Running> start(config::Action action) {
    config::Config cfg = cfg_;
    cfg.action = action;
    return start_service(cfg);
  }
};

/// Each of `expected` is the value of exactly one of `records`, and no record
/// holds anything else: a repeat, a loss and a stray value each fail.
::testing::AssertionResult each_exactly_once(const std::vector<Record>& records,
                                             const std::vector<std::string>& expected) {
  std::map<std::string, std::size_t> seen;
  for (const auto& r : records) ++seen[r.value];
  std::size_t missing = 0, repeated = 0;
  std::string example;
  for (const auto& t : expected) {
    const auto it = seen.find(t);
    const std::size_t n = it == seen.end() ? 0 : it->second;
    if (n == 1) continue;
    (n == 0 ? missing : repeated) += 1;
    if (example.empty()) example = "'" + t + "' " + std::to_string(n) + " times";
    if (it != seen.end()) seen.erase(it);
  }
  for (const auto& t : expected) seen.erase(t);
  if (missing == 0 && repeated == 0 && seen.empty()) return ::testing::AssertionSuccess();
  if (example.empty()) example = "'" + seen.begin()->first + "', never an input";
  return ::testing::AssertionFailure()
         << records.size() << " records for " << expected.size() << " values: " << missing
         << " missing, " << repeated << " repeated, " << seen.size() << " never expected; e.g. "
         << example;
}

TEST_F(ServiceTest, DropRepublishesUniquesIntactAndDeadLettersInvalid) {
  const std::string original =
      "Storm closes the harbour bridge as rivers rise across the county tonight";
  // A timestamp a minute ago: within the 24 h event-time window of the next message.
  const std::int64_t stamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count() -
                             60'000;
  produce({original}, 1, "k1", {{"trace", "abc"}}, stamp);
  produce({"STORM closes the harbour bridge, as rivers rise across the county tonight!"}, 1, "k2");
  produce({"Council approves the new school budget after a long debate on housing"}, 0, "k3");
  produce({""}, 0, "k4");  // empty text: invalid
  auto running = start(config::Action::drop);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 4; }));
  ASSERT_EQ(running->stop(), 0);

  // read_all, not read(topic, 2): a read stops at the count it is given, so it
  // would not see a third record (a unique republished twice).
  auto out = read_all("output");
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, Record> by_key;
  for (auto& r : out) by_key[r.key.value_or("")] = r;
  ASSERT_TRUE(by_key.count("k1") && by_key.count("k3"))
      << out[0].key.value_or("null") << " / " << out[1].key.value_or("null");
  EXPECT_EQ(by_key["k1"].value, original);
  EXPECT_EQ(by_key["k1"].partition, 1);  // as many output partitions: partition preserved
  EXPECT_EQ(by_key["k1"].timestamp, stamp);
  EXPECT_EQ(by_key["k1"].headers["trace"], "abc");
  EXPECT_EQ(by_key["k1"].headers.count("neardup-verdict"), 0u);
  EXPECT_EQ(by_key["k3"].partition, 0);

  auto dead = read_all("dead-letters");
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
  auto out = read_all("output");
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, Record> by_key;
  for (auto& r : out) by_key[r.key.value_or("")] = r;
  ASSERT_TRUE(by_key.count("orig") && by_key.count("copy")) << "one output each";
  // Which one is kept depends on consumption order across partitions; the other points at it.
  const bool copy_is_dup = by_key["copy"].headers.count("neardup-verdict") > 0;
  Record& dup = copy_is_dup ? by_key["copy"] : by_key["orig"];
  Record& kept = copy_is_dup ? by_key["orig"] : by_key["copy"];
  EXPECT_EQ(dup.headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(dup.headers["neardup-of"],
            "input/" + std::to_string(kept.partition) + "/" + std::to_string(kept.offset));
  EXPECT_EQ(dup.headers["neardup-distance"], "0");
  EXPECT_EQ(dup.headers["neardup-fingerprint"].size(), 16u);
  EXPECT_EQ(kept.headers.count("neardup-verdict"), 0u);
}

/// Outputs by key (each key produced once).
std::map<std::string, Record> by_key(std::vector<Record> records) {
  std::map<std::string, Record> out;
  for (auto& r : records) out[r.key.value_or("")] = std::move(r);
  return out;
}

constexpr std::int64_t kMonthMs = 30LL * 24 * 3600 * 1000;

/// The feed of the two tests below, on partition 0: "orig" at `now`, then an
/// unrelated "ahead" stamped a month later; and "copy", a near copy of "orig".
class FutureStampTest : public ServiceTest {
 protected:
  void produce_original_and_a_month_ahead(std::int64_t now) {
    produce({"Storm closes the harbour bridge as rivers rise across the county tonight"}, 0, "orig",
            {}, now);
    produce({"Council approves the new school budget after a long debate on housing"}, 0, "ahead",
            {}, now + kMonthMs);
  }
  void produce_copy(std::int64_t at) {
    produce({"STORM closes the harbour bridge, as rivers rise across the county tonight!"}, 0,
            "copy", {}, at);
  }
};

TEST_F(FutureStampTest, AMessageStampedAMonthAheadDoesNotEmptyTheWindow) {
  // Without window.max_future, the window's clock would jump a month ahead
  // and evict the original: its copy would pass as unique.
  const std::int64_t now = wall_ms();
  produce_original_and_a_month_ahead(now);
  produce_copy(now + 1000);
  auto running = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 3; }));
  ASSERT_EQ(running->stop(), 0);
  auto out = by_key(read_all("output"));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out["copy"].headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(out["copy"].headers["neardup-of"], "input/0/" + std::to_string(out["orig"].offset));
  EXPECT_EQ(out["ahead"].headers.count("neardup-verdict"), 0u);
  EXPECT_EQ(out["ahead"].timestamp, now + kMonthMs);  // republished intact
}

TEST_F(FutureStampTest, AChangelogEntryStampedAMonthAheadDoesNotEmptyARebuiltWindow) {
  // A first run that lets a timestamp a month ahead through (as versions
  // before window.max_future did) writes it to the changelog; the next run
  // rebuilds its window from that changelog and must keep the original.
  const std::int64_t now = wall_ms();
  produce_original_and_a_month_ahead(now);
  {
    config::Config cfg = cfg_;
    cfg.action = config::Action::tag;
    cfg.dedup.window.max_future = std::chrono::milliseconds(2 * kMonthMs);
    auto first = start_service(cfg);
    ASSERT_TRUE(eventually([&] { return first->written.load() >= 2; }));
    ASSERT_EQ(first->stop(), 0);
  }
  produce_copy(now + 1000);
  auto second = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return second->committed.load() >= 1; }));  // (this run's)
  ASSERT_EQ(second->stop(), 0);
  auto out = by_key(read_all("output"));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out["copy"].headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(out["copy"].headers["neardup-of"], "input/0/" + std::to_string(out["orig"].offset));
}

TEST_F(ServiceTest, RouteSendsDuplicatesToTheDuplicatesTopic) {
  produce({"Railway strike halts trains into the city for a second day running",
           "railway strike halts trains into the city, for a second day running!",
           "Museum reopens its science wing after a year of careful restoration"},
          0);
  auto running = start(config::Action::route);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 3; }));
  ASSERT_EQ(running->stop(), 0);
  auto out = read_all("output");
  auto dups = read_all("duplicates");
  EXPECT_TRUE(each_exactly_once(
      out, {"Railway strike halts trains into the city for a second day running",
            "Museum reopens its science wing after a year of careful restoration"}));
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
  for (const auto& [partition, offset] : committed_offsets())
    committed += std::max<std::int64_t>(offset, 0);
  EXPECT_EQ(committed, 200);
  produce(second);
  auto running = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 200; }));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.consumed, 200u);  // the restart read only the new messages
  // One instance at a time, each stopped gracefully: no input is handled twice.
  auto all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_TRUE(each_exactly_once(read_all("output"), all));
}

// After a restart with nothing new to read, the lag is what is left to read:
// nothing. (It counted each partition from its start until a message arrived.)
TEST_F(ServiceTest, LagAfterARestartCountsFromTheCommittedOffsets) {
  produce(distinct_texts(200, 7));
  {
    auto running = start(config::Action::drop);
    ASSERT_TRUE(eventually([&] { return running->committed.load() >= 200; }));
    ASSERT_EQ(running->stop(), 0);
  }
  auto running = start(config::Action::drop);
  ASSERT_TRUE(eventually(
      [&] { return running->lag_partitions.load() == static_cast<std::size_t>(kPartitions); }));
  EXPECT_TRUE(eventually([&] { return running->lag.load() == 0; }, std::chrono::seconds(10)))
      << "lag " << running->lag.load() << " with nothing left to read";
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.consumed, 0u);
}

// A stop while outputs stay unacknowledged (the output topic has no leader, so
// they wait for one far longer than the test): the flush gives up after its 8 s,
// the revoke that leaving the group triggers does not wait again (it waited
// 60 s), and the service exits 0 with those offsets uncommitted. 10 s is the
// promise; the bound here leaves room for a slow machine (it took 68 s).
TEST_F(ServiceTest, StopWithOutputsUnacknowledgedEndsWithinTheShutdownBudget) {
  auto texts = distinct_texts(400, 8);
  produce({texts.begin(), texts.begin() + 200});
  auto running = start(config::Action::tag);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 200; }));
  for (int p = 0; p < kPartitions; ++p)
    ASSERT_EQ(broker_.set_leader("output", p, -1), kafka::errc::no_error);
  produce({texts.begin() + 200, texts.end()});
  ASSERT_TRUE(eventually([&] { return running->consumed.load() >= 250; }));
  const auto asked = Clock::now();
  const int status = running->stop();
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - asked);
  EXPECT_EQ(status, 0);
  EXPECT_LT(took.count(), 20) << "the stop took " << took.count() << " s";
  std::int64_t committed = 0;  // as the group coordinator has it
  for (const auto& [partition, offset] : committed_offsets())
    committed += std::max<std::int64_t>(offset, 0);
  EXPECT_EQ(committed, 200) << "offsets of unacknowledged outputs were committed";
}

TEST_F(ServiceTest, BrokerDownAndProduceErrorsLoseNothing) {
  auto texts = distinct_texts(600, 3);
  auto running = start(config::Action::tag);
  produce({texts.begin(), texts.begin() + 200});
  ASSERT_TRUE(eventually([&] { return running->consumed.load() >= 100; }));
  broker_.push_request_errors(
      EmbeddedBroker::kApiProduce,
      {kafka::errc::not_leader_for_partition, kafka::errc::request_timed_out,
       kafka::errc::not_enough_replicas, kafka::errc::not_leader_for_partition});
  produce({texts.begin() + 200, texts.begin() + 400});
  broker_.set_down(1);
  // The outage lasts about three seconds; nothing is asserted about timing.
  auto up_at = Clock::now() + std::chrono::seconds(3);
  eventually([&] { return Clock::now() >= up_at; }, std::chrono::seconds(4));
  broker_.set_up(1);
  produce({texts.begin() + 400, texts.end()});
  // Done when the group's committed offsets cover all 600 inputs. (The snapshot's
  // counter is not enough: the outage can cost the group its membership, and
  // messages delivered again after the rebalance are counted again.)
  auto all_committed = [&] {
    std::int64_t sum = 0;
    for (const auto& [partition, offset] : committed_offsets())
      sum += std::max<std::int64_t>(offset, 0);
    return sum >= 600;
  };
  ASSERT_TRUE(eventually(all_committed, std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  // At-least-once: every committed input has its output acknowledged. The count
  // can exceed 600: the outage can cost the group its membership (the session
  // times out while the broker is down), and inputs whose outputs were
  // acknowledged but whose offsets were not yet committed are then handled
  // again after the rebalance. What is exact: every input is there at least
  // once, and nothing is there that was never an input.
  auto out = read_all("output", std::chrono::seconds(60));
  EXPECT_GE(out.size(), texts.size());
  std::map<std::string, std::size_t> seen;
  for (const auto& r : out) ++seen[r.value];
  for (const auto& t : texts) EXPECT_GE(seen[t], 1u) << "lost: " << t;
  const std::set<std::string> inputs(texts.begin(), texts.end());
  for (const auto& [value, n] : seen)
    EXPECT_TRUE(inputs.count(value)) << "never an input: '" << value << "'";
  EXPECT_TRUE(read_all("dead-letters").empty())
      << "retriable produce errors are retried, not dead-lettered";
}

// A record too large for every topic (over the producer's message.max.bytes)
// goes to the dead-letter topic cut to fit, with its original size, and the
// service goes on: the messages after it come out and every offset commits.
TEST_F(ServiceTest, ARecordTooLargeForTheOutputIsDeadLetteredCutToFitAndTheServiceGoesOn) {
  config::Config cfg = cfg_;
  cfg.action = config::Action::tag;
  cfg.kafka.changelog_topic = "";                    // (its batches would outgrow the limit first)
  cfg.kafka.producer["message.max.bytes"] = "1200";  // librdkafka's minimum is 1000
  auto small = distinct_texts(16, 5);
  produce({small.begin(), small.begin() + 10}, 0);
  auto running = start_service(cfg);
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 10; }));
  const std::string big = std::string(5000, 'x') + " " + distinct_texts(1, 6)[0];
  produce({big}, 0, std::string("big-key"));  // offset 10
  produce({small.begin() + 10, small.end()}, 0);
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 16; }, std::chrono::seconds(60)));
  EXPECT_EQ(running->status.load(), -1)
      << "the service stopped: " << running->service->fatal_error();
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.dead_letters, 1u);
  EXPECT_EQ(running->last.dead_letters_truncated, 1u);
  EXPECT_TRUE(each_exactly_once(read_all("output"), small));  // the big one only as a dead letter
  const auto dead = read_all("dead-letters");
  ASSERT_EQ(dead.size(), 1u);
  const Record& letter = dead[0];
  EXPECT_EQ(letter.key, std::optional<std::string>("big-key"));
  EXPECT_GT(letter.value.size(), 0u);
  EXPECT_LT(letter.value.size(), 1200u);
  EXPECT_EQ(letter.value, big.substr(0, letter.value.size()))
      << "the cut keeps the value's first bytes";
  EXPECT_EQ(letter.headers.at("neardup-original-size"), std::to_string(big.size()));
  EXPECT_EQ(letter.headers.at("neardup-truncated-to"), std::to_string(letter.value.size()));
  EXPECT_EQ(letter.headers.at("neardup-source"), "input/0/10");
  EXPECT_EQ(letter.headers.at("neardup-error"),
            "output to 'output' rejected: Broker: Message size too large");
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
  ASSERT_TRUE(eventually(
      [&] {
        // A partition that received nothing (sticky partitioner) has no committed offset (-1001).
        std::int64_t sum = 0;
        for (const auto& [partition, offset] : committed_offsets())
          sum += std::max<std::int64_t>(offset, 0);
        return sum >= 3000;
      },
      std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  // Every input is accounted for exactly once: republished (distinct texts are
  // all unique and valid, so no dead letters). The stop flushed and committed
  // what it had output, so the restart repeats nothing.
  EXPECT_TRUE(each_exactly_once(read_all("output", std::chrono::seconds(60)), texts));
  EXPECT_TRUE(read_all("dead-letters").empty());
}

// The broker refuses records as records (its limit below the producer's): the
// output goes to the dead-letter topic instead; a refused dead letter is sent
// again as neardup's headers alone. The input topic lives on broker 1, the
// outputs on broker 2, whose next Produce requests fail.
class TwoBrokerServiceTest : public ServiceTest {
 protected:
  TwoBrokerServiceTest() : ServiceTest(2) {}
  void SetUp() override {
    ServiceTest::SetUp();
    for (int p = 0; p < kPartitions; ++p) {
      broker_.set_leader("input", p, 1);
      broker_.set_leader("output", p, 2);
      broker_.set_leader("dead-letters", p, 2);
    }
    // (the judge's topics on broker 1: the refusals are meant for the outputs)
    for (const auto& t : judge_topics(cfg_.kafka)) broker_.set_leader(t, 0, 1);
  }
  void refuse_next_produces(std::size_t n) {
    broker_.push_broker_request_errors(
        2, EmbeddedBroker::kApiProduce,
        std::vector<kafka::ErrorCode>(n, kafka::errc::message_too_large));
  }
};

TEST_F(TwoBrokerServiceTest, ARecordTheBrokerRefusesIsDeadLetteredAndTheServiceGoesOn) {
  config::Config cfg = cfg_;
  cfg.action = config::Action::tag;
  cfg.kafka.changelog_topic =
      "";  // (a refused changelog batch is a cluster fault: it would stop the service)
  auto texts = distinct_texts(10, 7);
  auto running = start_service(cfg);
  produce({texts.begin(), texts.begin() + 5}, 0);
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 5; }));
  refuse_next_produces(1);
  produce({texts[5]}, 0, std::string("k5"));  // output refused: a dead letter, value whole
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 6; }));
  refuse_next_produces(2);
  produce({texts[6]}, 0, std::string("k6"));  // output and dead letter refused: a bare dead letter
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 7; }));
  produce({texts.begin() + 7, texts.end()}, 0);
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 10; }));
  EXPECT_EQ(running->status.load(), -1)
      << "the service stopped: " << running->service->fatal_error();
  ASSERT_EQ(running->stop(), 0);
  std::vector<std::string> kept(texts.begin(), texts.begin() + 5);
  kept.insert(kept.end(), texts.begin() + 7, texts.end());
  EXPECT_TRUE(
      each_exactly_once(read_all("output"), kept));  // texts[5] and [6] only as dead letters
  auto dead = read_all("dead-letters");
  ASSERT_EQ(dead.size(), 2u);
  std::sort(dead.begin(), dead.end(), [](const Record& a, const Record& b) {
    return a.headers.at("neardup-source") < b.headers.at("neardup-source");
  });
  EXPECT_EQ(dead[0].key, std::optional<std::string>("k5"));
  EXPECT_EQ(dead[0].value, texts[5]);
  EXPECT_EQ(dead[0].headers.at("neardup-source"), "input/0/5");
  EXPECT_EQ(dead[0].headers.at("neardup-error"),
            "output to 'output' rejected by the broker: Broker: Message size too large");
  EXPECT_EQ(dead[0].headers.count("neardup-truncated-to"), 0u);
  EXPECT_EQ(dead[1].key, std::nullopt);
  EXPECT_EQ(dead[1].value, "");
  EXPECT_EQ(dead[1].headers.at("neardup-source"), "input/0/6");
  EXPECT_EQ(dead[1].headers.at("neardup-error"),
            "output to 'output' rejected by the broker: Broker: Message size too large; dead "
            "letter rejected by the "
            "broker: Broker: Message size too large");
  EXPECT_EQ(dead[1].headers.at("neardup-original-size"), std::to_string(texts[6].size()));
  EXPECT_EQ(dead[1].headers.at("neardup-truncated-to"), "0");
  EXPECT_EQ(running->last.dead_letters_truncated, 1u);
}

// Exactly-once: a refused output makes its whole transaction abortable, and
// until it is aborted the producer takes no record at all (librdkafka
// answers _STATE). Those records are not at fault: none of them goes to the
// dead letters, the service does not stop, the transaction is aborted and
// its messages judged again. Only the refused record's input ends up as a
// dead letter; every other input is committed with its output.
TEST_F(TwoBrokerServiceTest, UnderExactlyOnceAnAbortableTransactionIsAbortedNotDeadLettered) {
  config::Config cfg = cfg_;
  cfg.action = config::Action::tag;
  cfg.kafka.changelog_topic = "";
  cfg.kafka.delivery = config::Delivery::exactly_once;
  cfg.kafka.transactional_id = "neardup-abortable";
  const auto texts = distinct_texts(400, 19);
  auto running = start_service(cfg);
  produce({texts.begin(), texts.begin() + 5}, 0);
  ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 5; }));
  refuse_next_produces(1);
  // Small batches close together: some are produced between the refusal's
  // delivery report and the abort.
  for (std::size_t at = 5; at < texts.size(); at += 5) {
    produce({texts.begin() + static_cast<std::ptrdiff_t>(at),
             texts.begin() + static_cast<std::ptrdiff_t>(at + 5)},
            0);
  }
  ASSERT_TRUE(
      eventually([&] { return committed_offsets()[0] >= 400 || running->status.load() != -1; },
                 std::chrono::seconds(60)));
  ASSERT_EQ(running->status.load(), -1)
      << "the service stopped: " << running->service->fatal_error();
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(committed_offsets()[0], 400);
  EXPECT_GE(running->last.produce_errors, 1u);
  // The mock broker keeps aborted transactions' records readable (see
  // exactly_once_test.cc), so outputs may repeat; an input missing from the
  // outputs is a dead letter, refused for itself, once.
  std::map<std::string, int> seen;
  for (const auto& r : read_all("output")) ++seen[r.value];
  std::set<std::string> dead_sources;
  for (const auto& r : read_all("dead-letters")) {
    EXPECT_EQ(r.headers.at("neardup-error"),
              "output to 'output' rejected by the broker: Broker: Message size too large");
    EXPECT_TRUE(dead_sources.insert(r.headers.at("neardup-source")).second)
        << "dead-lettered twice: " << r.headers.at("neardup-source");
  }
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (seen[texts[i]] > 0) continue;
    EXPECT_EQ(dead_sources.count("input/0/" + std::to_string(i)), 1u) << "lost: input/0/" << i;
  }
}

// Story summaries under exactly-once: a transaction aborted while the service
// runs (a refused output, as above) takes its messages' story counts back
// with it, and its messages, judged again, count once. Five stories get
// 1..5 reposts (exact copies) after the refusal; then 30 other texts push
// their originals out of a window of 20 entries: one final summary per story,
// counting exactly its reposts. Deciding locally, the aborted transaction
// held the counts; with the group judge (whose transactions commit), the
// instance's rewind sends the judge the same messages again.
class AbortedStoriesTest : public TwoBrokerServiceTest {
 protected:
  void run(bool group_judge) {
    config::Config cfg = cfg_;
    cfg.action = config::Action::tag;
    cfg.kafka.changelog_topic = "";
    if (!group_judge) cfg.kafka.judge_topic = "";
    cfg.kafka.delivery = config::Delivery::exactly_once;
    cfg.kafka.transactional_id = "neardup-abortable-stories";
    cfg.kafka.summary_topic = "summaries";
    cfg.dedup.window.max_entries = 20;
    cfg.dedup.window.summary_interval = std::chrono::milliseconds(0);  // finals only
    broker_.create_topic("summaries", kPartitions);
    for (int p = 0; p < kPartitions; ++p) broker_.set_leader("summaries", p, 1);
    const auto originals = distinct_texts(5, 23);
    const auto others = distinct_texts(30, 29);
    auto running = start_service(cfg);
    produce(originals, 0);
    ASSERT_TRUE(eventually([&] { return committed_offsets()[0] >= 5; }));
    refuse_next_produces(1);
    std::int64_t sent = 5;
    for (std::size_t round = 0; round < 5; ++round) {  // story i gets i + 1 reposts
      std::vector<std::string> reposts(originals.begin() + static_cast<std::ptrdiff_t>(round),
                                       originals.end());
      produce(reposts, 0);
      sent += static_cast<std::int64_t>(reposts.size());
    }
    ASSERT_EQ(sent, 20);
    ASSERT_TRUE(
        eventually([&] { return committed_offsets()[0] >= 20 || running->status.load() != -1; },
                   std::chrono::seconds(60)));
    produce(others, 0);
    ASSERT_TRUE(
        eventually([&] { return committed_offsets()[0] >= 50 || running->status.load() != -1; },
                   std::chrono::seconds(60)));
    ASSERT_EQ(running->status.load(), -1)
        << "the service stopped: " << running->service->fatal_error();
    ASSERT_EQ(running->stop(), 0);
    EXPECT_GE(running->last.produce_errors, 1u);     // the refusal: a transaction was aborted
    EXPECT_FALSE(read_all("dead-letters").empty());  // the refused record's input
    // The latest summary of each story (the mock broker keeps aborted
    // transactions' records readable, so earlier ones may be of an aborted one).
    std::map<std::string, std::pair<std::int64_t, DecodedStory>> latest;
    for (const auto& r : read_all("summaries")) {
      DecodedStory story;
      std::string error;
      ASSERT_TRUE(decode_story(r.value, story, &error)) << error;
      auto& slot = latest[r.key.value_or("")];
      if (slot.second.original.topic.empty() || r.offset > slot.first) slot = {r.offset, story};
    }
    ASSERT_EQ(latest.size(), 5u);
    for (std::uint64_t i = 0; i < 5; ++i) {
      const std::string key = "input/0/" + std::to_string(i);
      ASSERT_EQ(latest.count(key), 1u) << key;
      EXPECT_TRUE(latest[key].second.final) << key;
      EXPECT_EQ(latest[key].second.duplicates, i + 1) << key;
    }
    EXPECT_EQ(running->last.stories.finals, 5u);
    EXPECT_EQ(running->last.stories.sizes.count, 5u);
    EXPECT_EQ(running->last.stories.sizes.sum, 15.0);  // 1 + 2 + 3 + 4 + 5
  }
};

TEST_F(AbortedStoriesTest, DecidingLocallyAnAbortedTransactionsDuplicatesCountOnce) { run(false); }

TEST_F(AbortedStoriesTest, WithTheGroupJudgeMessagesJudgedAgainAfterAnAbortCountOnce) { run(true); }

}  // namespace
}  // namespace neardup::stream
