#pragma once
// Weighted SimHash (Charikar 2002) over 64-bit feature hashes.
//
// Bit i of the fingerprint is 1 when the features whose hash has bit i set
// weigh more than those whose hash has it clear. Weights are fixed point
// (kWeightScale units per 1.0) and summed in integers: integer sums are exact
// and independent of summation order and SIMD width, so every replica on every
// CPU computes the same bits for the same text (a float sum would not
// guarantee that, and replicas share one window through the changelog).

#include <cstdint>
#include <span>

#include "dedup/core/types.h"

namespace neardup::dedup {

/// Fixed-point units per weight of 1.0. Weights are clamped to [1, kMaxWeight].
inline constexpr std::uint32_t kWeightScale = 64;
inline constexpr std::uint32_t kMaxWeight = 65535;

/// Quantizes a real weight to fixed point, clamped to [1, kMaxWeight].
std::uint32_t quantize_weight(double weight);

/// Weighted SimHash; `weights[i]` (fixed point, <= kMaxWeight) belongs to
/// `hashes[i]`. Sizes must match. Branch-free, vectorized. O(n * 64 / lanes).
Fingerprint simhash(std::span<const std::uint64_t> hashes, std::span<const std::uint32_t> weights);

/// Every feature weighs the same (the classic unweighted SimHash).
Fingerprint simhash(std::span<const std::uint64_t> hashes);

}  // namespace neardup::dedup
