#include "dedup/kernels/sketch_kernels.h"

#include <algorithm>
#include <array>
#include <bit>

#include "dedup/kernels/kernels.h"

#if NEARDUP_X86_KERNELS
#include <immintrin.h>
#endif

namespace neardup::dedup {
namespace {

using detail::kShingleSeed;
using detail::load_word;
using detail::mix_word;

constexpr std::uint32_t kRotationStep = 0x9e3779b9U;           // offset per densification step
constexpr std::uint64_t kDensifySeed = 0x6e6464656e736966ULL;  // "nddensif": the bins' orders
constexpr std::uint32_t kEmpty = detail::kEmptyBin;

constexpr std::uint64_t kMix1 = 0xbf58476d1ce4e5b9ULL;  // splitmix64's multipliers
constexpr std::uint64_t kMix2 = 0x94d049bb133111ebULL;

}  // namespace

namespace kernels {

// The hashes of the 5-byte windows at data[0], data[1], ... data[count - 1]
// into out[0, count): shingle_hash() of each, portable.
void hash_windows(const char* data, std::size_t count, std::uint64_t* out) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << 40) - 1;
  for (std::size_t i = 0; i < count; ++i) out[i] = mix_word(load_word(data + i) & kMask, 5);
}

#if NEARDUP_X86_KERNELS
// GCC 12's _mm512_srli_epi64 passes an intentionally undefined vector as its
// (fully masked-off) merge source, which -Wuninitialized (or, the function
// having external linkage, -Wmaybe-uninitialized) reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// splitmix64's finalizer on 8 lanes (the window's bytes plus the offset in each).
__attribute__((target("avx512f,avx512dq"))) inline __m512i finish_windows_avx512(__m512i x) {
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(kMix1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(kMix2));
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
  x = _mm512_mullo_epi64(x, m1);
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
  x = _mm512_mullo_epi64(x, m2);
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

// The same, 8 windows per step: one byte permutation cuts 8 overlapping 5-byte
// windows out of a 16-byte load, then splitmix64's finalizer runs on 8 lanes.
// Writes out[0, count rounded up to 8); reads data[0, count + 15).
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vbmi"))) void hash_windows_avx512(
    const char* data, std::size_t count, std::uint64_t* out) {
  alignas(64) std::uint8_t order[64];
  for (int lane = 0; lane < 8; ++lane)
    for (int k = 0; k < 8; ++k)
      order[8 * lane + k] = static_cast<std::uint8_t>(lane + (k < 5 ? k : 0));
  const __m512i index = _mm512_load_si512(order);
  const __mmask64 keep = 0x1f1f1f1f1f1f1f1fULL;  // 5 bytes of every lane, the rest zero
  const __m512i offset =
      _mm512_set1_epi64(static_cast<long long>(5 * 0x9e3779b97f4a7c15ULL + kShingleSeed));
  for (std::size_t i = 0; i < count; i += 8) {
    const __m512i bytes =
        _mm512_zextsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)));
    __m512i x = _mm512_add_epi64(_mm512_maskz_permutexvar_epi8(keep, index, bytes), offset);
    _mm512_storeu_si512(out + i, finish_windows_avx512(x));
  }
}

// The same without VBMI: the 16 bytes are copied to every 128-bit lane, where
// vpshufb cuts out that lane's two windows.
__attribute__((target("avx512f,avx512dq,avx512bw"))) void hash_windows_avx512bw(
    const char* data, std::size_t count, std::uint64_t* out) {
  alignas(64) std::int8_t order[64];
  for (int lane = 0; lane < 8; ++lane)
    for (int k = 0; k < 8; ++k)
      order[8 * lane + k] = static_cast<std::int8_t>(k < 5 ? lane + k : -1);
  const __m512i index = _mm512_load_si512(order);
  const __m512i offset =
      _mm512_set1_epi64(static_cast<long long>(5 * 0x9e3779b97f4a7c15ULL + kShingleSeed));
  for (std::size_t i = 0; i < count; i += 8) {
    const __m512i bytes =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)));
    __m512i x = _mm512_add_epi64(_mm512_shuffle_epi8(bytes, index), offset);
    _mm512_storeu_si512(out + i, finish_windows_avx512(x));
  }
}
#pragma GCC diagnostic pop

// The ASCII tokens joined by single spaces, for a text whose bytes are all
// ASCII and whose tokens are exactly its maximal runs of letters and digits
// (NormalizedText::ascii): every such byte is kept, and of each run of other
// bytes only the first one after a token, as a space; so leading separators go
// and a trailing one is dropped after. 64 bytes per step: compare, blend,
// compress. Writes out[0, result + 64); reads text[0, size) only.
__attribute__((target("avx512f,avx512bw,avx512vbmi2"))) std::size_t join_ascii_avx512(
    const char* text, std::size_t size, char* out) {
  const __m512i space = _mm512_set1_epi8(' ');
  std::size_t written = 0;
  std::uint64_t carry = 0;  // the byte before this step is a token byte
  for (std::size_t at = 0; at < size; at += 64) {
    const __mmask64 valid = size - at >= 64 ? ~__mmask64{0} : (__mmask64{1} << (size - at)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(valid, text + at);
    const __mmask64 lower =
        _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('a')), _mm512_set1_epi8(25));
    const __mmask64 upper =
        _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('A')), _mm512_set1_epi8(25));
    const __mmask64 digit =
        _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')), _mm512_set1_epi8(9));
    const std::uint64_t token = static_cast<std::uint64_t>(lower | upper | digit) & valid;
    const std::uint64_t keep = token | (((token << 1) | carry) & valid);
    carry = token >> 63;
    const __m512i joined =
        _mm512_maskz_compress_epi8(keep, _mm512_mask_blend_epi8(token, space, v));
    _mm512_storeu_si512(out + written, joined);
    written += static_cast<std::size_t>(std::popcount(keep));
  }
  if (written != 0 && out[written - 1] == ' ') --written;
  return written;
}
#endif

}  // namespace kernels

namespace {

// Bin i's densification order for `kBins` bins: a fixed pseudo-random
// permutation of all bins (Fisher-Yates driven by splitmix64), the same for
// every text. Row i, then the next row.
template <int kBins>
constexpr std::array<std::uint8_t, kBins * kBins> make_densify_orders() {
  std::array<std::uint8_t, kBins * kBins> orders{};
  for (int i = 0; i < kBins; ++i) {
    std::uint8_t* row = orders.data() + i * kBins;
    for (int k = 0; k < kBins; ++k) row[k] = static_cast<std::uint8_t>(k);
    std::uint64_t state =
        kDensifySeed + static_cast<std::uint64_t>(kBins) * 0x10000 + static_cast<std::uint64_t>(i);
    for (int k = kBins - 1; k > 0; --k) {
      state = mix64(state + 0x9e3779b97f4a7c15ULL);
      const auto r = static_cast<int>(state % static_cast<std::uint64_t>(k + 1));
      std::swap(row[k], row[r]);
    }
  }
  return orders;
}

constexpr auto kOrders16 = make_densify_orders<16>();
constexpr auto kOrders32 = make_densify_orders<32>();
constexpr auto kOrders64 = make_densify_orders<64>();
constexpr auto kOrders128 = make_densify_orders<128>();

}  // namespace

const std::uint8_t* detail::densify_orders(int bins) {
  switch (bins) {
    case 16:
      return kOrders16.data();
    case 32:
      return kOrders32.data();
    case 64:
      return kOrders64.data();
    default:
      return kOrders128.data();
  }
}

void detail::densify(std::uint32_t* minima, int bins) {
  // filled[w] bit k: bin 64w + k holds a minimum. bins is 16, 32, 64 or 128.
  // Each word is gathered in a register: or-ing into filled[i >> 6] in memory
  // would chain every step on the store of the one before.
  std::array<std::uint64_t, 2> filled{};
  for (int w = 0; w * 64 < bins; ++w) {
    const std::uint32_t* word_bins = minima + 64 * w;
    const int count = std::min(64, bins - 64 * w);
    std::uint64_t bits = 0;
#if NEARDUP_X86_KERNELS && defined(__SSE2__)
    // Four bins per compare; movemask gives their "empty" bits.
    const __m128i empty_bin = _mm_set1_epi32(-1);
    for (int i = 0; i < count; i += 4) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(word_bins + i));
      const auto empty4 = static_cast<std::uint64_t>(
          _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, empty_bin))));
      bits |= (~empty4 & 0xF) << i;
    }
#else
    for (int i = 0; i < count; ++i) bits |= std::uint64_t{word_bins[i] != kEmpty} << i;
#endif
    filled[static_cast<std::size_t>(w)] = bits;
  }
  const std::uint64_t all = bins >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bins) - 1;
  const int words = bins > 64 ? 2 : 1;
  std::array<std::uint64_t, 2> empty{~filled[0] & all, words == 2 ? ~filled[1] : 0};
  if ((empty[0] | empty[1]) == 0) return;
  if ((filled[0] | filled[1]) == 0) {
    for (int i = 0; i < bins; ++i)
      minima[i] = kEmpty + static_cast<std::uint32_t>(bins - i) * kRotationStep;
    return;
  }
  // Sources are filled bins, which are never written: the fills are independent.
  const std::uint8_t* orders = densify_orders(bins);
  for (int w = 0; w < words; ++w) {
    for (std::uint64_t e = empty[static_cast<std::size_t>(w)]; e != 0; e &= e - 1) {
      const int i = 64 * w + std::countr_zero(e);
      const std::uint8_t* order =
          orders + static_cast<std::size_t>(i) * static_cast<std::size_t>(bins);
      for (int a = 0;; ++a) {  // ends: some bin is filled, and the order holds every bin
        const int j = order[a];
        if ((filled[static_cast<std::size_t>(j >> 6)] >> (j & 63)) & 1) {
          minima[i] = minima[j] + static_cast<std::uint32_t>(a + 1) * kRotationStep;
          break;
        }
      }
    }
  }
}

#if NEARDUP_X86_KERNELS
// detail::densify with one byte permutation per empty bin: the bytes of
// `filled_bytes` are 0xff for the filled bins, so permuting them by bin i's
// order gives, in one mask, which steps of the walk reach a filled bin; its
// lowest bit is the walk's end. 128 bins (dedup.sketch.bits 1) take the
// portable walk.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void kernels::densify_avx512(
    std::uint32_t* minima, int bins) {
  if (bins > 64) {
    detail::densify(minima, bins);
    return;
  }
  const __m512i empty_bin = _mm512_set1_epi32(-1);
  std::uint64_t filled = 0;
  for (int i = 0; i < bins; i += 16) {  // bins is 16, 32 or 64
    const __m512i v = _mm512_loadu_si512(minima + i);
    filled |= std::uint64_t{_mm512_cmpneq_epi32_mask(v, empty_bin)} << i;
  }
  const std::uint64_t all = bins == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bins) - 1;
  const std::uint64_t empty = ~filled & all;
  if (empty == 0) return;
  if (filled == 0) {
    for (int i = 0; i < bins; ++i)
      minima[i] = kEmpty + static_cast<std::uint32_t>(bins - i) * kRotationStep;
    return;
  }
  const __m512i filled_bytes = _mm512_movm_epi8(filled);
  const std::uint8_t* orders = detail::densify_orders(bins);
  for (std::uint64_t e = empty; e != 0; e &= e - 1) {
    const int i = std::countr_zero(e);
    const std::uint8_t* order =
        orders + static_cast<std::size_t>(i) * static_cast<std::size_t>(bins);
    const __m512i steps = _mm512_maskz_loadu_epi8(all, order);
    // (the zero-masking forms: GCC 12's unmasked ones start from an undefined
    // register, which -Wmaybe-uninitialized reports)
    const std::uint64_t reach =
        _mm512_movepi8_mask(_mm512_maskz_permutexvar_epi8(all, steps, filled_bytes));
    const int a = std::countr_zero(reach);  // < bins: some bin is filled
    minima[i] = minima[order[a]] + static_cast<std::uint32_t>(a + 1) * kRotationStep;
  }
}
#endif

std::size_t detail::sort_low32(const std::uint64_t* hashes, std::size_t count, std::uint32_t* out) {
  // A counting pass over the top 6 bits (the values are uniform, so a bucket
  // holds ~n/64), then an insertion pass that only fixes order inside
  // buckets; ~3x faster than std::sort at n = 40.
  std::array<std::uint32_t, kMaxExactShingles> low;
  std::array<std::uint8_t, 65> starts{};
  for (std::size_t i = 0; i < count; ++i) {
    low[i] = static_cast<std::uint32_t>(hashes[i]);
    ++starts[(low[i] >> 26) + 1];
  }
  for (std::size_t b = 1; b < starts.size(); ++b) starts[b] += starts[b - 1];
  for (std::size_t i = 0; i < count; ++i) out[starts[low[i] >> 26]++] = low[i];
  for (std::size_t i = 1; i < count; ++i) {
    const std::uint32_t v = out[i];
    std::size_t j = i;
    for (; j > 0 && out[j - 1] > v; --j) out[j] = out[j - 1];
    out[j] = v;
  }
  return static_cast<std::size_t>(std::unique(out, out + count) - out);
}

#if NEARDUP_X86_KERNELS
// detail::sort_low32 by rank: each value's place is the number of values
// below it (one compare per 16 values and a popcount), repeats land on the
// same place, and the places taken are compressed in order.
__attribute__((target("avx512f,avx512bw,avx512dq"))) std::size_t kernels::sort_low32_avx512(
    const std::uint64_t* hashes, std::size_t count, std::uint32_t* out) {
  alignas(64) std::uint32_t low[kMaxExactShingles + 16];
  for (std::size_t i = 0; i < count; i += 8) {
    const auto lanes = static_cast<__mmask8>(count - i >= 8 ? 0xff : (1U << (count - i)) - 1);
    const __m512i h = _mm512_maskz_loadu_epi64(lanes, hashes + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(low + i), _mm512_maskz_cvtepi64_epi32(lanes, h));
  }
  const std::size_t regs = (count + 15) / 16;
  __m512i values[kMaxExactShingles / 16];
  __mmask16 valid[kMaxExactShingles / 16];
  for (std::size_t r = 0; r < regs; ++r) {
    const std::size_t left = count - 16 * r;
    valid[r] = static_cast<__mmask16>(left >= 16 ? 0xffff : (1U << left) - 1);
    values[r] = _mm512_maskz_loadu_epi32(valid[r], low + 16 * r);
  }
  alignas(64) std::uint32_t placed[kMaxExactShingles];
  std::uint64_t taken[2] = {0, 0};
  for (std::size_t i = 0; i < count; ++i) {
    const __m512i x = _mm512_set1_epi32(static_cast<int>(low[i]));
    unsigned rank = 0;
    for (std::size_t r = 0; r < regs; ++r)
      rank += static_cast<unsigned>(std::popcount(
          static_cast<unsigned>(_mm512_mask_cmplt_epu32_mask(valid[r], values[r], x))));
    placed[rank] = low[i];
    taken[rank >> 6] |= std::uint64_t{1} << (rank & 63);
  }
  std::size_t n = 0;
  for (std::size_t r = 0; r < regs; ++r) {
    const auto mask = static_cast<__mmask16>(taken[r >> 2] >> ((r & 3) * 16));
    const __m512i p = _mm512_maskz_loadu_epi32(mask, placed + 16 * r);
    _mm512_mask_compressstoreu_epi32(out + n, mask, p);
    n += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(mask)));
  }
  return n;
}
#endif

std::size_t detail::join_ascii_tokens(const NormalizedText& text, char* out) {
  if (text.token_count == 0) return 0;
  std::size_t size = 0;
  for (std::size_t i = 0; i < text.token_count; ++i) {  // each token and a space
    const Token& t = text.tokens[i];
    detail::copy_token(out + size, text.text.data() + t.offset, t.size);
    size += t.size;
    out[size++] = ' ';
  }
  return size - 1;  // no space after the last token
}
}  // namespace neardup::dedup
