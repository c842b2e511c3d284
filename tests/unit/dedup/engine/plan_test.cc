#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "dedup/engine/plan.h"
#include "dedup/index/index.h"

namespace neardup::dedup {
namespace {

TEST(Plan, BinomialCoefficients) {
  EXPECT_EQ(binomial(4, 1), 4U);
  EXPECT_EQ(binomial(16, 8), 12870U);
  EXPECT_EQ(binomial(5, 0), 1U);
  EXPECT_EQ(binomial(3, 4), 0U);
  EXPECT_EQ(binomial(3, -1), 0U);
}

TEST(Plan, TablesAreCombinationsOfKeyBlocks) {
  for (int k = 0; k <= 8; ++k) {
    const auto plans = plan_layouts(1'000'000, k);
    ASSERT_EQ(plans.size(), static_cast<std::size_t>(16 - k));
    int defaults = 0;
    for (const auto& p : plans) {
      EXPECT_EQ(p.tables, binomial(p.blocks, p.blocks - k));
      EXPECT_EQ(p.max_distance, k);
      // The layout object agrees with the plan on the key widths.
      const PigeonholeLayout layout(p.blocks, k, 1'000'000);
      int lo = 64, hi = 0;
      for (std::size_t t = 0; t < layout.tables(); ++t) {
        lo = std::min(lo, layout.key_bits(t));
        hi = std::max(hi, layout.key_bits(t));
      }
      EXPECT_EQ(p.min_key_bits, lo) << "m=" << p.blocks << " k=" << k;
      EXPECT_EQ(p.max_key_bits, hi) << "m=" << p.blocks << " k=" << k;
      defaults += p.is_default;
    }
    EXPECT_EQ(defaults, 1) << "k=" << k;
  }
}

TEST(Plan, DefaultForK3IsFourTablesOfSixteenBits) {
  const LayoutPlan p = plan_layout(10'000'000, 3, 0);
  EXPECT_EQ(p.blocks, 4);
  EXPECT_EQ(p.tables, 4U);
  EXPECT_EQ(p.min_key_bits, 16);
  EXPECT_FALSE(p.hashed);
  EXPECT_NEAR(p.candidates_per_probe, 10'000'000.0 * 4 / 65536,
              1e-6);  // Manku: N * tables / 2^key bits
  EXPECT_LE(p.bytes_per_entry, 64.0);
  EXPECT_GE(p.bytes_per_entry, 24.0 + 4 * 8);
}

TEST(Plan, CandidatesGrowWithTheWindow) {
  for (int k : {0, 3, 6}) {
    for (int m = k + 1; m <= 16; m += 2) {
      double last = 0;
      for (std::size_t n = 1000; n <= 100'000'000; n *= 10) {
        const LayoutPlan p = plan_layout(n, k, m);
        EXPECT_GT(p.candidates_per_probe, last);
        // Hashed keys share buckets, so a probe scans at least the true candidates
        // (and, since the bucket count grows with the window, not many more).
        EXPECT_GE(p.cells_per_probe, p.candidates_per_probe * 0.999);
        last = p.candidates_per_probe;
      }
    }
  }
}

TEST(Plan, MoreBlocksMeanMoreTablesAndMoreMemory) {
  const auto plans = plan_layouts(10'000'000, 3);
  for (std::size_t i = 1; i < plans.size(); ++i) {
    EXPECT_GT(plans[i].tables, plans[i - 1].tables);
    EXPECT_GT(plans[i].bytes_per_entry, plans[i - 1].bytes_per_entry);
  }
}

TEST(Plan, RejectsUnsupportedInput) {
  EXPECT_THROW(plan_layout(1000, 3, 3), std::invalid_argument);
  EXPECT_THROW(plan_layout(1000, 9, 10), std::invalid_argument);
  EXPECT_THROW(plan_layout(0, 3, 4), std::invalid_argument);
  EXPECT_THROW(plan_layouts(1000, -1), std::invalid_argument);
}

}  // namespace
}  // namespace neardup::dedup
