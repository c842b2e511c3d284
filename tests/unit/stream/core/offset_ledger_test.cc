// The offset ledger: commits only past fully acknowledged inputs, whatever the
// order of acknowledgements, revocations and offsets that go backwards. No broker.
#include "stream/core/offset_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace neardup::stream {
namespace {

using Commits = std::vector<OffsetLedger::Commit>;

std::map<std::uint32_t, std::int64_t> as_map(const Commits& commits) {
  std::map<std::uint32_t, std::int64_t> out;
  for (const auto& c : commits) out[c.source.value] = c.offset.value;
  return out;
}

TEST(OffsetLedger, CommitsOnlyTheAcknowledgedPrefix) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  std::vector<Ticket> t;
  for (std::int64_t offset = 10; offset < 14; ++offset) {
    t.push_back(ledger.add(SourceIndex(0), Offset(offset), 0).ticket);
    ledger.expect(t.back());
  }
  EXPECT_TRUE(ledger.take_commits().empty());
  ledger.acknowledge(t[1]);  // 11 done, 10 not: nothing yet
  EXPECT_TRUE(ledger.take_commits().empty());
  ledger.acknowledge(t[0]);
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 12}}));
  EXPECT_TRUE(ledger.take_commits().empty());  // unchanged: not offered twice
  ledger.acknowledge(t[3]);
  ledger.acknowledge(t[2]);
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 14}}));
  EXPECT_EQ(ledger.finished(), 4u);
  EXPECT_EQ(ledger.pending(SourceIndex(0)), 0u);
}

TEST(OffsetLedger, AnInputWithoutOutputsFinishesAtOnce) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(3));
  ledger.add(SourceIndex(3), Offset(0), 0);  // e.g. a dropped duplicate
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{3, 1}}));
}

TEST(OffsetLedger, WaitsForEveryOutputOfAnInput) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  const Ticket t = ledger.add(SourceIndex(0), Offset(5), 1234).ticket;
  ledger.expect(t);  // the output record
  ledger.expect(t);  // its changelog entry
  EXPECT_EQ(ledger.acknowledge(t), std::nullopt);
  EXPECT_TRUE(ledger.take_commits().empty());
  EXPECT_EQ(ledger.acknowledge(t),
            std::optional<std::int64_t>(1234));    // the last one gives the timestamp
  EXPECT_EQ(ledger.acknowledge(t), std::nullopt);  // nothing left: ignored
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 6}}));
}

TEST(OffsetLedger, OffsetsThatGoBackAreReportedAndCommitsContinue) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  for (std::int64_t offset = 2440; offset < 2448; ++offset)
    ledger.add(SourceIndex(0), Offset(offset), 0);
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 2448}}));
  // The topic was recreated: offsets restart at 0.
  const OffsetLedger::Added first = ledger.add(SourceIndex(0), Offset(0), 0);
  EXPECT_TRUE(first.jumped_back);
  EXPECT_EQ(first.previous_offset, Offset(2447));
  const OffsetLedger::Added second = ledger.add(SourceIndex(0), Offset(1), 0);
  EXPECT_FALSE(second.jumped_back);
  EXPECT_EQ(ledger.jumps_back(), 1u);
  // The lower offset is committed (compared with the higher one, it would stop the commits).
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 2}}));
  EXPECT_EQ(ledger.committed_offset(SourceIndex(0)), Offset(2));
}

TEST(OffsetLedger, RepeatedOffsetsAfterAJumpAreDistinctEntries) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  const Ticket old5 = ledger.add(SourceIndex(0), Offset(5), 0).ticket;
  ledger.expect(old5);
  const Ticket new5 =
      ledger.add(SourceIndex(0), Offset(5), 0).ticket;  // same offset, another message
  ledger.expect(new5);
  ledger.acknowledge(new5);
  EXPECT_TRUE(ledger.take_commits().empty());  // the first 5 is still in flight
  ledger.acknowledge(old5);
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 6}}));
}

TEST(OffsetLedger, LateAcknowledgementsOfARevokedAssignmentAreIgnored) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  const Ticket before = ledger.add(SourceIndex(0), Offset(7), 0).ticket;
  ledger.expect(before);
  ledger.revoke(SourceIndex(0));
  EXPECT_TRUE(ledger.take_commits().empty());  // not assigned
  ledger.assign(SourceIndex(0));
  const Ticket after = ledger.add(SourceIndex(0), Offset(7), 0).ticket;  // read again
  ledger.expect(after);
  ledger.acknowledge(before);  // the old output's report arrives now
  EXPECT_TRUE(ledger.take_commits().empty());
  EXPECT_EQ(ledger.pending(SourceIndex(0)), 1u);
  ledger.acknowledge(after);
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{0, 8}}));
}

TEST(OffsetLedger, AFailedCommitIsOfferedAgain) {
  OffsetLedger ledger;
  ledger.assign(SourceIndex(1));
  ledger.assign(SourceIndex(2));
  ledger.add(SourceIndex(1), Offset(0), 0);
  ledger.add(SourceIndex(2), Offset(0), 0);
  const std::vector<SourceIndex> only{SourceIndex(2)};
  EXPECT_EQ(as_map(ledger.take_commits(&only)), (std::map<std::uint32_t, std::int64_t>{{2, 1}}));
  ledger.commit_failed(SourceIndex(2));
  EXPECT_EQ(as_map(ledger.take_commits()), (std::map<std::uint32_t, std::int64_t>{{1, 1}, {2, 1}}));
  EXPECT_TRUE(ledger.take_commits().empty());
}

TEST(OffsetLedger, TicketsPackIntoAnOpaque) {
  const Ticket t{SourceIndex(0xfffe), (std::uint64_t{1} << 48) - 1};
  EXPECT_EQ(Ticket::unpack(t.pack()), t);
  EXPECT_EQ(Ticket::unpack(Ticket{SourceIndex(3), 17}.pack()), (Ticket{SourceIndex(3), 17}));
}

// A randomized run against a model that keeps every entry of the current
// assignment and recomputes the committable offset from scratch.
TEST(OffsetLedger, MatchesASimpleModelUnderRandomOperations) {
  constexpr std::uint32_t kSources = 3;
  struct ModelEntry {
    Ticket ticket;
    std::int64_t offset;
    int outstanding;
  };
  struct ModelPartition {
    bool assigned = false;
    std::vector<ModelEntry> entries;
    std::int64_t last_read = -1;
    std::int64_t committed = -1;
  };
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    OffsetLedger ledger;
    ModelPartition model[kSources];
    std::vector<Ticket> stale;  // tickets of revoked assignments
    std::uint64_t jumps = 0;
    auto model_prefix = [&](const ModelPartition& p) {
      std::int64_t next = -1;
      for (const auto& e : p.entries) {
        if (e.outstanding != 0) break;
        next = e.offset + 1;
      }
      return next;
    };
    for (int step = 0; step < 4000; ++step) {
      const SourceIndex source(static_cast<std::uint32_t>(rng() % kSources));
      ModelPartition& m = model[source.value];
      const unsigned op = rng() % 100;
      if (!m.assigned || op < 2) {
        for (const auto& e : m.entries) {
          if (e.outstanding) stale.push_back(e.ticket);
        }
        m = ModelPartition{};
        m.assigned = true;
        ledger.assign(source);
      } else if (op < 4) {
        for (const auto& e : m.entries) {
          if (e.outstanding) stale.push_back(e.ticket);
        }
        m = ModelPartition{};
        ledger.revoke(source);
        EXPECT_FALSE(ledger.assigned(source));
      } else if (op < 40) {
        std::int64_t offset =
            m.last_read + 1 +
            static_cast<std::int64_t>(rng() % 3);  // gaps: compaction, transactions
        const bool back = m.last_read > 0 && rng() % 25 == 0;
        if (back)
          offset = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(m.last_read + 1));
        const OffsetLedger::Added added = ledger.add(source, Offset(offset), 1000 + step);
        EXPECT_EQ(added.jumped_back, m.last_read >= 0 && offset <= m.last_read)
            << "seed " << seed << " step " << step;
        if (added.jumped_back) ++jumps;
        m.last_read = offset;
        m.entries.push_back(ModelEntry{added.ticket, offset, 0});
        const int outputs = static_cast<int>(rng() % 3);
        for (int i = 0; i < outputs; ++i) ledger.expect(added.ticket);
        m.entries.back().outstanding = outputs;
      } else if (op < 75) {
        std::vector<std::size_t> open;
        for (std::size_t i = 0; i < m.entries.size(); ++i) {
          if (m.entries[i].outstanding) open.push_back(i);
        }
        if (open.empty()) continue;
        ModelEntry& e = m.entries[open[rng() % open.size()]];
        const auto ts = ledger.acknowledge(e.ticket);
        --e.outstanding;
        EXPECT_EQ(ts.has_value(), e.outstanding == 0) << "seed " << seed << " step " << step;
      } else if (op < 80) {
        if (stale.empty()) continue;
        EXPECT_EQ(ledger.acknowledge(stale[rng() % stale.size()]), std::nullopt);
      } else {
        const Commits commits = ledger.take_commits();
        std::map<std::uint32_t, std::int64_t> expected;
        for (std::uint32_t s = 0; s < kSources; ++s) {
          if (!model[s].assigned) continue;
          const std::int64_t next = model_prefix(model[s]);
          if (next >= 0 && next != model[s].committed) expected[s] = next;
        }
        ASSERT_EQ(as_map(commits), expected) << "seed " << seed << " step " << step;
        for (const auto& [s, offset] : expected) model[s].committed = offset;
        if (!commits.empty() && rng() % 10 == 0) {
          const auto failed = commits[rng() % commits.size()].source;
          ledger.commit_failed(failed);
          model[failed.value].committed = -1;
        }
      }
    }
    EXPECT_EQ(ledger.jumps_back(), jumps);
  }
}

TEST(OffsetLedger, KeepsOrderAndOffsetsWhileItsRingWrapsAndGrows) {
  // Entries are added and finished in waves, so the ring wraps around and
  // then grows while wrapped; every entry keeps its offset and the commits
  // follow the acknowledged prefix exactly.
  OffsetLedger ledger;
  ledger.assign(SourceIndex(0));
  std::vector<Ticket> open;
  std::int64_t next = 0;
  std::int64_t acked_up_to = 0;  // every offset below is acknowledged
  for (int wave = 1; wave <= 12; ++wave) {
    for (int i = 0; i < 40 * wave; ++i) {  // more each wave: the ring grows while wrapped
      open.push_back(ledger.add(SourceIndex(0), Offset(next++), 0).ticket);
      ledger.expect(open.back());
    }
    for (std::size_t i = 0; i < open.size(); ++i)
      ASSERT_EQ(ledger.offset_of(open[i]),
                std::optional<Offset>(Offset(acked_up_to + static_cast<std::int64_t>(i))));
    // Acknowledge the older two thirds, newest first: nothing finishes until the oldest does.
    const std::size_t done = open.size() * 2 / 3;
    for (std::size_t i = done; i-- > 0;) ledger.acknowledge(open[i]);
    acked_up_to += static_cast<std::int64_t>(done);
    EXPECT_EQ(as_map(ledger.take_commits()),
              (std::map<std::uint32_t, std::int64_t>{{0, acked_up_to}}));
    EXPECT_EQ(ledger.pending(SourceIndex(0)), open.size() - done);
    EXPECT_EQ(ledger.offset_of(open[done - 1]), std::nullopt);  // finished and gone
    open.erase(open.begin(), open.begin() + static_cast<std::ptrdiff_t>(done));
  }
}

}  // namespace
}  // namespace neardup::stream
