// Consistent scale-out (stream/judge/judge.h): several instances of one group catch
// the same near-duplicates as one instance, whatever the gap between original
// and copy and whichever instances read them, and a crash of the judging
// instance loses nothing and judges nothing differently.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/service/service.h"
#include "tests/integration/broker_fixture.h"

namespace neardup::stream {
namespace {

using namespace testing;

constexpr int kWide = 6;  // input partitions
const std::string kInput = "wide";

/// A near copy the way wire services make them: same words, other case and punctuation.
std::string near_copy(const std::string& text) {
  std::string out = text;
  for (std::size_t i = 0; i < out.size(); i += 3) out[i] = static_cast<char>(std::toupper(out[i]));
  return out + "!!";
}

struct Pair {
  std::string original, copy;
  int original_partition = 0, copy_partition = 0;
};

/// What the output says about each message (value -> verdicts of its output records).
using Verdicts = std::map<std::string, std::vector<std::string>>;

class ScaleOutTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    broker_.create_topic(kInput, kWide);
    cfg_.kafka.input_topics = {kInput};
    cfg_.action = config::Action::tag;  // duplicates are republished with their verdict
  }

  /// Starts `n` instances and waits until every input partition is owned by
  /// exactly one of them, each owns some, and one judge is active.
  std::vector<std::unique_ptr<Running>> start_group(
      int n, const std::vector<std::shared_ptr<std::atomic<bool>>>& kill = {}) {
    std::vector<std::unique_ptr<Running>> group;
    for (int i = 0; i < n; ++i) {
      std::function<bool(std::string_view)> crash_at;
      if (i < static_cast<int>(kill.size())) {
        crash_at = [flag = kill[static_cast<std::size_t>(i)]](std::string_view point) {
          return flag->load() && point == "judge-decided";
        };
      }
      group.push_back(start_service(cfg_, crash_at));
    }
    const bool settled = eventually(
        [&] {
          std::uint64_t all = 0;
          int judges = 0;
          for (const auto& r : group) {
            const std::uint64_t mine = r->owned.load();
            if (mine == 0 || (all & mine) != 0) return false;
            all |= mine;
            judges += r->judging.load() ? 1 : 0;
          }
          const int want_judges = cfg_.kafka.judge_topic.empty() ? 0 : 1;
          return all == (std::uint64_t{1} << kWide) - 1 && judges == want_judges;
        },
        std::chrono::seconds(90));
    EXPECT_TRUE(settled) << "the group did not settle";
    return group;
  }

  /// A partition owned by instance `i`.
  static int partition_of(const Running& r, int nth = 0) {
    const std::uint64_t mine = r.owned.load();
    for (int p = 0; p < kWide; ++p) {
      if ((mine >> p & 1) && nth-- == 0) return p;
    }
    return __builtin_ctzll(mine);
  }

  /// `count` pairs whose original and copy are read by different instances
  /// (instance k and k+1 of the group, round robin).
  std::vector<Pair> pairs_across(const std::vector<std::unique_ptr<Running>>& group,
                                 std::size_t count, std::uint64_t seed) {
    const auto texts = distinct_texts(count, seed);
    std::vector<Pair> out;
    for (std::size_t i = 0; i < count; ++i) {
      const auto& a = *group[i % group.size()];
      const auto& b = *group[(i + 1) % group.size()];
      out.push_back(Pair{texts[i], near_copy(texts[i]),
                         partition_of(a, static_cast<int>(i / 7) % 2), partition_of(b)});
    }
    return out;
  }

  /// Produces every original, waits `gap`, then every copy (so each copy
  /// follows its original by `gap`, on another instance's partition).
  void produce_pairs(kafka::Producer& producer, const std::vector<Pair>& pairs,
                     std::chrono::milliseconds gap) {
    auto send = [&](const std::string& value, int partition) {
      kafka::Producer::Record rec;
      rec.topic = kInput;
      rec.partition = partition;
      rec.value = value;
      ASSERT_EQ(producer.produce(rec), kafka::errc::no_error);
    };
    for (const Pair& p : pairs) send(p.original, p.original_partition);
    if (gap.count() > 0) {
      producer.poll(std::chrono::milliseconds(0));
      std::this_thread::sleep_for(gap);
    }
    for (const Pair& p : pairs) send(p.copy, p.copy_partition);
    producer.poll(std::chrono::milliseconds(0));
  }

  Verdicts verdicts_in_output() {
    Verdicts out;
    for (const Record& r : read_all(cfg_.kafka.output_topic)) {
      auto it = r.headers.find("neardup-verdict");
      out[r.value].push_back(it == r.headers.end() ? "unique" : it->second);
    }
    return out;
  }

  /// Pairs where exactly one of the two is a duplicate in every output record
  /// of it (and the other unique in every one): one order decided.
  static std::size_t caught(const std::vector<Pair>& pairs, const Verdicts& verdicts,
                            std::size_t* lost) {
    std::size_t n = 0;
    *lost = 0;
    auto all = [&](const std::string& value, const char* kind) {
      auto it = verdicts.find(value);
      if (it == verdicts.end()) return false;
      for (const auto& v : it->second)
        if (v != kind) return false;
      return true;
    };
    for (const Pair& p : pairs) {
      if (!verdicts.count(p.original) || !verdicts.count(p.copy)) ++*lost;
      if ((all(p.original, "unique") && all(p.copy, "duplicate")) ||
          (all(p.original, "duplicate") && all(p.copy, "unique")))
        ++n;
    }
    return n;
  }

  void expect_every_gap_caught(int instances) {
    auto group = start_group(instances);
    ASSERT_EQ(group.size(), static_cast<std::size_t>(instances));
    kafka::Producer producer(
        default_producer_properties(broker_.bootstrap()),
        [](kafka::Message report) { ASSERT_EQ(report.error(), kafka::errc::no_error); });
    const std::size_t per_gap = 60;
    std::map<int, std::vector<Pair>> by_gap;
    std::uint64_t seed = 100;
    for (int gap : {0, 10, 50, 200}) {
      by_gap[gap] = pairs_across(group, per_gap, seed++);
      produce_pairs(producer, by_gap[gap], std::chrono::milliseconds(gap));
    }
    ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
    const std::uint64_t total = 4 * per_gap * 2;
    ASSERT_TRUE(eventually([&] {
      std::uint64_t committed = 0;
      for (const auto& r : group) committed += r->committed.load();
      return committed >= total;
    })) << "not every message was committed";
    for (const auto& r : group) {
      std::printf("instance: judge round trip p50 %lld ms, p99 %lld ms\n",
                  static_cast<long long>(r->round_trip_p50.load()),
                  static_cast<long long>(r->round_trip_p99.load()));
    }
    for (auto& r : group) ASSERT_EQ(r->stop(), 0);
    const Verdicts verdicts = verdicts_in_output();
    std::size_t records = 0;
    for (const auto& [value, list] : verdicts) records += list.size();
    EXPECT_EQ(records, total);  // each message exactly once (a clean run repeats nothing)
    for (const auto& [gap, pairs] : by_gap) {
      std::size_t lost = 0;
      EXPECT_EQ(caught(pairs, verdicts, &lost), per_gap) << "gap " << gap << " ms";
      EXPECT_EQ(lost, 0u) << "gap " << gap << " ms";
    }
  }
};

TEST_F(ScaleOutTest, TwoInstancesCatchEveryPairAtGapsOf0_10_50And200Ms) {
  expect_every_gap_caught(2);
}

// config/README.md "Scope": with dedup.scope key and input partitioned by key,
// instances need no judge: a key's messages are all read by one instance.
TEST_F(ScaleOutTest, KeyScopedInstancesWithoutAJudgeCatchEveryPairOfAKeyAtOnce) {
  cfg_.kafka.judge_topic = "";
  cfg_.scope = "key";
  cfg_.dedup.window.scoped = true;
  auto group = start_group(2);
  ASSERT_EQ(group.size(), 2u);
  kafka::Producer producer(
      default_producer_properties(broker_.bootstrap()),
      [](kafka::Message report) { ASSERT_EQ(report.error(), kafka::errc::no_error); });
  const std::size_t count = 60;
  const auto texts = distinct_texts(count, 7);
  auto send = [&](const std::string& value, const std::string& key) {
    kafka::Producer::Record rec;
    rec.topic = kInput;
    rec.partition = kafka::kAnyPartition;  // the default partitioner: by key
    rec.key = key;
    rec.has_key = true;
    rec.value = value;
    ASSERT_EQ(producer.produce(rec), kafka::errc::no_error);
  };
  std::vector<Pair> pairs;
  std::vector<std::string> others;
  for (std::size_t i = 0; i < count; ++i) {
    pairs.push_back(Pair{texts[i], near_copy(texts[i]), 0, 0});
    others.push_back(texts[i] + " again");  // a near-copy from another account
    send(pairs.back().original, "user-" + std::to_string(i));
  }
  for (std::size_t i = 0; i < count; ++i) send(others[i], "other-" + std::to_string(i));
  for (std::size_t i = 0; i < count; ++i) send(pairs[i].copy, "user-" + std::to_string(i));
  ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
  ASSERT_TRUE(eventually([&] {
    std::uint64_t committed = 0;
    for (const auto& r : group) committed += r->committed.load();
    return committed >= 3 * count;
  }));
  for (auto& r : group) ASSERT_EQ(r->stop(), 0);
  const Verdicts verdicts = verdicts_in_output();
  std::size_t lost = 0;
  EXPECT_EQ(caught(pairs, verdicts, &lost), count);
  EXPECT_EQ(lost, 0u);
  std::size_t unique_others = 0;
  for (const auto& text : others) {
    auto it = verdicts.find(text);
    if (it != verdicts.end() && it->second == std::vector<std::string>{"unique"}) ++unique_others;
  }
  EXPECT_EQ(unique_others, count) << "another key's near-copy is not a duplicate";
}

TEST_F(ScaleOutTest, ThreeInstancesCatchEveryPairAtGapsOf0_10_50And200Ms) {
  expect_every_gap_caught(3);
}

TEST_F(ScaleOutTest, KillingTheJudgingInstanceMidStreamLosesNothingAndJudgesTheSame) {
  const std::vector<std::shared_ptr<std::atomic<bool>>> kill = {
      std::make_shared<std::atomic<bool>>(false), std::make_shared<std::atomic<bool>>(false),
      std::make_shared<std::atomic<bool>>(false)};
  auto group = start_group(3, kill);
  ASSERT_EQ(group.size(), 3u);
  int judging = -1;
  for (int i = 0; i < 3; ++i)
    if (group[static_cast<std::size_t>(i)]->judging.load()) judging = i;
  ASSERT_GE(judging, 0);

  kafka::Producer producer(
      default_producer_properties(broker_.bootstrap()),
      [](kafka::Message report) { ASSERT_EQ(report.error(), kafka::errc::no_error); });
  // 10 batches of 30 pairs, 10 ms apart; the judge dies after the fifth (round == 4).
  std::vector<Pair> all;
  for (int round = 0; round < 10; ++round) {
    std::vector<Pair> pairs = pairs_across(group, 30, 1000 + static_cast<std::uint64_t>(round));
    produce_pairs(producer, pairs, std::chrono::milliseconds(10));
    all.insert(all.end(), pairs.begin(), pairs.end());
    if (round == 4) kill[static_cast<std::size_t>(judging)]->store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
  Running& dead = *group[static_cast<std::size_t>(judging)];
  ASSERT_TRUE(eventually([&] { return dead.status.load() == kSimulatedCrash; }))
      << "the judging instance did not crash";
  dead.stop();
  // The survivors take over its partitions and the judging, and finish everything.
  ASSERT_TRUE(eventually(
      [&] {
        std::uint64_t owned = 0;
        int judges = 0;
        for (int i = 0; i < 3; ++i) {
          if (i == judging) continue;
          owned |= group[static_cast<std::size_t>(i)]->owned.load();
          judges += group[static_cast<std::size_t>(i)]->judging.load() ? 1 : 0;
        }
        return owned == (std::uint64_t{1} << kWide) - 1 && judges == 1;
      },
      std::chrono::seconds(90)))
      << "no survivor took over";
  const auto lag_zero = [&] {
    for (int i = 0; i < 3; ++i) {
      if (i == judging) continue;
      const Running& r = *group[static_cast<std::size_t>(i)];
      if (r.lag_partitions.load() == 0 || r.lag.load() != 0) return false;
    }
    return true;
  };
  ASSERT_TRUE(eventually(lag_zero, std::chrono::seconds(90))) << "the survivors did not catch up";
  for (int i = 0; i < 3; ++i) {
    if (i != judging) {
      ASSERT_EQ(group[static_cast<std::size_t>(i)]->stop(), 0);
    }
  }

  const Verdicts verdicts = verdicts_in_output();
  std::size_t lost = 0;
  EXPECT_EQ(caught(all, verdicts, &lost), all.size());
  EXPECT_EQ(lost, 0u);
  // Nothing judged twice differently, and the group's committed offsets cover every message.
  std::size_t records = 0;
  for (const auto& [value, list] : verdicts) records += list.size();
  EXPECT_GE(records, all.size() * 2);  // (the crash may repeat what it had not committed)
}

TEST_F(ScaleOutTest, AJudgeOrVerdictTopicOfTwoPartitionsStopsTheServiceAsAConfigurationError) {
  // Two partitions would split the one order the judge decides in: the
  // service refuses to start on them, with the reason and exit status 2 (a
  // restart cannot help). (A missing topic stops it with status 1, as it may
  // be being created; the mock cluster creates a topic it is asked about.)
  struct Case {
    std::string judge, verdicts;
    int status;
    std::string reason;
  };
  broker_.create_topic("judge-two", 2);
  broker_.create_topic("verdicts-two", 2);
  broker_.create_topic("judge-one", 1);
  broker_.create_topic("verdicts-one", 1);
  for (const Case& c :
       {Case{"judge-two", "verdicts-one", 2, "topic 'judge-two' has 2 partitions"},
        Case{"judge-one", "verdicts-two", 2, "topic 'verdicts-two' has 2 partitions"}}) {
    config::Config cfg = cfg_;
    cfg.kafka.judge_topic = c.judge;
    cfg.kafka.verdict_topic = c.verdicts;
    auto running = start_service(cfg);
    ASSERT_TRUE(eventually([&] { return running->status.load() != -1; }, std::chrono::seconds(60)))
        << c.judge << " / " << c.verdicts << ": the service did not stop";
    EXPECT_EQ(running->stop(), c.status) << c.judge << " / " << c.verdicts;
    EXPECT_THAT(running->service->fatal_error(), ::testing::HasSubstr(c.reason));
    EXPECT_THAT(running->service->fatal_error(),
                ::testing::HasSubstr("exactly one partition each"));
    EXPECT_EQ(running->last.consumed, 0u);
  }
}

TEST_F(ScaleOutTest, AnalysisOnThreeWorkersGivesEveryMessageTheVerdictOfOne) {
  // 900 messages, every tenth a near copy of one 5 to 50 messages before it.
  const auto texts = distinct_texts(900, 77);
  std::vector<std::string> feed;
  feed.reserve(texts.size());  // (a copy is made from an element of it)
  for (std::size_t i = 0; i < texts.size(); ++i)
    feed.push_back(i % 10 == 9 && i >= 50 ? near_copy(feed[i - 5 - (i * 7) % 45]) : texts[i]);
  kafka::Producer producer(
      default_producer_properties(broker_.bootstrap()),
      [](kafka::Message report) { ASSERT_EQ(report.error(), kafka::errc::no_error); });
  for (std::size_t i = 0; i < feed.size(); ++i) {
    kafka::Producer::Record rec;
    rec.topic = kInput;
    rec.partition = 0;  // one partition: big polled batches, split among the workers
    const std::string key = std::to_string(i);
    rec.key = key;
    rec.has_key = true;
    rec.value = feed[i];
    ASSERT_EQ(producer.produce(rec), kafka::errc::no_error);
  }
  ASSERT_TRUE(producer.flush(std::chrono::seconds(30)));
  std::map<int, std::map<std::string, std::string>> verdicts;  // workers -> key -> verdict
  for (int workers : {1, 3}) {
    config::Config cfg = cfg_;
    cfg.workers = workers;
    cfg.kafka.group_id = "workers-" + std::to_string(workers);
    cfg.kafka.output_topic = "out-" + std::to_string(workers);
    cfg.kafka.changelog_topic = "window-" + std::to_string(workers);
    cfg.kafka.judge_topic = "judge-" + std::to_string(workers);
    cfg.kafka.verdict_topic = "verdicts-" + std::to_string(workers);
    broker_.create_topic(cfg.kafka.output_topic, kPartitions);
    broker_.create_topic(cfg.kafka.changelog_topic, kPartitions);
    broker_.create_topic(cfg.kafka.judge_topic, 1);
    broker_.create_topic(cfg.kafka.verdict_topic, 1);
    auto running = start_service(cfg);
    ASSERT_TRUE(eventually([&] { return running->committed.load() >= feed.size(); }));
    ASSERT_EQ(running->stop(), 0);
    EXPECT_EQ(running->last.consumed, feed.size());
    for (const Record& r : read_all(cfg.kafka.output_topic)) {
      auto it = r.headers.find("neardup-verdict");
      verdicts[workers][r.key.value_or("")] = it == r.headers.end() ? "unique" : it->second;
    }
  }
  ASSERT_EQ(verdicts[1].size(), feed.size());
  EXPECT_EQ(verdicts[3], verdicts[1]);
  std::size_t duplicates = 0;
  for (const auto& [key, verdict] : verdicts[1]) duplicates += verdict == "duplicate" ? 1 : 0;
  EXPECT_EQ(duplicates, 85u);  // (every tenth from the 50th)
}

}  // namespace
}  // namespace neardup::stream
