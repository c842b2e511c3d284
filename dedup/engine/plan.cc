#include "dedup/engine/plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "dedup/index/index.h"

namespace neardup::dedup {

namespace {
// Measured by bench/window_bench.cc at 10M entries, k=3: buckets carry ~6% spare
// cells (grown by 1/16, shrunk past 3/16).
constexpr double kEntryBytes = 24;  // fingerprint, event time, ref
}  // namespace

std::uint64_t binomial(int n, int r) {
  if (r < 0 || r > n) return 0;
  r = std::min(r, n - r);
  std::uint64_t result = 1;
  for (int i = 1; i <= r; ++i)
    result = result * static_cast<std::uint64_t>(n - r + i) / static_cast<std::uint64_t>(i);
  return result;
}

LayoutPlan plan_layout(std::size_t window_entries, int max_distance, int blocks) {
  if (window_entries == 0) throw std::invalid_argument("window must hold at least 1 entry");
  const int m = blocks == 0 ? PigeonholeLayout::default_blocks(max_distance) : blocks;
  if (!PigeonholeLayout::supported(m, max_distance)) {
    throw std::invalid_argument("unsupported layout: blocks " + std::to_string(m) + " with k " +
                                std::to_string(max_distance) +
                                " (need 0 <= k <= 8 and k+1 <= blocks <= 16)");
  }
  LayoutPlan plan;
  plan.blocks = m;
  plan.max_distance = max_distance;
  plan.tables = binomial(m, m - max_distance);
  plan.is_default = m == PigeonholeLayout::default_blocks(max_distance);

  // Key widths: m-k near-equal blocks, the wider ones (64 % m of them) taken first or last.
  const int narrow = 64 / m;
  const int wide_blocks = 64 % m;
  const int key_blocks = m - max_distance;
  const int wide_in_max = std::min(key_blocks, wide_blocks);
  const int wide_in_min = std::max(0, key_blocks - (m - wide_blocks));
  plan.min_key_bits = key_blocks * narrow + wide_in_min;
  plan.max_key_bits = key_blocks * narrow + wide_in_max;
  plan.bucket_bits = PigeonholeLayout::bucket_bits_for(plan.max_key_bits, window_entries);
  plan.hashed = plan.bucket_bits < plan.max_key_bits;

  // Sum over tables by their number of wide key blocks w: C(wide, w) * C(narrow blocks, key_blocks
  // - w).
  const double n = static_cast<double>(window_entries);
  double cells = 0;
  double candidates = 0;
  double slot_bytes = 0;
  for (int w = wide_in_min; w <= wide_in_max; ++w) {
    const double count = static_cast<double>(binomial(wide_blocks, w)) *
                         static_cast<double>(binomial(m - wide_blocks, key_blocks - w));
    const int key_bits = key_blocks * narrow + w;
    const int bucket_bits = PigeonholeLayout::bucket_bits_for(key_bits, window_entries);
    const double buckets = std::ldexp(1.0, bucket_bits);
    cells += count * n / buckets;
    candidates += count * n / std::ldexp(1.0, key_bits);
    // Every bucket has a fixed slot sized for its expected load (index.h);
    // the ~1% of buckets that overflow their slot are left out of the estimate.
    slot_bytes += count * buckets *
                  static_cast<double>(CellTables::slot_bytes_for(
                      CellTables::slot_cells_for(bucket_bits, window_entries)));
  }
  plan.cells_per_probe = cells;
  plan.candidates_per_probe = candidates;
  plan.bytes_per_entry = kEntryBytes + slot_bytes / n;
  return plan;
}

std::vector<LayoutPlan> plan_layouts(std::size_t window_entries, int max_distance) {
  std::vector<LayoutPlan> plans;
  for (int m = max_distance + 1; m <= PigeonholeLayout::kMaxBlocks; ++m) {
    if (PigeonholeLayout::supported(m, max_distance))
      plans.push_back(plan_layout(window_entries, max_distance, m));
  }
  if (plans.empty()) plan_layout(window_entries, max_distance, 0);  // throws the explanation
  return plans;
}

}  // namespace neardup::dedup
