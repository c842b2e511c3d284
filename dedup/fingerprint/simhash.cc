#include "dedup/fingerprint/simhash.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "dedup/kernels/kernels.h"

namespace neardup::dedup {
namespace {

// int32 lanes hold at most this many features of kMaxWeight before they are
// folded into 64-bit totals (65535 * 16384 < 2^31).
constexpr std::size_t kChunk = 16384;

template <bool kUnit>
Fingerprint run(std::span<const std::uint64_t> hashes, std::span<const std::uint32_t> weights) {
  std::array<std::int64_t, 64> totals{};
  std::int64_t total_weight = 0;
  for (std::size_t from = 0; from < hashes.size(); from += kChunk) {
    const std::size_t n = std::min(kChunk, hashes.size() - from);
    alignas(64) std::array<std::int32_t, 64> sums{};
    const std::uint32_t* w = kUnit ? nullptr : weights.data() + from;
    const kernels::Kernels& k = kernels::active();
    (kUnit ? k.simhash_unit : k.simhash_weighted)(hashes.data() + from, w, n, sums.data());
    for (int i = 0; i < 64; ++i) totals[i] += sums[i];
    if (kUnit) {
      total_weight += static_cast<std::int64_t>(n);
    } else {
      for (std::size_t f = 0; f < n; ++f) total_weight += weights[from + f];
    }
  }
  // Counter i = (weight with bit set) - (weight with bit clear) = 2 * totals[i] - total.
  Fingerprint fp;
  for (int i = 0; i < 64; ++i)
    fp.bits |= static_cast<std::uint64_t>(2 * totals[i] > total_weight) << i;
  return fp;
}

}  // namespace

std::uint32_t quantize_weight(double weight) {
  const double scaled = std::nearbyint(weight * kWeightScale);
  if (!(scaled >= 1.0)) return 1;  // also NaN
  if (scaled >= kMaxWeight) return kMaxWeight;
  return static_cast<std::uint32_t>(scaled);
}

Fingerprint simhash(std::span<const std::uint64_t> hashes, std::span<const std::uint32_t> weights) {
  const std::size_t n = std::min(weights.size(), hashes.size());
  return run<false>(hashes.first(n), weights.first(n));
}

Fingerprint simhash(std::span<const std::uint64_t> hashes) { return run<true>(hashes, {}); }

}  // namespace neardup::dedup
