// The window's rebuild from changelog entries without Kafka: the second pass
// (entries past window.rebuild_memory read again, slice by slice) keeps
// exactly the entries that collecting them all keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/sources.h"

namespace neardup::stream {
namespace {

std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A changelog held in memory: per partition, its records in offset order,
// each stamped with its newest entry's time.
struct Log {
  struct Record {
    std::int64_t stamp = std::numeric_limits<std::int64_t>::min();
    std::vector<ChangelogRecord> entries;
  };
  std::vector<std::vector<Record>> partitions;

  // The first offset of each partition stamped at or after `time`, as a
  // broker's ListOffsets answers.
  std::vector<std::size_t> offsets_for_time(std::int64_t time) const {
    std::vector<std::size_t> out;
    for (const auto& records : partitions) {
      std::size_t at = 0;
      while (at < records.size() && records[at].stamp < time) ++at;
      out.push_back(at);
    }
    return out;
  }
};

struct Entry {
  std::int64_t time;
  std::int32_t partition;
  std::int64_t offset;
  std::uint64_t fingerprint;
  auto operator<=>(const Entry&) const = default;
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << "{t " << e.time << ", p " << e.partition << ", o " << e.offset << "}";
}

class WindowReplayTest : public ::testing::Test {
 protected:
  // 4 partitions of 40 records of 50 entries. Times fall in a 1,500 ms
  // range, so many entries share a millisecond (ties at the cut), and a
  // record's entries are not in time order. One entry in 10 is written a
  // second time, 7 records later (a message reprocessed after a crash): in
  // another slice of the second pass. One in 20 has another fingerprint
  // schema: neither pass may use it.
  void SetUp() override {
    cfg_.dedup.window.max_entries = 1000;
    cfg_.dedup.window.duration = std::chrono::hours(24);
    std::uint64_t rng = 11;
    log_.partitions.resize(4);
    for (std::int32_t p = 0; p < 4; ++p) {
      std::vector<std::vector<ChangelogRecord>> again(40 + 7);
      for (int r = 0; r < 40; ++r) {
        Log::Record record;
        for (int e = 0; e < 50; ++e) {
          ChangelogRecord c;
          c.topic = "input";
          c.partition = p;
          c.offset = r * 50 + e;
          c.time.ms = kBase + r * 35 + static_cast<std::int64_t>(next_random(rng) % 100);
          c.fingerprint.bits = next_random(rng);
          c.has_sketch = true;
          c.bits = cfg_.dedup.sketch.bits;
          c.band_bins = cfg_.dedup.sketch.band_bins;
          c.bands = cfg_.dedup.sketch.bands;
          c.scheme = dedup::kSketchScheme;
          c.sketch.shingles = 1;
          c.sketch.sketch.words = {next_random(rng), next_random(rng)};
          for (std::size_t b = 0; b < 3; ++b) c.sketch.band_keys[b] = next_random(rng);
          if (next_random(rng) % 20 == 0) {
            // Written with other fingerprint options: read, never used.
            c.schema = dedup::fingerprint_schema(cfg_.dedup).id ^ 1;
            foreign_.insert(Entry{c.time.ms, p, c.offset, c.fingerprint.bits});
            record.entries.push_back(c);
            continue;
          }
          record.entries.push_back(c);
          if (next_random(rng) % 10 == 0) again[static_cast<std::size_t>(r + 7)].push_back(c);
          all_.insert(Entry{c.time.ms, p, c.offset, c.fingerprint.bits});
          newest_ = std::max(newest_, c.time.ms);
        }
        for (const ChangelogRecord& c : again[static_cast<std::size_t>(r)])
          record.entries.push_back(c);
        for (const ChangelogRecord& c : record.entries)
          record.stamp = std::max(record.stamp, c.time.ms);
        log_.partitions[static_cast<std::size_t>(p)].push_back(std::move(record));
      }
    }
  }

  // What the window keeps by definition: the newest max_entries, by (time,
  // then ref, then fingerprint) as the rebuild orders them.
  std::set<Entry> expected(Sources& sources) const {
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t, Entry>> order;
    for (const Entry& e : all_) {
      const dedup::RecordRef ref = pack_ref(sources.intern("input", e.partition), e.offset);
      order.emplace_back(e.time, ref.value, e.fingerprint, e);
    }
    std::sort(order.rbegin(), order.rend());
    std::set<Entry> out;
    for (std::size_t i = 0; i < std::min(order.size(), cfg_.dedup.window.max_entries); ++i)
      out.insert(std::get<3>(order[i]));
    return out;
  }

  // Rebuilds `engine` from every record, as restore_window does once the
  // records are read: collected in one pass, or in two.
  std::size_t rebuild(dedup::Engine& engine, Sources& sources, std::size_t rebuild_memory,
                      std::size_t* slices) {
    config::Config cfg = cfg_;
    cfg.dedup.window.rebuild_memory = rebuild_memory;
    SchemaCompatibility schemas(dedup::fingerprint_schema(cfg.dedup));
    WindowReplay replay(cfg, sources, schemas);
    for (const auto& records : log_.partitions)
      for (const Log::Record& record : records)
        for (const ChangelogRecord& c : record.entries) replay.add(c);
    *slices = 0;
    if (replay.collected_all()) return replay.finish(engine);
    const std::vector<std::int64_t> starts = replay.second_pass(engine);
    *slices = starts.size();
    std::vector<std::size_t> from = log_.offsets_for_time(starts.at(0));
    for (std::size_t j = 0; j < starts.size(); ++j) {
      std::vector<std::size_t> to;
      for (const auto& records : log_.partitions) to.push_back(records.size());
      if (j + 1 < starts.size()) to = log_.offsets_for_time(starts[j + 1]);
      for (std::size_t p = 0; p < log_.partitions.size(); ++p)
        for (std::size_t at = from[p]; at < to[p]; ++at)
          for (const ChangelogRecord& c : log_.partitions[p][at].entries) replay.add_again(c);
      replay.remember_slice(engine);
      from = to;
    }
    return replay.remembered();
  }

  // The entries `engine` holds, found by deciding each entry's own
  // fingerprint and sketch (a random 64-bit fingerprint is far from every
  // other one): a duplicate is held. The engine has room for 10 times the
  // window, so the unique ones it keeps evict nothing.
  std::set<Entry> held(dedup::Engine& engine, Sources& sources) const {
    std::set<Entry> out, asked;
    std::uint64_t self = ~std::uint64_t{0};
    for (const auto& records : log_.partitions) {
      for (const Log::Record& record : records) {
        for (const ChangelogRecord& c : record.entries) {
          const Entry entry{c.time.ms, c.partition, c.offset, c.fingerprint.bits};
          if (!asked.insert(entry).second) continue;  // (a repeat would find the first ask)
          dedup::Analysis a;
          a.summary.fingerprint = c.fingerprint;
          a.summary.features = 20;
          a.summary.chars = 200;
          a.summary.sketch = c.sketch;
          a.text_bytes = 200;
          engine.key_reposts(a);
          const dedup::Verdict v =
              engine.decide(a, dedup::EventTime{newest_}, dedup::RecordRef{self--});
          if (v.kind == dedup::VerdictKind::duplicate &&
              v.match->of == pack_ref(sources.intern("input", c.partition), c.offset))
            out.insert(entry);
        }
      }
    }
    return out;
  }

  dedup::DedupOptions roomy() const {
    dedup::DedupOptions options = cfg_.dedup;
    options.window.max_entries = 10 * cfg_.dedup.window.max_entries;
    return options;
  }

  static constexpr std::int64_t kBase = 1'764'000'000'000;
  config::Config cfg_;
  Log log_;
  std::set<Entry> all_;      // the entries of this instance's schema
  std::set<Entry> foreign_;  // and of another
  std::int64_t newest_ = 0;
};

TEST_F(WindowReplayTest, TheSecondPassKeepsExactlyWhatCollectingEverythingKeeps) {
  ASSERT_EQ(all_.size() + foreign_.size(), 8000u);
  ASSERT_GT(foreign_.size(), 300u);
  Sources sources;
  const std::set<Entry> want = expected(sources);
  ASSERT_EQ(want.size(), 1000u);

  dedup::Engine whole(roomy());
  std::size_t slices = 0;
  EXPECT_EQ(rebuild(whole, sources, std::size_t{1} << 30, &slices), 1000u);
  EXPECT_EQ(slices, 0u);  // all collected
  EXPECT_EQ(whole.stats().window.entries, 1000u);

  // 4 KiB: 56 entries a slice (72 bytes each with the sketch).
  dedup::Engine sliced(roomy());
  EXPECT_EQ(rebuild(sliced, sources, 4096, &slices), 1000u);
  EXPECT_EQ(slices, 18u);
  EXPECT_EQ(sliced.stats().window.entries, 1000u);

  EXPECT_EQ(held(whole, sources), want);
  EXPECT_EQ(held(sliced, sources), want);
}

// Every entry within window.duration of the newest, when fewer than
// max_entries are: the same in both passes.
TEST_F(WindowReplayTest, TheSecondPassKeepsTheDurationToo) {
  cfg_.dedup.window.max_entries = 100'000;
  cfg_.dedup.window.duration = std::chrono::milliseconds(300);
  Sources sources;
  std::set<Entry> want;
  for (const Entry& e : all_)
    if (e.time >= newest_ - 300) want.insert(e);
  ASSERT_GT(want.size(), 500u);
  ASSERT_LT(want.size(), 8000u);

  std::size_t slices = 0;
  dedup::Engine whole(roomy());
  EXPECT_EQ(rebuild(whole, sources, std::size_t{1} << 30, &slices), want.size());
  EXPECT_EQ(slices, 0u);
  dedup::Engine sliced(roomy());
  EXPECT_EQ(rebuild(sliced, sources, 4096, &slices), want.size());
  EXPECT_GT(slices, 1u);
  EXPECT_EQ(held(whole, sources), want);
  EXPECT_EQ(held(sliced, sources), want);
}

}  // namespace
}  // namespace neardup::stream
