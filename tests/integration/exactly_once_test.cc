// kafka.delivery: exactly-once against the embedded broker: offsets commit
// only through transactions, a crash at any point of a batch loses nothing and
// repeats only what its open transaction held, the window survives, and a
// restarted instance with the same transactional id finishes the stream.
//
// What the embedded broker cannot show: librdkafka 2.0.2's mock cluster
// accepts transactions (InitProducerId, AddPartitions, TxnOffsetCommit, EndTxn)
// but writes no transaction markers and ignores isolation.level, so a
// read_committed reader also sees what an aborted or open transaction wrote.
// It also drops the offsets of TxnOffsetCommit, so the service commits them
// through the consumer as well after each transaction here
// (ServiceOptions::commit_offsets_after_transaction, on by default). These tests therefore check
// the part a real broker would hide separately: every input before the crash's committed offsets
// comes out exactly once, and anything that comes out twice was in the transaction open at the
// crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stream/service/service.h"
#include "tests/integration/broker_fixture.h"

namespace neardup::stream {
namespace {

using namespace testing;

class ExactlyOnceTest : public BrokerTest {
 protected:
  config::Config eos(const std::string& id = "neardup-test") {
    config::Config cfg = cfg_;
    cfg.action = config::Action::tag;
    cfg.kafka.delivery = config::Delivery::exactly_once;
    cfg.kafka.transactional_id = id;
    return cfg;
  }

  std::int64_t committed_total() {
    std::int64_t sum = 0;
    for (const auto& [p, o] : committed_offsets()) sum += std::max<std::int64_t>(o, 0);
    return sum;
  }

  /// A service that crashes at `point` the first time it gets there after `armed` turned true.
  std::unique_ptr<Running> start_crashing(const config::Config& cfg, const std::string& point,
                                          const std::atomic<bool>& armed) {
    return start_service(
        cfg, [point, &armed](std::string_view at) { return at == point && armed.load(); });
  }
};

TEST_F(ExactlyOnceTest, OffsetsAndOutputsCommitThroughTransactions) {
  const auto texts = distinct_texts(500, 11);
  produce_to("input", texts);
  auto running = start_service(eos());
  ASSERT_TRUE(eventually([&] { return committed_total() >= 500; }));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(committed_total(), 500);
  EXPECT_EQ(running->last.committed, 500u);
  const auto out = read_all("output");
  ASSERT_EQ(out.size(), 500u);
  std::multiset<std::string> values;
  for (const auto& r : out) values.insert(r.value);
  for (const auto& t : texts) EXPECT_EQ(values.count(t), 1u);
}

class ExactlyOnceCrashTest : public ExactlyOnceTest,
                             public ::testing::WithParamInterface<const char*> {};

// 1000 messages are judged and committed; then a crash at `point` while the
// next 1000 come in; a restart with the same transactional id finishes the
// stream. Near-copies of originals judged before the crash, produced after
// it, are still recognised.
TEST_P(ExactlyOnceCrashTest, ACrashLosesNothingAndRepeatsOnlyItsOpenTransaction) {
  const auto texts = distinct_texts(2000, 12);
  produce_to("input", {texts.begin(), texts.begin() + 1000});
  std::map<int, std::int64_t> at_crash;
  {
    std::atomic<bool> armed{false};
    auto crashing = start_crashing(eos(), GetParam(), armed);
    ASSERT_TRUE(eventually([&] { return committed_total() >= 1000; }, std::chrono::seconds(60)));
    armed.store(true);
    produce_to("input", {texts.begin() + 1000, texts.end()});
    ASSERT_TRUE(
        eventually([&] { return crashing->status.load() != -1; }, std::chrono::seconds(90)));
    ASSERT_EQ(crashing->status.load(), kSimulatedCrash);
    crashing->thread.join();
    at_crash = committed_offsets();
    for (auto& [p, o] : at_crash) o = std::max<std::int64_t>(o, 0);
  }
  std::int64_t committed_at_crash = 0;
  for (const auto& [p, o] : at_crash) committed_at_crash += o;
  EXPECT_GE(committed_at_crash, 1000);
  EXPECT_LT(committed_at_crash, 2000) << "the crash came after everything was committed";

  auto running = start_service(eos());
  ASSERT_TRUE(eventually([&] { return committed_total() >= 2000; }, std::chrono::seconds(90)));
  // Near-copies (case and punctuation) of 50 originals, produced after the restart.
  std::vector<std::string> copies;
  for (std::size_t i = 0; i < 50; ++i) {
    std::string c = texts[i];
    c[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(c[0])));
    copies.push_back(c + "!");
  }
  produce_to("input", copies);
  ASSERT_TRUE(eventually([&] { return committed_total() >= 2050; }, std::chrono::seconds(60)));
  ASSERT_EQ(running->stop(), 0);

  // Where each input sits, to tell the committed part from the open transaction.
  std::map<std::string, std::pair<int, std::int64_t>> where;
  for (const auto& r : read_all("input")) where[r.value] = {r.partition, r.offset};
  std::map<std::string, int> seen;
  std::size_t tagged = 0;
  for (const auto& r : read_all("output")) {
    ++seen[r.value];
    if (r.headers.count("neardup-verdict")) ++tagged;
  }
  std::size_t repeated = 0;
  for (const auto& t : texts) {
    ASSERT_GE(seen[t], 1) << "lost: " << t;
    const auto [partition, offset] = where.at(t);
    if (offset < at_crash[partition]) {
      EXPECT_EQ(seen[t], 1) << "an input of a committed transaction came out again: " << partition
                            << "/" << offset;
    } else if (seen[t] > 1) {
      ++repeated;  // written by the transaction open at the crash: a real broker's read_committed
                   // readers never see it
    }
  }
  for (const auto& c : copies) EXPECT_EQ(seen[c], 1) << c;
  EXPECT_EQ(tagged, copies.size())
      << "near-copies of originals judged before the crash were not recognised";
  EXPECT_LE(static_cast<std::int64_t>(repeated), 2000 - committed_at_crash);
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, ExactlyOnceCrashTest,
                         ::testing::Values("before-produce", "produced", "commit"),
                         [](const ::testing::TestParamInfo<const char*>& point) {
                           std::string name = point.param;
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace neardup::stream
