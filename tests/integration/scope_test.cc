// dedup.scope, the neardup-count and neardup-similarity headers and
// window.refresh_on_duplicate in the service, with the group judge and with
// each instance's own window; the scope survives a restart through the changelog.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/broker_fixture.h"

namespace neardup::stream {
namespace {

using namespace testing;  // neardup::stream::testing: the broker fixture

constexpr const char* kStory = "Storm closes the harbour bridge as rivers rise across the county";
constexpr const char* kStoryAgain =
    "STORM closes the harbour bridge, as rivers rise across the county!";
constexpr const char* kOther = "Council approves the new school budget after a long debate";

class ScopeTest : public BrokerTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    if (!GetParam()) cfg_.kafka.judge_topic = "";
    cfg_.action = config::Action::tag;
  }

  void produce(const std::string& value, const std::string& key, std::int64_t timestamp = 0) {
    produce_to("input", {value}, 0, key, {}, timestamp);
  }

  /// Runs one service until it has committed `count` messages in all, then stops it.
  void run_until(const config::Config& cfg, std::uint64_t count) {
    auto running = start_service(cfg);
    ASSERT_TRUE(eventually([&] { return running->committed.load() >= count; }));
    ASSERT_EQ(running->stop(), 0);
  }

  /// The tagged output by key, in input order (partition 0 only).
  std::vector<Record> output(std::size_t count) {
    auto out = read_all("output");
    EXPECT_EQ(out.size(), count);
    std::sort(out.begin(), out.end(),
              [](const Record& a, const Record& b) { return a.offset < b.offset; });
    return out;
  }
};

INSTANTIATE_TEST_SUITE_P(Judge, ScopeTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "judge" : "local";
                         });

TEST_P(ScopeTest, KeyScopeMatchesOnlyTheSameKeyAndCountsEachOriginalsDuplicates) {
  config::Config cfg = cfg_;
  cfg.scope = "key";
  cfg.dedup.window.scoped = true;
  produce(kStory, "alice");       // 0: kept
  produce(kStory, "bob");         // 1: kept (another account)
  produce(kStoryAgain, "alice");  // 2: duplicate of 0, count 1
  produce(kStory, "alice");       // 3: duplicate of 0, count 2
  produce(kStoryAgain, "bob");    // 4: duplicate of 1, count 1
  produce(kOther, "alice");       // 5: kept
  run_until(cfg, 6);
  const auto out = output(6);
  ASSERT_EQ(out.size(), 6u);
  const char* verdicts[] = {"", "", "duplicate", "duplicate", "duplicate", ""};
  const char* of[] = {"", "", "input/0/0", "input/0/0", "input/0/1", ""};
  const char* counts[] = {"", "", "1", "2", "1", ""};
  for (std::size_t i = 0; i < 6; ++i) {
    auto h = out[i].headers;
    EXPECT_EQ(out[i].offset, static_cast<std::int64_t>(i));
    EXPECT_EQ(h["neardup-verdict"], verdicts[i]) << i;
    EXPECT_EQ(h["neardup-of"], of[i]) << i;
    EXPECT_EQ(h["neardup-count"], counts[i]) << i;
    // Normalized copies: every sketch bin agrees.
    EXPECT_EQ(h["neardup-similarity"], *verdicts[i] ? "1.000" : "") << i;
  }
}

TEST_P(ScopeTest, AJsonFieldScopeSurvivesARestart) {
  config::Config cfg = cfg_;
  cfg.input.format = config::InputFormat::json;
  cfg.scope = "/channel";
  cfg.dedup.window.scoped = true;
  auto json = [](const char* text, const char* channel) {
    return std::string("{\"text\":\"") + text + "\",\"channel\":\"" + channel + "\"}";
  };
  const std::int64_t stamp = now_ms() - 60'000;
  produce(json(kStory, "wire"), "k0", stamp);  // 0: kept in channel wire
  run_until(cfg, 1);
  // After a restart the window is rebuilt from the changelog, scopes included.
  produce(json(kStoryAgain, "blog"), "k1");                     // 1: kept (channel blog)
  produce(json(kStoryAgain, "wire"), "k2");                     // 2: duplicate of 0
  produce("{\"text\":\"" + std::string(kStory) + "\"}", "k3");  // 3: no channel: scope "", kept
  run_until(cfg, 3);
  auto out = output(4);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[1].headers.count("neardup-verdict"), 0u);
  EXPECT_EQ(out[2].headers["neardup-of"], "input/0/0");
  EXPECT_EQ(out[2].headers["neardup-count"], "1");
  EXPECT_EQ(out[3].headers.count("neardup-verdict"), 0u);
}

TEST_P(ScopeTest, RefreshKeepsARepostedStoryInTheWindowByEventTime) {
  for (bool refresh : {false, true}) {
    SCOPED_TRACE(refresh ? "refresh" : "no refresh");
    config::Config cfg = cfg_;
    cfg.dedup.window.duration = std::chrono::seconds(10);
    cfg.dedup.window.refresh_on_duplicate = refresh;
    cfg.kafka.group_id += refresh ? "-refresh" : "-plain";
    cfg.kafka.changelog_topic = "";  // each run its own window
    const std::string input = refresh ? "input-refresh" : "input-plain";
    cfg.kafka.input_topics = {input};
    cfg.kafka.output_topic = refresh ? "output-refresh" : "output-plain";
    broker_.create_topic(input, kPartitions);
    broker_.create_topic(cfg.kafka.output_topic, kPartitions);
    if (GetParam()) {  // the first run's requests must not reach the second run's judge
      cfg.kafka.judge_topic = input + "-judge";
      cfg.kafka.verdict_topic = input + "-verdicts";
      for (const auto& t : judge_topics(cfg.kafka)) broker_.create_topic(t, 1);
    }
    const std::int64_t t0 = now_ms() - 120'000;
    produce_to(input, {kStory}, 0, std::string("a"), {}, t0);
    produce_to(input, {kStoryAgain}, 0, std::string("b"), {}, t0 + 8'000);
    produce_to(input, {kStory}, 0, std::string("c"), {}, t0 + 16'000);
    produce_to(input, {kStoryAgain}, 0, std::string("d"), {}, t0 + 24'000);
    run_until(cfg, 4);
    auto out = read_all(cfg.kafka.output_topic);
    ASSERT_EQ(out.size(), 4u);
    std::sort(out.begin(), out.end(),
              [](const Record& a, const Record& b) { return a.offset < b.offset; });
    EXPECT_EQ(out[1].headers["neardup-count"], "1");
    if (refresh) {
      EXPECT_EQ(out[2].headers["neardup-of"], input + "/0/0");
      EXPECT_EQ(out[2].headers["neardup-count"], "2");
      EXPECT_EQ(out[3].headers["neardup-count"], "3");
    } else {
      EXPECT_EQ(out[2].headers.count("neardup-verdict"), 0u) << "the original expired at 10 s";
      EXPECT_EQ(out[3].headers["neardup-of"], input + "/0/2");
      EXPECT_EQ(out[3].headers["neardup-count"], "1");
    }
  }
}

}  // namespace
}  // namespace neardup::stream
