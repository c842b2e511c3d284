#pragma once
// Table-layout planning for the pigeonhole index (Manku, Jain, Das Sarma 2007,
// section 3): for a window of N random fingerprints and max distance k, how many
// tables each block count m needs, how many cells a probe examines, and how many
// bytes an entry costs. Pure math, no allocation of the tables themselves.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::dedup {

struct LayoutPlan {
  int blocks = 0;            ///< m
  int max_distance = 0;      ///< k
  std::uint64_t tables = 0;  ///< C(m, m-k)
  int min_key_bits = 0;      ///< key width of the narrowest table (m-k blocks)
  int max_key_bits = 0;
  int bucket_bits = 0;  ///< log2 buckets per table (widest table)
  bool hashed = false;  ///< keys wider than the bucket count are hashed
  double candidates_per_probe =
      0;  ///< Manku's figure: sum over tables of N / 2^key bits (true key matches)
  double cells_per_probe =
      0;  ///< expected cells examined: sum over tables of N / 2^min(key, bucket bits)
  double bytes_per_entry = 0;  ///< estimated at a full window of N entries
  bool is_default = false;     ///< the layout IndexOptions::blocks == 0 picks
};

/// n choose r; 0 when r < 0 or r > n.
std::uint64_t binomial(int n, int r);

/// The plan for one layout. Throws std::invalid_argument when (blocks, k) is
/// unsupported (0 <= k <= 8, k+1 <= m <= 16) or window_entries == 0.
LayoutPlan plan_layout(std::size_t window_entries, int max_distance, int blocks);

/// Every supported layout for k: m = k+1..16, in increasing m.
std::vector<LayoutPlan> plan_layouts(std::size_t window_entries, int max_distance);

}  // namespace neardup::dedup
