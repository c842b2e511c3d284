#include <algorithm>
#include <bit>
#include <cstdint>

#include "dedup/kernels/kernels.h"

#if NEARDUP_X86_KERNELS
#include <immintrin.h>
#endif

// The index's residue filters (CellTables, dedup/index/index.h, calls them through
// kernels::active()): the portable kernels and their POPCNT, AVX2 and AVX-512 twins.

namespace neardup::dedup {

namespace kernels {

std::uint32_t filter_portable(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue,
                              int k, std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t x = res[i] ^ residue;  // SWAR popcount: no libgcc call on a baseline x86-64 build
    x -= (x >> 1) & 0x55555555U;
    x = (x & 0x33333333U) + ((x >> 2) & 0x33333333U);
    x = (((x + (x >> 4)) & 0x0f0f0f0fU) * 0x01010101U) >> 24;
    hits[count] = static_cast<std::uint16_t>(i);
    count += static_cast<int>(x) <= k;
  }
  return count;
}

std::uint32_t filter24_portable(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                                int k, std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t x = residue24(res + 3 * i) ^ residue;
    x -= (x >> 1) & 0x55555555U;
    x = (x & 0x33333333U) + ((x >> 2) & 0x33333333U);
    x = (((x + (x >> 4)) & 0x0f0f0f0fU) * 0x01010101U) >> 24;
    hits[count] = static_cast<std::uint16_t>(i);
    count += static_cast<int>(x) <= k;
  }
  return count;
}

#if NEARDUP_X86_KERNELS
__attribute__((target("popcnt"))) std::uint32_t filter24_popcnt(const std::uint8_t* res,
                                                                std::uint32_t n,
                                                                std::uint32_t residue, int k,
                                                                std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    hits[count] = static_cast<std::uint16_t>(i);
    count += __builtin_popcount(residue24(res + 3 * i) ^ residue) <= k;
  }
  return count;
}

// 16 packed residues (48 bytes) per step: a masked load (no read past the end),
// a byte permute that widens each 3-byte residue to a 32-bit lane, one popcount.
__attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vpopcntdq"))) std::uint32_t
filter24_avx512(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue, int k,
                std::uint16_t* hits) {
  alignas(64) std::uint8_t spread[64];
  for (int j = 0; j < 64; ++j)
    spread[j] = static_cast<std::uint8_t>(j % 4 == 3 ? 0 : 3 * (j / 4) + j % 4);
  const __m512i index = _mm512_load_si512(spread);
  const __m512i r = _mm512_set1_epi32(static_cast<int>(residue));
  const __m512i limit = _mm512_set1_epi32(k);
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; i += 16) {
    const std::uint32_t m = n - i >= 16 ? 16 : n - i;
    const __mmask64 bytes = (std::uint64_t{1} << (3 * m)) - 1;
    const __mmask16 lanes = static_cast<__mmask16>((1U << m) - 1);
    const __m512i packed = _mm512_maskz_loadu_epi8(bytes, res + 3 * i);
    const __m512i wide = _mm512_maskz_permutexvar_epi8(0x7777777777777777ULL, index, packed);
    unsigned mask =
        _mm512_mask_cmple_epu32_mask(lanes, _mm512_popcnt_epi32(_mm512_xor_si512(wide, r)), limit);
    while (mask != 0) {
      hits[count++] =
          static_cast<std::uint16_t>(i + static_cast<std::uint32_t>(std::countr_zero(mask)));
      mask &= mask - 1;
    }
  }
  return count;
}

namespace {

// Appends to hits the indices base + j of the set bits j of mask, low to high.
inline std::uint32_t add_hits(unsigned mask, std::uint32_t base, std::uint16_t* hits,
                              std::uint32_t count) {
  while (mask != 0) {
    hits[count++] =
        static_cast<std::uint16_t>(base + static_cast<std::uint32_t>(std::countr_zero(mask)));
    mask &= mask - 1;
  }
  return count;
}

// Per 32-bit lane of x: all ones where popcount(x) <= k (k + 1 in kplus1).
// Without VPOPCNTDQ: a 16-entry table of nibble counts (vpshufb) gives each
// byte's count, two multiply-adds sum the 4 bytes of a lane.
__attribute__((target("avx2"))) inline __m256i popcount_within_avx2(__m256i x, __m256i kplus1) {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2,
                                         1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i bytes = _mm256_add_epi8(
      _mm256_shuffle_epi8(table, _mm256_and_si256(x, nibble)),
      _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble)));
  const __m256i pairs = _mm256_maddubs_epi16(bytes, _mm256_set1_epi8(1));
  const __m256i lanes = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  return _mm256_cmpgt_epi32(kplus1, lanes);
}

// The bits j of the result: popcount(lane j of v ^ r) <= k, for 8 lanes.
__attribute__((target("avx2"))) inline unsigned within_avx2(__m256i v, __m256i r, __m256i kplus1) {
  return static_cast<unsigned>(_mm256_movemask_ps(
      _mm256_castsi256_ps(popcount_within_avx2(_mm256_xor_si256(v, r), kplus1))));
}

// The same for the 8 packed residues at p[0, 24): two 16-byte loads (bytes
// 0-15 and 8-23, so nothing past the residues is read) put residues 0-3 and
// 4-7 in the two 128-bit halves, where vpshufb widens each to a 32-bit lane.
__attribute__((target("avx2"))) inline unsigned within24_avx2(const std::uint8_t* p, __m256i r,
                                                              __m256i kplus1) {
  const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                          4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1);
  const __m256i packed = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + 8),
                                             reinterpret_cast<const __m128i*>(p));
  return within_avx2(_mm256_shuffle_epi8(packed, spread), r, kplus1);
}

__attribute__((target("avx512f,avx512bw"))) inline __mmask16 popcount_within_avx512bw(
    __m512i x, __m512i limit, __mmask16 lanes) {
  // The nibble counts 0 1 1 2 1 2 2 3 1 2 2 3 2 3 3 4 in every 128-bit lane.
  const __m512i table = _mm512_set4_epi32(0x04030302, 0x03020201, 0x03020201, 0x02010100);
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i bytes = _mm512_add_epi8(
      _mm512_shuffle_epi8(table, _mm512_and_si512(x, nibble)),
      _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(x, 4), nibble)));
  const __m512i pairs = _mm512_maddubs_epi16(bytes, _mm512_set1_epi8(1));
  const __m512i sums = _mm512_madd_epi16(pairs, _mm512_set1_epi16(1));
  return _mm512_mask_cmple_epu32_mask(lanes, sums, limit);
}

}  // namespace

// 16 packed residues (48 bytes) per step, 8 to a vector (within24_avx2).
// The last, partial step is copied into a zeroed buffer first: the kernel
// reads res[0, 3n) only.
__attribute__((target("avx2"))) std::uint32_t filter24_avx2(const std::uint8_t* res,
                                                            std::uint32_t n, std::uint32_t residue,
                                                            int k, std::uint16_t* hits) {
  const __m256i r = _mm256_set1_epi32(static_cast<int>(residue));
  const __m256i kplus1 = _mm256_set1_epi32(k + 1);
  std::uint32_t count = 0;
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const unsigned mask =
        within24_avx2(res + 3 * i, r, kplus1) | within24_avx2(res + 3 * i + 24, r, kplus1) << 8;
    if (mask != 0) [[unlikely]]
      count = add_hits(mask, i, hits, count);
  }
  for (; i < n; i += 8) {
    const std::uint32_t m = n - i >= 8 ? 8 : n - i;
    unsigned mask;
    if (m == 8) {
      mask = within24_avx2(res + 3 * i, r, kplus1);
    } else {
      alignas(32) std::uint8_t tail[32] = {};
      std::copy_n(res + 3 * i, 3 * m, tail);
      mask = within24_avx2(tail, r, kplus1) & ((1U << m) - 1);
    }
    count = add_hits(mask, i, hits, count);
  }
  return count;
}

// 16 packed residues (48 bytes) per step, as filter24_avx512 but without VBMI
// and VPOPCNTDQ: a dword permute gives each 128-bit lane the 12 bytes of its 4
// residues, vpshufb widens them, and the nibble table counts the bits. The
// masked load reads res[0, 3n) only.
__attribute__((target("avx512f,avx512bw"))) std::uint32_t filter24_avx512bw(
    const std::uint8_t* res, std::uint32_t n, std::uint32_t residue, int k, std::uint16_t* hits) {
  const __m512i dwords = _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0);
  // Bytes 0-2, 3-5, 6-8, 9-11 of each 128-bit lane to its 4 lanes, zero above.
  const __m512i spread =
      _mm512_set4_epi32(static_cast<int>(0x800b0a09), static_cast<int>(0x80080706),
                        static_cast<int>(0x80050403), static_cast<int>(0x80020100));
  const __m512i r = _mm512_set1_epi32(static_cast<int>(residue));
  const __m512i limit = _mm512_set1_epi32(k);
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; i += 16) {
    const std::uint32_t m = n - i >= 16 ? 16 : n - i;
    const __mmask64 bytes = (std::uint64_t{1} << (3 * m)) - 1;
    const __mmask16 lanes = static_cast<__mmask16>((1U << m) - 1);
    const __m512i packed = _mm512_maskz_loadu_epi8(bytes, res + 3 * i);
    const __m512i wide =
        _mm512_shuffle_epi8(_mm512_maskz_permutexvar_epi32(0xffff, dwords, packed), spread);
    const unsigned mask =
        popcount_within_avx512bw(_mm512_xor_si512(wide, r), limit, k < 0 ? 0 : lanes);
    if (mask != 0) count = add_hits(mask, i, hits, count);
  }
  return count;
}

__attribute__((target("popcnt"))) std::uint32_t filter_popcnt(const std::uint32_t* res,
                                                              std::uint32_t n,
                                                              std::uint32_t residue, int k,
                                                              std::uint16_t* hits) {
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    hits[count] = static_cast<std::uint16_t>(i);
    count += __builtin_popcount(res[i] ^ residue) <= k;
  }
  return count;
}

__attribute__((target("avx512f,avx512vpopcntdq"))) std::uint32_t filter_avx512(
    const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k, std::uint16_t* hits) {
  const __m512i r = _mm512_set1_epi32(static_cast<int>(residue));
  const __m512i limit = _mm512_set1_epi32(k);
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; i += 16) {
    const __mmask16 lanes =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1U << (n - i)) - 1);
    const __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi32(lanes, res + i), r);
    const unsigned mask = _mm512_mask_cmple_epu32_mask(lanes, _mm512_popcnt_epi32(x), limit);
    if (mask != 0) count = add_hits(mask, i, hits, count);
  }
  return count;
}

// 16 residues per step in two vectors, with the nibble-table popcount;
// vpmaskmovd loads the last, partial step (masked-off lanes are not read).
__attribute__((target("avx2"))) std::uint32_t filter_avx2(const std::uint32_t* res, std::uint32_t n,
                                                          std::uint32_t residue, int k,
                                                          std::uint16_t* hits) {
  const __m256i r = _mm256_set1_epi32(static_cast<int>(residue));
  const __m256i kplus1 = _mm256_set1_epi32(k + 1);
  std::uint32_t count = 0;
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const unsigned mask =
        within_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(res + i)), r, kplus1) |
        within_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(res + i + 8)), r, kplus1)
            << 8;
    if (mask != 0) [[unlikely]]
      count = add_hits(mask, i, hits, count);
  }
  for (; i < n; i += 8) {
    const std::uint32_t m = n - i >= 8 ? 8 : n - i;
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(m)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i v = _mm256_maskload_epi32(reinterpret_cast<const int*>(res + i), lanes);
    count = add_hits(within_avx2(v, r, kplus1) & ((1U << m) - 1), i, hits, count);
  }
  return count;
}

__attribute__((target("avx512f,avx512bw"))) std::uint32_t filter_avx512bw(
    const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k, std::uint16_t* hits) {
  const __m512i r = _mm512_set1_epi32(static_cast<int>(residue));
  const __m512i limit = _mm512_set1_epi32(k);
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < n; i += 16) {
    const __mmask16 lanes =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1U << (n - i)) - 1);
    const __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi32(lanes, res + i), r);
    const unsigned mask = popcount_within_avx512bw(x, limit, k < 0 ? 0 : lanes);
    if (mask != 0) count = add_hits(mask, i, hits, count);
  }
  return count;
}
#endif

}  // namespace kernels

}  // namespace neardup::dedup
