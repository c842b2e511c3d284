// The window changelog: the window survives a restart, a replay is never its
// own duplicate, "" turns it off, unreadable records are skipped and counted,
// and instances of one group follow each other's kept messages. The record
// format itself, and that a rebuilt engine judges exactly like the original,
// are checked without a broker.
#include <gtest/gtest.h>

#include <set>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dedup/engine.h"
#include "stream/changelog.h"
#include "tests/integration/broker_fixture.h"
#include "stream/embedded_broker.h"
#include "stream/kafka.h"
#include "stream/service.h"

namespace neardup::stream {
namespace {

using namespace testing;

const std::string kOriginal = "Prices of energy fall for the third month as exports recover slowly";
const std::string kNearCopy = "prices of ENERGY fall for the third month, as exports recover slowly.";

class ChangelogTest : public BrokerTest {
 protected:
  explicit ChangelogTest(int brokers = 1) : BrokerTest(brokers) {}

  void SetUp() override {
    cfg_.action = config::Action::tag;
    BrokerTest::SetUp();
  }

  void produce(const std::string& topic, const std::vector<std::string>& values, std::int32_t partition,
               std::int64_t timestamp = 0) {
    produce_to(topic, values, partition, std::nullopt, {}, timestamp);
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

TEST_F(ChangelogTest, AMessageKeptBeforeARestartMakesItsNearCopyADuplicateAfterIt) {
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

TEST_F(ChangelogTest, ReplayingTheSameInputWithANewGroupJudgesNoMessageItsOwnDuplicate) {
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
  EXPECT_EQ(second.unique, 31u);   // each kept message finds only itself in the window
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

TEST_F(ChangelogTest, UnreadableRecordsAreSkippedCountedAndNotFatal) {
  produce("input", {kOriginal}, 0, now_ms() - 60'000);
  run_until_committed(cfg_, 1);
  produce("neardup-window", {"not json at all", "{\"v\":99,\"fp\":\"0000000000000001\"}", "{\"v\":1}"}, 0);
  produce("neardup-window", {std::string("\xff\xfe{", 3)}, 1);

  produce("input", {kNearCopy}, 1);
  auto second = start();
  ASSERT_TRUE(eventually([&] { return second->committed.load() >= 1; }));
  ASSERT_EQ(second->stop(), 0);
  EXPECT_EQ(second->last.changelog_corrupt, 4u);
  EXPECT_EQ(second->last.changelog_replayed, 1u);
  EXPECT_EQ(second->last.duplicate, 1u);
  EXPECT_TRUE(second->service->fatal_error().empty());
}

TEST_F(ChangelogTest, InstancesOfOneGroupFollowEachOthersKeptMessages) {
  auto a = start(), b = start();
  ASSERT_TRUE(eventually([&] { return a->assigned.load() && b->assigned.load(); }, std::chrono::seconds(90)));
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
  EXPECT_EQ(a->last.changelog_followed + b->last.changelog_followed, 1u);  // nobody follows its own record
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
  auto corrupt = [](std::int32_t, std::int64_t, const std::string& reason) { ADD_FAILURE() << reason; };
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
  EXPECT_TRUE(reader.read_to_end(visit, corrupt, std::chrono::seconds(5)));  // at the end already: returns at once
  EXPECT_EQ(seen.size(), 3u);
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
      for (int p = 0; p < kPartitions; ++p) rd_kafka_mock_partition_set_leader(broker_.cluster(), t.c_str(), p, leader);
    }
    rd_kafka_mock_coordinator_set(broker_.cluster(), "group", cfg_.kafka.group_id.c_str(), 1);
  }
};

TEST_F(ChangelogOnItsOwnBrokerTest, NoOffsetCommitsBeforeTheChangelogBatchHoldingItsEntryIsAcknowledged) {
  auto running = start();
  ASSERT_TRUE(eventually([&] { return running->assigned.load() && running->ready.load(); }, std::chrono::seconds(90)));
  broker_.set_down(2);
  const auto texts = distinct_texts(20, 5);
  produce("input", texts, 0);
  // Their outputs (broker 1) are acknowledged; their changelog entries (broker 2) are not.
  ASSERT_TRUE(eventually([&] { return running->service->snapshot().produced >= texts.size(); }));
  // A duplicate on the other partition has no output at all: it commits at the
  // next commit, which would also carry partition 0 if its outputs were enough.
  produce("input", {texts[0]}, 1);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= 1; }));
  EXPECT_EQ(running->committed.load(), 1u);
  EXPECT_EQ(running->written.load(), 0u);
  broker_.set_up(2);
  ASSERT_TRUE(eventually([&] { return running->committed.load() >= texts.size() + 1; }, std::chrono::seconds(120)));
  ASSERT_EQ(running->stop(), 0);
  EXPECT_EQ(running->last.unique, texts.size());
  EXPECT_EQ(running->last.duplicate, 1u);
  EXPECT_EQ(running->last.changelog_written, texts.size());
}

// ------------------------------------------------------------ no broker

ChangelogRecord sample_record(std::uint64_t fp, std::int64_t offset, bool with_sketch) {
  ChangelogRecord r;
  r.fingerprint.bits = fp;
  r.time.ms = 1'700'000'000'000 + offset;
  r.topic = "in\"put";
  r.partition = static_cast<std::int32_t>(offset % 3);
  r.offset = offset;
  if (with_sketch) {
    r.has_sketch = true;
    r.bits = 2;
    r.band_bins = 4;
    r.bands = 3;
    r.sketch.sketch.words = {fp * 3, fp * 5};
    r.sketch.band_keys = {fp, fp + 1, fp + 2};
  }
  return r;
}

TEST(ChangelogFormat, ABatchRoundTripsEveryEntryWithTheBatchInstance) {
  ChangelogBatch batch(0x00000000deadbeefULL);
  std::vector<ChangelogRecord> written;
  for (int i = 0; i < 5; ++i) {
    written.push_back(sample_record(0x1000 + static_cast<std::uint64_t>(i), i, i % 2 == 0));
    batch.add(written.back());
  }
  EXPECT_EQ(batch.entries(), 5u);
  auto encoded = batch.take();
  const std::string key(encoded.key);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(encoded.value.substr(0, ChangelogBatch::value_prefix(0xdeadbeef).size()),
            ChangelogBatch::value_prefix(0xdeadbeef));  // what a following reader skips as its own
  EXPECT_EQ(encoded.entries, 5u);
  EXPECT_EQ(encoded.newest.ms, written.back().time.ms);
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(encoded.value, back, &error)) << error;
  ASSERT_EQ(back.size(), written.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].fingerprint, written[i].fingerprint);
    EXPECT_EQ(back[i].time, written[i].time);
    EXPECT_EQ(back[i].topic, written[i].topic);
    EXPECT_EQ(back[i].partition, written[i].partition);
    EXPECT_EQ(back[i].offset, written[i].offset);
    EXPECT_EQ(back[i].instance, 0x00000000deadbeefULL);
    EXPECT_EQ(back[i].has_sketch, written[i].has_sketch);
    if (written[i].has_sketch) {
      EXPECT_EQ(back[i].sketch.sketch, written[i].sketch.sketch);
      EXPECT_EQ(back[i].sketch.band_keys, written[i].sketch.band_keys);
      EXPECT_EQ(back[i].bands, 3);
    }
  }
  // The next batch of the same instance has another key (a compacted topic keeps both).
  batch.add(written[0]);
  EXPECT_NE(batch.take().key, key);
}

TEST(ChangelogFormat, VersionOneRecordsAreStillRead) {
  const ChangelogRecord r = sample_record(0xabc, 42, true);
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(encode_changelog_value(r), back, &error)) << error;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].fingerprint, r.fingerprint);
  EXPECT_EQ(back[0].offset, 42);
  EXPECT_EQ(back[0].sketch.band_keys, r.sketch.band_keys);
}

TEST(ChangelogFormat, ABatchWithOneBadEntryIsRefusedWhole) {
  const std::string good = "{\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0}";
  const std::string instance = "\"instance\":\"0000000000000000\"";
  const std::string bad[] = {
      "{\"v\":2," + instance + ",\"entries\":[" + good + ",{\"fp\":\"xyz\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":1}]}",
      "{\"v\":2," + instance + ",\"entries\":[" + good + ",7]}",
      "{\"v\":2," + instance + ",\"entries\":[]}",
      "{\"v\":2," + instance + ",\"entries\":{}}",
      "{\"v\":2,\"entries\":[" + good + "]}",
      "{\"v\":3," + instance + ",\"entries\":[" + good + "]}",
  };
  for (const auto& value : bad) {
    std::vector<ChangelogRecord> out(1);  // what was there before stays, nothing is appended
    std::string error;
    EXPECT_FALSE(decode_changelog(value, out, &error)) << value;
    EXPECT_EQ(out.size(), 1u) << value;
    EXPECT_FALSE(error.empty()) << value;
  }
  std::vector<ChangelogRecord> out;
  std::string error;
  EXPECT_TRUE(decode_changelog("{\"v\":2," + instance + ",\"entries\":[" + good + "," + good + "]}", out, &error))
      << error;
  EXPECT_EQ(out.size(), 2u);
}

TEST(ChangelogFormat, RoundTripsEveryField) {
  ChangelogRecord r;
  r.fingerprint.bits = 0x0123456789abcdefULL;
  r.time.ms = 1'700'000'000'123;
  r.topic = "news.raw-1";
  r.partition = 7;
  r.offset = (std::int64_t{1} << 48) - 1;
  r.instance = 0xfedcba9876543210ULL;
  r.has_sketch = true;
  r.bits = 2;
  r.band_bins = 4;
  r.bands = 3;
  r.sketch.sketch.words = {0x1111222233334444ULL, 0xaaaabbbbccccddddULL};
  r.sketch.band_keys = {1, 2, 0xffffffffffffffffULL};
  std::string error;
  auto back = decode_changelog_value(encode_changelog_value(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->fingerprint, r.fingerprint);
  EXPECT_EQ(back->time, r.time);
  EXPECT_EQ(back->topic, r.topic);
  EXPECT_EQ(back->partition, r.partition);
  EXPECT_EQ(back->offset, r.offset);
  EXPECT_EQ(back->instance, r.instance);
  EXPECT_TRUE(back->has_sketch);
  EXPECT_EQ(back->bits, 2);
  EXPECT_EQ(back->band_bins, 4);
  EXPECT_EQ(back->bands, 3);
  EXPECT_EQ(back->sketch.sketch, r.sketch.sketch);
  EXPECT_EQ(back->sketch.band_keys, r.sketch.band_keys);
  EXPECT_NE(back->sketch.shingles, 0u);  // the engine indexes it
  EXPECT_EQ(changelog_key(r.fingerprint), "0123456789abcdef");

  r.has_sketch = false;
  back = decode_changelog_value(encode_changelog_value(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_FALSE(back->has_sketch);
  EXPECT_EQ(back->sketch.shingles, 0u);
}

TEST(ChangelogFormat, RefusesMalformedValuesWithAReason) {
  const char* bad[] = {
      "",
      "[]",
      "{\"v\":2,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"xyz\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":-1,\"offset\":0,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":281474976710656,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":3,\"band_bins\":4,\"minhash\":\"00000000000000000000000000000000\",\"bands\":[]}}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":2,\"band_bins\":4,\"minhash\":\"00\",\"bands\":[]}}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":2,\"band_bins\":4,\"minhash\":\"00000000000000000000000000000000\",\"bands\":[1]}}",
  };
  for (const char* value : bad) {
    std::string error;
    EXPECT_FALSE(decode_changelog_value(value, &error)) << value;
    EXPECT_FALSE(error.empty()) << value;
  }
}

/// Texts that share most words with a base text, so some are near-duplicates
/// by SimHash, some only by their sketch, some not at all.
std::vector<std::string> variants(const std::string& base, std::mt19937_64& rng, int count) {
  std::vector<std::string> words;
  for (std::size_t at = 0, next; at < base.size(); at = next + 1) {
    next = base.find(' ', at);
    if (next == std::string::npos) next = base.size();
    words.push_back(base.substr(at, next - at));
  }
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    auto w = words;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % w.size();
      switch (rng() % 3) {
        case 0: w.erase(w.begin() + static_cast<std::ptrdiff_t>(at)); break;
        case 1: w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), "extra"); break;
        default: w[at] = "changed"; break;
      }
      if (w.empty()) w.push_back("word");
    }
    std::string text;
    for (const auto& x : w) text += (text.empty() ? "" : " ") + x;
    out.push_back(text);
  }
  return out;
}

TEST(ChangelogEngine, AWindowRebuiltFromRecordsJudgesExactlyLikeTheOriginal) {
  const std::vector<std::string> bases = {
      "The city council approved a new budget for public schools on Tuesday after a long debate about housing costs "
      "and the future of the old harbour district",
      "Heavy rain flooded several roads in the northern valley overnight and emergency crews rescued drivers trapped "
      "near the river crossing",
      "A small technology company announced record profits this quarter thanks to strong demand for its cloud "
      "storage products in Europe and Asia",
  };
  dedup::DedupOptions options;  // the default: SimHash and the sketch stage
  // `fingerprints_only` is what a changelog without sketches would rebuild.
  dedup::Engine original(options), rebuilt(options), fingerprints_only(options);
  std::int64_t t = 1'700'000'000'000;
  std::uint64_t ref = 1;
  for (const auto& text : bases) {
    const dedup::RecordRef r{ref++};
    const auto verdict = original.process(text, dedup::EventTime{t++}, r);
    ASSERT_EQ(verdict.kind, dedup::VerdictKind::unique);
    ChangelogRecord record;
    record.fingerprint = verdict.fingerprint;
    record.time = dedup::EventTime{t - 1};
    record.topic = "input";
    record.has_sketch = true;
    record.bits = options.sketch.bits;
    record.band_bins = options.sketch.band_bins;
    record.bands = options.sketch.bands;
    record.sketch = original.last_kept_sketch();
    std::string error;
    auto back = decode_changelog_value(encode_changelog_value(record), &error);
    ASSERT_TRUE(back) << error;
    rebuilt.remember(back->fingerprint, back->time, r, back->sketch);
    fingerprints_only.remember(back->fingerprint, back->time, r);
  }
  std::mt19937_64 rng(11);
  int duplicates = 0, differs_without_sketch = 0;
  for (const auto& base : bases) {
    for (const auto& text : variants(base, rng, 40)) {
      const dedup::RecordRef r{ref++};
      const dedup::EventTime time{t++};
      const auto a = original.process(text, time, r);
      const auto b = rebuilt.process(text, time, r);
      const auto c = fingerprints_only.process(text, time, r);
      differs_without_sketch += c.kind != a.kind || c.similarity != a.similarity;
      ASSERT_EQ(a.kind, b.kind) << text;
      ASSERT_EQ(a.match.has_value(), b.match.has_value()) << text;
      if (a.match) {
        ++duplicates;
        EXPECT_EQ(a.match->of, b.match->of) << text;
        EXPECT_EQ(a.match->distance, b.match->distance) << text;
      }
      EXPECT_EQ(a.similarity, b.similarity) << text;
    }
  }
  EXPECT_GT(duplicates, 0);
  // The sketch stage found some of them, and without the records' sketches a
  // rebuilt window would have judged some differently: the sketch data matters.
  EXPECT_GT(original.stats().sketch_matches, 0u);
  EXPECT_GT(differs_without_sketch, 0);
  EXPECT_EQ(original.stats().sketch_matches, rebuilt.stats().sketch_matches);
  // A replayed message is never its own duplicate.
  const auto self = rebuilt.process(bases[0], dedup::EventTime{t++}, dedup::RecordRef{1});
  if (self.match) {
    EXPECT_FALSE(self.match->of == dedup::RecordRef{1});
  }
}

}  // namespace
}  // namespace neardup::stream
