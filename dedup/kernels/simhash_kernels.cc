#include <array>
#include <cstddef>
#include <cstdint>

#include "dedup/kernels/kernels.h"

#if NEARDUP_X86_KERNELS
#include <immintrin.h>
#endif

// The SimHash accumulate (dedup/fingerprint/simhash.cc calls it through
// kernels::active()): the portable kernel and its AVX2 and AVX-512 twins.

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

}  // namespace neardup::dedup
