#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "dedup/core/cpu.h"
#include "dedup/engine/plan.h"
#include "dedup/index/index.h"

namespace neardup::dedup {
namespace {

std::uint64_t flip_random_bits(std::uint64_t fp, int bits, std::mt19937_64& rng) {
  std::uint64_t mask = 0;
  while (std::popcount(mask) < bits) mask |= 1ULL << (rng() % 64);
  return fp ^ mask;
}

TEST(PigeonholeLayout, SplitsIntoNearEqualBlocksAndOneTablePerCombination) {
  for (int k = 0; k <= PigeonholeLayout::kMaxDistance; ++k) {
    for (int m = k + 1; m <= PigeonholeLayout::kMaxBlocks; ++m) {
      const PigeonholeLayout layout(m, k, 1000);
      ASSERT_EQ(layout.tables(), binomial(m, m - k)) << "m=" << m << " k=" << k;
      int total = 0;
      for (int b = 0; b < m; ++b) {
        EXPECT_GE(layout.block_width(b), 64 / m);
        EXPECT_LE(layout.block_width(b), 64 / m + 1);
        total += layout.block_width(b);
      }
      EXPECT_EQ(total, 64);
      std::set<std::uint64_t> masks;
      for (std::size_t t = 0; t < layout.tables(); ++t) {
        masks.insert(layout.key_mask(t));
        // A key is a union of whole blocks, m-k of them.
        int blocks_in_key = 0;
        for (int b = 0; b < m; ++b) {
          const std::uint64_t block =
              (layout.block_width(b) == 64 ? ~0ULL : ((1ULL << layout.block_width(b)) - 1))
              << layout.block_start(b);
          const std::uint64_t overlap = layout.key_mask(t) & block;
          EXPECT_TRUE(overlap == 0 || overlap == block);
          blocks_in_key += overlap == block;
        }
        EXPECT_EQ(blocks_in_key, m - k);
      }
      EXPECT_EQ(masks.size(), layout.tables()) << "tables must have distinct keys";
    }
  }
}

TEST(PigeonholeLayout, EveryPairWithinKSharesABucketInSomeTable) {
  std::mt19937_64 rng(11);
  for (int k = 0; k <= PigeonholeLayout::kMaxDistance; ++k) {
    for (int m = k + 1; m <= PigeonholeLayout::kMaxBlocks; ++m) {
      const PigeonholeLayout layout(m, k, 1 << 20);
      for (int trial = 0; trial < 20; ++trial) {
        const std::uint64_t a = rng();
        const std::uint64_t b =
            flip_random_bits(a, static_cast<int>(rng() % static_cast<std::uint64_t>(k + 1)), rng);
        bool shared = false;
        for (std::size_t t = 0; t < layout.tables() && !shared; ++t) {
          shared = (a & layout.key_mask(t)) == (b & layout.key_mask(t)) &&
                   layout.bucket(t, a) == layout.bucket(t, b);
        }
        ASSERT_TRUE(shared) << "m=" << m << " k=" << k;
      }
    }
  }
}

TEST(PigeonholeLayout, ResidueDistanceNeverExceedsTheFingerprintDistance) {
  std::mt19937_64 rng(5);
  for (int k = 0; k <= PigeonholeLayout::kMaxDistance; ++k) {
    for (int m = k + 1; m <= PigeonholeLayout::kMaxBlocks; m += 3) {
      const PigeonholeLayout layout(m, k, 4096);
      for (int trial = 0; trial < 50; ++trial) {
        const std::uint64_t a = rng();
        const std::uint64_t b = flip_random_bits(a, static_cast<int>(rng() % 12), rng);
        for (std::size_t t = 0; t < layout.tables(); t += 1 + layout.tables() / 16) {
          EXPECT_LE(std::popcount(layout.residue(t, a) ^ layout.residue(t, b)),
                    std::popcount(a ^ b));
          EXPECT_LT(layout.bucket(t, a), 1U << layout.bucket_bits(t));
        }
      }
    }
  }
}

TEST(PigeonholeLayout, ResidueUsesBitsOutsideTheKeyFirst) {
  const PigeonholeLayout layout(4, 3, 1 << 24);  // table t keyed on the 16-bit block t
  for (std::size_t t = 0; t < layout.tables(); ++t) {
    EXPECT_EQ(layout.key_bits(t), 16);
    EXPECT_FALSE(layout.hashed(t));
    // Flipping key bits leaves the residue alone: the 32 filter bits all come from outside.
    const std::uint64_t a = 0x0123456789abcdefULL;
    EXPECT_EQ(layout.residue(t, a), layout.residue(t, a ^ layout.key_mask(t)));
    EXPECT_NE(layout.residue(t, a), layout.residue(t, a ^ ~layout.key_mask(t)));
  }
}

TEST(PigeonholeLayout, HashesKeysWiderThanTheWindowNeeds) {
  const PigeonholeLayout layout(8, 6, 1 << 20);  // keys of 2 blocks of 8 bits: direct
  EXPECT_FALSE(layout.hashed(0));
  const PigeonholeLayout wide(3, 2, 1 << 20);  // 21-22 bit keys for 2^20 entries: hashed to 2^17
  EXPECT_TRUE(wide.hashed(0));
  EXPECT_EQ(wide.bucket_bits(0), 17);
}

TEST(PigeonholeLayout, RejectsUnsupportedPairs) {
  EXPECT_THROW(PigeonholeLayout(3, 3, 100), std::invalid_argument);
  EXPECT_THROW(PigeonholeLayout(17, 3, 100), std::invalid_argument);
  EXPECT_THROW(PigeonholeLayout(10, 9, 100), std::invalid_argument);
  EXPECT_THROW(PigeonholeLayout(4, -1, 100), std::invalid_argument);
  EXPECT_EQ(PigeonholeLayout(0, 3, 100).blocks(), 4);
}

TEST(CellTables, KeepsFifoOrderAcrossRingWrapAndGrowth) {
  const PigeonholeLayout layout(1, 0, 64);
  CellTables cells(layout);
  CellTables::Bucket& b = cells.bucket(0, 0);
  std::uint32_t next = 0xfffffff0U;  // crosses the 32-bit wrap of the sequence
  std::uint32_t oldest = next;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 7; ++i) cells.push(b, next, next), ++next;
    oldest += 5;  // expire five, keep the rest live
    cells.pop_expired(b, oldest, next - oldest);
    std::vector<std::uint32_t> seen;
    cells.scan(b, 0, 32, [&](std::uint32_t seq) {
      seen.push_back(seq);
      return false;
    });
    ASSERT_EQ(seen.size(), next - oldest);
    for (std::size_t i = 0; i < seen.size(); ++i)
      ASSERT_EQ(seen[i], static_cast<std::uint32_t>(oldest + i));
  }
  EXPECT_EQ(cells.cells(), next - oldest);
  cells.pop_expired(b, next, 0);  // nothing live
  EXPECT_EQ(cells.cells(), 0U);
}

TEST(CellTables, ScanFiltersByResidueDistanceAndStopsWhenAsked) {
  const PigeonholeLayout layout(1, 0, 64);
  CellTables cells(layout);
  CellTables::Bucket& b = cells.bucket(0, 0);
  // 600 cells: more than one filter chunk. Residue i has popcount(i ^ 0) = popcount(i).
  for (std::uint32_t i = 0; i < 600; ++i) cells.push(b, i, i);
  for (int k : {0, 1, 3, 8}) {
    std::vector<std::uint32_t> hits;
    const std::uint32_t examined = cells.scan(b, 0, k, [&](std::uint32_t seq) {
      hits.push_back(seq);
      return false;
    });
    EXPECT_EQ(examined, 600U);
    std::vector<std::uint32_t> want;
    for (std::uint32_t i = 0; i < 600; ++i) {
      if (std::popcount(i) <= k) want.push_back(i);
    }
    EXPECT_EQ(hits, want) << "k=" << k << " filter " << cpu::name(cpu::active());
  }
  // Stop at the first hit past 300 with two bits: 320 (0b101000000) is the 321st cell.
  const std::uint32_t examined = cells.scan(b, 0, 2, [](std::uint32_t seq) { return seq > 300; });
  EXPECT_EQ(examined, 321U);
}

TEST(CellTables, SpillsAFullSlotAndMovesBackWhenItHasShrunk) {
  const PigeonholeLayout layout(4, 3, 1 << 10);
  CellTables cells(layout, 1 << 10);
  const std::uint32_t slot = cells.slot_cells();
  ASSERT_GE(slot, 4U);
  CellTables::Bucket& b = cells.bucket(1, 7);
  const std::size_t empty_bytes = cells.bytes();
  auto contents = [&] {
    std::vector<std::uint32_t> seen;
    cells.scan(b, 0, 32, [&](std::uint32_t seq) {
      seen.push_back(seq);
      return false;
    });
    return seen;
  };
  // Wrap the inline ring first (head moves), then overflow it.
  for (std::uint32_t s = 0; s < slot; ++s) cells.push(b, s, s);
  cells.pop_expired(b, 3, 1000);
  std::uint32_t next = slot;
  while (next < 3 * slot + 3) cells.push(b, next, next), ++next;
  EXPECT_NE(b.spill, 0U);
  const std::size_t spilled_bytes = cells.bytes();
  EXPECT_GE(spilled_bytes, empty_bytes + 8 * (3 * slot + 3 - 3));  // the ring's cells, counted
  std::vector<std::uint32_t> want;
  for (std::uint32_t s = 3; s < next; ++s) want.push_back(s);
  EXPECT_EQ(contents(), want);
  // Expire all but a quarter of a slot: the bucket returns to its slot, in order.
  const std::uint32_t oldest = next - slot / 4;
  cells.pop_expired(b, oldest, 1000);
  EXPECT_EQ(b.spill, 0U);
  EXPECT_LE(cells.bytes(), empty_bytes + 64)
      << "the ring is freed; only its directory entry remains";
  want.assign({});
  for (std::uint32_t s = oldest; s < next; ++s) want.push_back(s);
  EXPECT_EQ(contents(), want);
  EXPECT_EQ(cells.cells(), want.size());
  // And it keeps working inline: push, pop everything.
  cells.push(b, next, next);
  ++next;
  cells.pop_expired(b, next, 0);
  EXPECT_TRUE(contents().empty());
  EXPECT_EQ(cells.cells(), 0U);
}

TEST(CellTables, ASpilledBucketReturnsOnceItFitsWithAnEighthOfTheSlotToSpare) {
  // A full window's buckets hover above half their slot (153 of 185 at 10M
  // entries), so a bucket that spilled must come back well before half.
  const PigeonholeLayout layout(4, 3, 1 << 10);
  CellTables cells(layout, 1 << 12);  // 64 cells a bucket expected
  const std::uint32_t slot = cells.slot_cells();
  ASSERT_GE(slot, 64U);
  CellTables::Bucket& b = cells.bucket(0, 11);
  std::uint32_t next = 0;
  while (next < slot + 1) cells.push(b, next, next), ++next;
  ASSERT_NE(b.spill, 0U);
  const std::uint32_t fits = slot - slot / 8;  // the most cells that move back
  cells.pop_expired(b, next - (fits + 1), 1U << 30);
  EXPECT_NE(b.spill, 0U) << fits + 1 << " cells of a " << slot << "-cell slot stay out";
  cells.pop_expired(b, next - fits, 1U << 30);
  EXPECT_EQ(b.spill, 0U) << fits << " cells of a " << slot << "-cell slot move back";
  EXPECT_EQ(cells.cells(), fits);
}

TEST(CellTables, ReserveGrowsSlotsKeepingLiveCellsInOrder) {
  const PigeonholeLayout layout(4, 3, 1 << 14);
  CellTables cells(layout);
  const std::uint32_t small = cells.slot_cells();
  std::mt19937_64 rng(5);
  std::vector<std::vector<std::uint32_t>> pushed(64);
  for (std::uint32_t seq = 0; seq < 4000; ++seq) {
    const std::uint32_t index = static_cast<std::uint32_t>(rng() % 64);
    cells.push(cells.bucket(2, index), static_cast<std::uint32_t>(rng()), seq);
    pushed[index].push_back(seq);
  }
  const std::size_t small_bytes = cells.bytes();
  cells.reserve(std::size_t{1} << 22, 1000, 3000);  // live: 1000..3999
  EXPECT_GT(cells.slot_cells(), small);
  EXPECT_GT(cells.bytes(), small_bytes);
  EXPECT_EQ(cells.cells(), 3000U);
  for (std::uint32_t index = 0; index < 64; ++index) {
    std::vector<std::uint32_t> seen;
    cells.scan(cells.bucket(2, index), 0, 32, [&](std::uint32_t seq) {
      seen.push_back(seq);
      return false;
    });
    std::vector<std::uint32_t> want;
    for (std::uint32_t seq : pushed[index]) {
      if (seq >= 1000) want.push_back(seq);
    }
    ASSERT_EQ(seen, want) << "bucket " << index;
  }
  const std::uint32_t grown = cells.slot_cells();
  cells.reserve(16, 1000, 3000);  // never shrinks
  EXPECT_EQ(cells.slot_cells(), grown);
}

TEST(CellTables, FiltersOnTheLow24ResidueBits) {
  const PigeonholeLayout layout(1, 0, 64);
  CellTables cells(layout, 64);
  CellTables::Bucket& b = cells.bucket(0, 0);
  // Residues differing from the probe only above bit 24 all pass at k=0; the rest fail or pass by
  // low bits.
  const std::uint32_t probe = 0x00a5c3f1U;
  for (std::uint32_t i = 0; i < 40; ++i)
    cells.push(b, (i << 24) | (i % 2 == 0 ? probe : probe ^ (1U << (i % 24))), i);
  std::vector<std::uint32_t> hits;
  cells.scan(b, probe | 0xff000000U, 0, [&](std::uint32_t seq) {
    hits.push_back(seq);
    return false;
  });
  std::vector<std::uint32_t> want;
  for (std::uint32_t i = 0; i < 40; i += 2) want.push_back(i);
  EXPECT_EQ(hits, want) << cpu::name(cpu::active());
}

TEST(HugeArray, LargeArraysStartOnA2MiBBoundaryAndKeepItAsTheyGrow) {
  // A huge page needs an aligned 2 MiB of address space; growth by moving
  // pages must not shift the array off that boundary.
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  HugeArray<std::uint64_t> array(std::size_t{1} << 19);  // 4 MiB
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(array.begin()) % kHuge, 0U);
  for (std::size_t i = 0; i < array.size(); i += 4096) array[i] = i + 1;
  // Occupy the address space right after it, so growing in place is impossible.
  HugeArray<std::uint64_t> neighbour(std::size_t{1} << 19);
  for (std::size_t size : {std::size_t{3} << 19, std::size_t{5} << 19, std::size_t{11} << 19}) {
    array.grow(size);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(array.begin()) % kHuge, 0U) << size;
    ASSERT_EQ(array.size(), size);
    for (std::size_t i = 0; i < (std::size_t{1} << 19); i += 4096) ASSERT_EQ(array[i], i + 1);
    EXPECT_EQ(array[size - 1], 0U) << "the new part is zero";
  }
  HugeArray<std::uint32_t> small(100);  // under a huge page: any page boundary
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.begin()) % 4096, 0U);
  small.grow(3 << 18);  // 3 MiB: now aligned as a large one
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.begin()) % kHuge, 0U);
}

}  // namespace
}  // namespace neardup::dedup
