#include "dedup/fingerprint/simhash.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "dedup/kernels/kernels.h"

#if NEARDUP_X86_KERNELS
#include <immintrin.h>
#endif

namespace neardup::dedup {
namespace {

// kBitMasks[b][k] = all ones when bit k of byte b is set: one 32-byte row per
// hash byte turns "add w where the bit is 1" into an AND and an ADD per lane.
struct BitMasks {
  alignas(64) std::int32_t rows[256][8];
  constexpr BitMasks() : rows{} {
    for (int b = 0; b < 256; ++b)
      for (int k = 0; k < 8; ++k) rows[b][k] = (b >> k & 1) ? -1 : 0;
  }
};
constexpr BitMasks kBitMasks;

// int32 lanes hold at most this many features of kMaxWeight before they are
// folded into 64-bit totals (65535 * 16384 < 2^31).
constexpr std::size_t kChunk = 16384;

// sums[i] += weight of every feature with bit i set. The inner loops have a
// fixed trip count of 8 and no branches: the compiler turns each into two SSE2
// (or one AVX2) AND + ADD.
template <bool kUnit>
void accumulate(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                std::int32_t* __restrict sums) {
  for (std::size_t f = 0; f < n; ++f) {
    const std::uint64_t h = hashes[f];
    const std::int32_t w = kUnit ? 1 : static_cast<std::int32_t>(weights[f]);
    for (int j = 0; j < 8; ++j) {
      const std::int32_t* row = kBitMasks.rows[(h >> (8 * j)) & 0xFF];
      for (int k = 0; k < 8; ++k) sums[8 * j + k] += row[k] & w;
    }
  }
}

#if NEARDUP_X86_KERNELS
// AVX2: the same table rows, one 256-bit row per hash byte, with the 64 sums
// held in 8 registers for the whole chunk rather than reloaded per feature.
template <bool kUnit>
__attribute__((target("avx2"))) void accumulate_avx2(const std::uint64_t* hashes,
                                                     const std::uint32_t* weights, std::size_t n,
                                                     std::int32_t* sums) {
  __m256i a[8];
  for (int j = 0; j < 8; ++j)
    a[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + 8 * j));
  for (std::size_t f = 0; f < n; ++f) {
    const std::uint64_t h = hashes[f];
    const __m256i w = _mm256_set1_epi32(kUnit ? 1 : static_cast<int>(weights[f]));
    for (int j = 0; j < 8; ++j) {
      const __m256i row = _mm256_load_si256(
          reinterpret_cast<const __m256i*>(kBitMasks.rows[(h >> (8 * j)) & 0xFF]));
      // A row is -1 where the bit is set: subtracting it adds the unit weight.
      a[j] = kUnit ? _mm256_sub_epi32(a[j], row) : _mm256_add_epi32(a[j], _mm256_and_si256(row, w));
    }
  }
  for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + 8 * j), a[j]);
}

// AVX-512: the hash itself is the lane mask. Four masked adds of 16 lanes
// per feature, instead of 8 table rows; same integer sums, so the same bits.
template <bool kUnit>
__attribute__((target("avx512f"))) void accumulate_avx512(const std::uint64_t* hashes,
                                                          const std::uint32_t* weights,
                                                          std::size_t n, std::int32_t* sums) {
  __m512i a0 = _mm512_loadu_si512(sums), a1 = _mm512_loadu_si512(sums + 16);
  __m512i a2 = _mm512_loadu_si512(sums + 32), a3 = _mm512_loadu_si512(sums + 48);
  const __m512i one = _mm512_set1_epi32(1);
  for (std::size_t f = 0; f < n; ++f) {
    const std::uint64_t h = hashes[f];
    const __m512i w = kUnit ? one : _mm512_set1_epi32(static_cast<int>(weights[f]));
    a0 = _mm512_mask_add_epi32(a0, static_cast<__mmask16>(h), a0, w);
    a1 = _mm512_mask_add_epi32(a1, static_cast<__mmask16>(h >> 16), a1, w);
    a2 = _mm512_mask_add_epi32(a2, static_cast<__mmask16>(h >> 32), a2, w);
    a3 = _mm512_mask_add_epi32(a3, static_cast<__mmask16>(h >> 48), a3, w);
  }
  _mm512_storeu_si512(sums, a0);
  _mm512_storeu_si512(sums + 16, a1);
  _mm512_storeu_si512(sums + 32, a2);
  _mm512_storeu_si512(sums + 48, a3);
}
#endif

}  // namespace

// The table's entries (kernels.cc), one per kind of weights.
namespace kernels {
void accumulate_unit(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                     std::int32_t* sums) {
  accumulate<true>(hashes, weights, n, sums);
}
void accumulate_weighted(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                         std::int32_t* sums) {
  accumulate<false>(hashes, weights, n, sums);
}
#if NEARDUP_X86_KERNELS
__attribute__((target("avx2"))) void accumulate_unit_avx2(const std::uint64_t* hashes,
                                                          const std::uint32_t* weights,
                                                          std::size_t n, std::int32_t* sums) {
  accumulate_avx2<true>(hashes, weights, n, sums);
}
__attribute__((target("avx2"))) void accumulate_weighted_avx2(const std::uint64_t* hashes,
                                                              const std::uint32_t* weights,
                                                              std::size_t n, std::int32_t* sums) {
  accumulate_avx2<false>(hashes, weights, n, sums);
}
__attribute__((target("avx512f"))) void accumulate_unit_avx512(const std::uint64_t* hashes,
                                                               const std::uint32_t* weights,
                                                               std::size_t n, std::int32_t* sums) {
  accumulate_avx512<true>(hashes, weights, n, sums);
}
__attribute__((target("avx512f"))) void accumulate_weighted_avx512(const std::uint64_t* hashes,
                                                                   const std::uint32_t* weights,
                                                                   std::size_t n,
                                                                   std::int32_t* sums) {
  accumulate_avx512<false>(hashes, weights, n, sums);
}
#endif
}  // namespace kernels

namespace {

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
