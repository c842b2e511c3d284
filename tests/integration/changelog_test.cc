// The window changelog: the window survives a restart, a replay is never its
// own duplicate, "" turns it off, unreadable records are skipped and counted,
// and instances of one group follow each other's kept messages. The record
// format itself, and that a rebuilt engine judges exactly like the original,
// need no broker: tests/unit/stream/changelog/changelog_codec_test.cc.
#include <gtest/gtest.h>

#include <set>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/changelog_reader.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/sources.h"
#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/service/service.h"
#include "tests/integration/broker_fixture.h"

namespace neardup::stream {
namespace {

using namespace testing;

const std::string kOriginal = "Prices of energy fall for the third month as exports recover slowly";
const std::string kNearCopy =
    "prices of ENERGY fall for the third month, as exports recover slowly.";

class ChangelogTest : public BrokerTest {
 protected:
  explicit ChangelogTest(int brokers = 1) : BrokerTest(brokers) {}

  void SetUp() override {
    cfg_.action = config::Action::tag;
    BrokerTest::SetUp();
    // These tests are about the changelog as each instance writes and follows
    // it; with a judge (the default) the judge writes it: ChangelogModesTest.
    cfg_.kafka.judge_topic = "";
  }

  void produce(const std::string& topic, const std::vector<std::string>& values,
               std::int32_t partition, std::int64_t timestamp = 0) {
    produce_to(topic, values, partition, std::nullopt, {}, timestamp);
  }

  /// Changelog records on `partition`, one per element of `sizes` holding that
  /// many entries: record i's entries are stamped `base` + i s + their number,
  /// at consecutive input offsets from 0, with fingerprints drawn from `fingerprint`.
  void produce_changelog(std::int32_t partition, std::int64_t base, const std::vector<int>& sizes,
                         std::uint64_t& fingerprint) {
    ChangelogBatch batch(7, dedup::fingerprint_schema(cfg_.dedup));
    std::int64_t offset = 0;
    for (std::size_t rec = 0; rec < sizes.size(); ++rec) {
      for (int e = 0; e < sizes[rec]; ++e) {
        ChangelogRecord r;
        fingerprint = fingerprint * 6364136223846793005ull + 1442695040888963407ull;
        r.fingerprint.bits = fingerprint;
        r.time.ms = base + static_cast<std::int64_t>(rec) * 1000 + e;
        r.topic = "input";
        r.partition = partition;
        r.offset = offset++;
        batch.add(r);
      }
      const auto encoded = batch.take();
      produce(cfg_.kafka.changelog_topic, {std::string(encoded.value)}, partition,
              encoded.newest.ms);
    }
  }

  std::unique_ptr<Running> start(const config::Config& cfg) { return start_service(cfg); }
  std::unique_ptr<Running> start() { return start(cfg_); }

  /// Runs one service until it has committed `count` messages, then stops it.
  ServiceSnapshot run_until_committed(const config::Config& cfg, std::uint64_t count) {
    auto running = start(cfg);
    EXPECT_TRUE(eventually([&] { return running->committed.load() >= count; }));
    EXPECT_EQ(running->stop(), 0);
    return running->last;
  }

  /// The output record whose value is `value`.
  static std::optional<Record> find(const std::vector<Record>& records, const std::string& value) {
    for (const auto& r : records) {
      if (r.value == value) return r;
    }
    return std::nullopt;
  }
};

/// The same behaviours whether each instance judges (judge_topic "") or the group's judge does.
class ChangelogModesTest : public ChangelogTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ChangelogTest::SetUp();
    if (GetParam()) cfg_.kafka.judge_topic = config::KafkaOptions{}.judge_topic;
  }
};

INSTANTIATE_TEST_SUITE_P(Judge, ChangelogModesTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "judge" : "local";
                         });

TEST_P(ChangelogModesTest, AMessageKeptBeforeARestartMakesItsNearCopyADuplicateAfterIt) {
  produce("input", {kOriginal}, 0, now_ms() - 60'000);
  ServiceSnapshot first = run_until_committed(cfg_, 1);
  EXPECT_EQ(first.unique, 1u);
  EXPECT_EQ(first.changelog_written, 1u);
  EXPECT_EQ(first.produced, 1u);  // the changelog record is not counted as an output

  produce("input", {kNearCopy}, 1);
  auto second = start();
  ASSERT_TRUE(eventually([&] { return second->committed.load() >= 1; }));
  ASSERT_EQ(second->stop(), 0);
  EXPECT_TRUE(second->last.window_ready);
  EXPECT_EQ(second->last.changelog_replayed, 1u);
  EXPECT_EQ(second->last.consumed, 1u);  // only the new message: the same group continues
  EXPECT_EQ(second->last.duplicate, 1u);
  EXPECT_EQ(second->last.changelog_written, 0u);  // duplicates are not written

  auto out = read("output", 2);
  auto original = find(out, kOriginal), copy = find(out, kNearCopy);
  ASSERT_TRUE(original && copy);
  EXPECT_EQ(copy->headers["neardup-verdict"], "duplicate");
  EXPECT_EQ(copy->headers["neardup-of"], "input/0/" + std::to_string(original->offset));
  EXPECT_EQ(original->headers.count("neardup-verdict"), 0u);
}

TEST_P(ChangelogModesTest, ReplayingTheSameInputWithANewGroupJudgesNoMessageItsOwnDuplicate) {
  auto texts = distinct_texts(30, 7);
  produce("input", {texts.begin(), texts.begin() + 15}, 0);
  produce("input", {texts.begin() + 15, texts.end()}, 1);
  produce("input", {kOriginal, kNearCopy}, 0);
  ServiceSnapshot first = run_until_committed(cfg_, 32);
  EXPECT_EQ(first.unique, 31u);
  EXPECT_EQ(first.duplicate, 1u);
  EXPECT_EQ(first.changelog_written, 31u);

  config::Config replay = cfg_;
  replay.kafka.group_id = "neardup-replay";  // no committed offsets: reads the input again
  ServiceSnapshot second = run_until_committed(replay, 32);
  EXPECT_EQ(second.changelog_replayed, 31u);
  EXPECT_EQ(second.consumed, 32u);
  EXPECT_EQ(second.unique, 31u);    // each kept message finds only itself in the window
  EXPECT_EQ(second.duplicate, 1u);  // the near copy is still a duplicate of the original
}

TEST_F(ChangelogTest, AnEmptyTopicNameTurnsTheChangelogOff) {
  config::Config off = cfg_;
  off.kafka.changelog_topic = "";
  produce("input", {kOriginal}, 0);
  ServiceSnapshot first = run_until_committed(off, 1);
  EXPECT_EQ(first.changelog_written, 0u);
  EXPECT_TRUE(first.window_ready);

  produce("input", {kNearCopy}, 1);
  ServiceSnapshot second = run_until_committed(off, 1);
  EXPECT_EQ(second.changelog_replayed, 0u);
  EXPECT_EQ(second.unique, 1u);  // the window started empty, as before the changelog existed
  EXPECT_EQ(second.duplicate, 0u);
  auto log = read("neardup-window", 1, std::chrono::seconds(2));
  EXPECT_TRUE(log.empty());
}

TEST_P(ChangelogModesTest, UnreadableRecordsAreSkippedCountedAndNotFatal) {
  produce("input", {kOriginal}, 0, now_ms() - 60'000);
  run_until_committed(cfg_, 1);
  produce("neardup-window",
          {"not json at all", "{\"v\":99,\"fp\":\"0000000000000001\"}", "{\"v\":1}"}, 0);
  produce("neardup-window", {std::string("\xff\xfe{", 3)}, 1);
  ChangelogBatch batch(9);  // a binary batch cut short: refused whole
  ChangelogRecord cut;
  cut.fingerprint.bits = 0x42;
  cut.topic = "input";
  batch.add(cut);
  const std::string whole(batch.take().value);
  produce("neardup-window", {whole.substr(0, whole.size() - 3)}, 1);

  produce("input", {kNearCopy}, 1);
  auto second = start();
  ASSERT_TRUE(eventually([&] { return second->committed.load() >= 1; }));
  ASSERT_EQ(second->stop(), 0);
  EXPECT_EQ(second->last.changelog_corrupt, 5u);
  EXPECT_EQ(second->last.changelog_replayed, 1u);
  EXPECT_EQ(second->last.duplicate, 1u);
  EXPECT_TRUE(second->service->fatal_error().empty());
}

TEST_F(ChangelogTest, InstancesOfOneGroupFollowEachOthersKeptMessages) {
  auto a = start(), b = start();
  ASSERT_TRUE(eventually([&] { return a->assigned.load() && b->assigned.load(); },
                         std::chrono::seconds(90)));
  produce("input", {kOriginal}, 0);
  // Whichever instance holds partition 0 keeps it; the other one follows its record.
  ASSERT_TRUE(eventually([&] { return a->written.load() + b->written.load() >= 1; }));
  ASSERT_TRUE(eventually([&] { return a->followed.load() + b->followed.load() >= 1; }));
  produce("input", {kNearCopy}, 1);
  ASSERT_TRUE(eventually([&] { return a->committed.load() + b->committed.load() >= 2; }));
  ASSERT_EQ(a->stop(), 0);
  ASSERT_EQ(b->stop(), 0);
  EXPECT_EQ(a->last.unique + b->last.unique, 1u);
  EXPECT_EQ(a->last.duplicate + b->last.duplicate, 1u);
  EXPECT_EQ(a->last.changelog_followed + b->last.changelog_followed,
            1u);  // nobody follows its own record
}

// What another instance wrote after this reader caught up is all read by
// read_to_end (the service calls it on every assignment, before judging any
// message of the partitions it gains), without waiting for the next poll.
TEST_F(ChangelogTest, ReadToEndReadsEverythingWrittenBeforeTheCall) {
  ChangelogReader reader(default_consumer_properties(broker_.bootstrap(), cfg_.kafka.group_id),
                         cfg_.kafka.changelog_topic, std::chrono::seconds(10));
  auto never = [] { return false; };
  std::vector<ChangelogRecord> seen;
  auto visit = [&](const ChangelogRecord& r) { seen.push_back(r); };
  auto corrupt = [](std::int32_t, std::int64_t, const std::string& reason) {
    ADD_FAILURE() << reason;
  };
  ASSERT_TRUE(reader.catch_up(visit, corrupt, never));
  ASSERT_TRUE(seen.empty());
  for (int i = 0; i < 3; ++i) {
    ChangelogRecord r;
    r.fingerprint.bits = 0x1000u + static_cast<std::uint64_t>(i);
    r.time.ms = 1000 + i;
    r.topic = "input";
    r.partition = i % 2;
    r.offset = i;
    r.instance = 42;
    produce(cfg_.kafka.changelog_topic, {encode_changelog_value(r)}, i % 2);
  }
  ASSERT_TRUE(reader.read_to_end(visit, corrupt, std::chrono::seconds(30)));
  ASSERT_EQ(seen.size(), 3u);
  std::set<std::uint64_t> fingerprints;
  for (const auto& r : seen) fingerprints.insert(r.fingerprint.bits);
  EXPECT_EQ(fingerprints, (std::set<std::uint64_t>{0x1000, 0x1001, 0x1002}));
  EXPECT_TRUE(reader.read_to_end(visit, corrupt,
                                 std::chrono::seconds(5)));  // at the end already: returns at once
  EXPECT_EQ(seen.size(), 3u);
}

// A rebuild reads about one window, whatever the topic holds, and rebuilds the
// window a read of everything would: here on librdkafka's mock cluster, which
// cannot look offsets up by time (the reader searches by reading);
// tests/cluster/window_rebuild_test.sh does the same through the service on kfake.
TEST_F(ChangelogTest, ARebuildReadsAboutOneWindowAndRebuildsTheSameWindow) {
  // 2 partitions x 40 records x 50 entries, each record a second after the
  // previous one: 4,000 entries over 40 s.
  const std::int64_t base = now_ms() - 3'600'000;
  std::uint64_t fingerprint = 0x9e3779b97f4a7c15ull;
  for (std::int32_t p = 0; p < 2; ++p)
    produce_changelog(p, base, std::vector<int>(40, 50), fingerprint);
  auto never = [] { return false; };
  auto corrupt = [](std::int32_t, std::int64_t, const std::string& reason) {
    ADD_FAILURE() << reason;
  };
  struct Case {
    std::size_t max_entries;
    std::chrono::milliseconds duration;
    std::size_t kept;      // what the window holds
    std::size_t max_read;  // entries read at most
  };
  // By count: the newest 500 of 4,000. By time: 10 s hold record 29's last
  // entry and records 30-39 of each partition (2 x 501), read as 2 x 11 records.
  for (const Case& c : {Case{500, std::chrono::hours(24), 500, 750},
                        Case{1'000'000, std::chrono::seconds(10), 1002, 1100}}) {
    SCOPED_TRACE("max_entries " + std::to_string(c.max_entries));
    config::Config cfg = cfg_;
    cfg.dedup.window.max_entries = c.max_entries;
    cfg.dedup.window.duration = c.duration;
    auto rebuild = [&](bool whole, std::uint64_t& read) {
      ChangelogReader reader(default_consumer_properties(broker_.bootstrap(), cfg.kafka.group_id),
                             cfg.kafka.changelog_topic, std::chrono::seconds(10));
      Sources sources;
      SchemaCompatibility schemas(dedup::fingerprint_schema(cfg.dedup));
      dedup::Engine engine(cfg.dedup);
      std::size_t kept = 0;
      if (whole) {
        WindowReplay replay(cfg, sources, schemas);
        EXPECT_TRUE(
            reader.catch_up([&](const ChangelogRecord& r) { replay.add(r); }, corrupt, never));
        kept = replay.finish(engine);
      } else {
        RestoreHooks hooks;
        hooks.corrupt = corrupt;
        kept = restore_window(reader, engine, cfg, sources, schemas, hooks).value_or(0);
      }
      read = reader.entries_read();
      EXPECT_EQ(engine.stats().window.entries, kept);
      return kept;
    };
    std::uint64_t read_whole = 0, read_bounded = 0, read_twice = 0;
    EXPECT_EQ(rebuild(true, read_whole), c.kept);
    EXPECT_EQ(read_whole, 4000u);
    EXPECT_EQ(rebuild(false, read_bounded), c.kept);
    EXPECT_GE(read_bounded, c.kept);
    EXPECT_LE(read_bounded, c.max_read);
    // With 4 KiB to collect entries in (128 without a sketch), the chosen
    // ones are read a second time, slice by slice: the same window.
    cfg.dedup.window.rebuild_memory = 4096;
    EXPECT_EQ(rebuild(false, read_twice), c.kept);
    EXPECT_GE(read_twice, read_bounded + c.kept);
    EXPECT_LE(read_twice, read_bounded + c.max_read);
  }
}

// The newest records can be small (an instance catching up with its input
// flushes a batch every loop): the rebuild estimates entries per offset from
// deeper records too, and reads about one window, not the whole topic.
TEST_F(ChangelogTest, SmallNewestRecordsDoNotMakeTheRebuildReadEverything) {
  // 2 partitions x (30 records of 50 entries, then 8 of 4 entries), each
  // record a second after the previous one: 3,064 entries.
  const std::int64_t base = now_ms() - 3'600'000;
  std::uint64_t fingerprint = 0x2545f4914f6cdd1dull;
  std::vector<int> sizes(30, 50);
  sizes.resize(38, 4);
  for (std::int32_t p = 0; p < 2; ++p) produce_changelog(p, base, sizes, fingerprint);
  config::Config cfg = cfg_;
  cfg.dedup.window.max_entries = 500;
  ChangelogReader reader(default_consumer_properties(broker_.bootstrap(), cfg.kafka.group_id),
                         cfg.kafka.changelog_topic, std::chrono::seconds(10));
  Sources sources;
  SchemaCompatibility schemas(dedup::fingerprint_schema(cfg.dedup));
  dedup::Engine engine(cfg.dedup);
  RestoreHooks hooks;
  hooks.corrupt = [](std::int32_t, std::int64_t, const std::string& reason) {
    ADD_FAILURE() << reason;
  };
  EXPECT_EQ(restore_window(reader, engine, cfg, sources, schemas, hooks).value_or(0), 500u);
  EXPECT_EQ(engine.stats().window.entries, 500u);
  // The 64 entries of the 16 small records alone say 4 entries an offset:
  // 115 offsets for the rest of the window, which is every record. The first stretch
  // reads at most as many offsets as the sample did (16, 800 entries).
  EXPECT_GE(reader.entries_read(), 500u);
  EXPECT_LE(reader.entries_read(), 1000u);
  EXPECT_LT(reader.records_read(), reader.records_held());
}

// A topic written by three releases (version 1 records, version 2 JSON
// batches, version 3 binary batches) is read whole: an upgrade rebuilds the
// window from what the older release kept.
TEST_F(ChangelogTest, RecordsOfEveryFormatVersionAreReadFromOneTopic) {
  ChangelogRecord v1;
  v1.fingerprint.bits = 0x1001;
  v1.time.ms = 1001;
  v1.topic = "input";
  v1.offset = 1;
  v1.instance = 0x11;
  produce(cfg_.kafka.changelog_topic, {encode_changelog_value(v1)}, 0);
  const std::string v2 =
      "{\"v\":2,\"instance\":\"0000000000000022\",\"entries\":["
      "{\"fp\":\"0000000000002001\",\"t\":2001,\"topic\":\"input\",\"partition\":1,"
      "\"offset\":2},"
      "{\"fp\":\"0000000000002002\",\"t\":2002,\"topic\":\"input\",\"partition\":1,"
      "\"offset\":3,\"scope\":9}]}";
  produce(cfg_.kafka.changelog_topic, {v2}, 1);
  ChangelogBatch batch(0x33);
  for (int i = 0; i < 2; ++i) {
    ChangelogRecord r;
    r.fingerprint.bits = 0x3001u + static_cast<std::uint64_t>(i);
    r.time.ms = 3001 + i;
    r.topic = "input";
    r.partition = 2;
    r.offset = 4 + i;
    batch.add(r);
  }
  produce(cfg_.kafka.changelog_topic, {std::string(batch.take().value)}, 0);

  ChangelogReader reader(default_consumer_properties(broker_.bootstrap(), cfg_.kafka.group_id),
                         cfg_.kafka.changelog_topic, std::chrono::seconds(10));
  std::map<std::uint64_t, ChangelogRecord> seen;
  auto visit = [&](const ChangelogRecord& r) { seen[r.fingerprint.bits] = r; };
  auto corrupt = [](std::int32_t, std::int64_t, const std::string& reason) {
    ADD_FAILURE() << reason;
  };
  ASSERT_TRUE(reader.catch_up(visit, corrupt, [] { return false; }));
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen.at(0x1001).instance, 0x11u);
  EXPECT_EQ(seen.at(0x2001).instance, 0x22u);
  EXPECT_EQ(seen.at(0x2002).scope.value, 9u);
  EXPECT_EQ(seen.at(0x2002).offset, 3);
  EXPECT_EQ(seen.at(0x3001).instance, 0x33u);
  EXPECT_EQ(seen.at(0x3002).offset, 5);
  EXPECT_EQ(seen.at(0x3002).partition, 2);
}

/// Two brokers: the changelog's partitions led by broker 2, everything else by broker 1,
/// so the changelog alone can be made unreachable.
class ChangelogOnItsOwnBrokerTest : public ChangelogTest {
 protected:
  ChangelogOnItsOwnBrokerTest() : ChangelogTest(2) {}
  void SetUp() override {
    ChangelogTest::SetUp();
    cfg_.action = config::Action::drop;
    for (const auto& t : service_topics(cfg_.kafka)) {
      const int leader = t == cfg_.kafka.changelog_topic ? 2 : 1;
      for (int p = 0; p < kPartitions; ++p) broker_.set_leader(t, p, leader);
    }
    broker_.set_group_coordinator(cfg_.kafka.group_id, 1);
  }
};

TEST_F(ChangelogOnItsOwnBrokerTest,
       NoOffsetCommitsBeforeTheChangelogBatchHoldingItsEntryIsAcknowledged) {
  auto running = start();
  ASSERT_TRUE(eventually([&] { return running->assigned.load() && running->ready.load(); },
                         std::chrono::seconds(90)));
  broker_.set_down(2);
  const auto texts = distinct_texts(20, 5);
  produce("input", texts, 0);
  // Their outputs (broker 1) are acknowledged; their changelog entries (broker 2) are not.
  ASSERT_TRUE(eventually([&] { return running->produced.load() >= texts.size(); }));
  // A duplicate on the other partition has no output at all: it commits at the
  // next commit, which would also carry partition 0 if its outputs were enough.
  produce("input", {texts[0]}, 1);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 1; }));
  EXPECT_EQ(running->committed.load(), 1u);
  EXPECT_EQ(running->written.load(), 0u);
  broker_.set_up(2);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= texts.size() + 1; },
                         std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.unique, texts.size());
  EXPECT_EQ(running->last.duplicate, 1u);
  EXPECT_EQ(running->last.changelog_written, texts.size());
}

}  // namespace
}  // namespace neardup::stream
