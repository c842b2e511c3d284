#include "dedup/fingerprint/sketch.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "dedup/core/types.h"
#include "dedup/kernels/kernels.h"

#if NEARDUP_X86_KERNELS
#include <immintrin.h>
#endif

namespace neardup::dedup {
namespace {

constexpr std::uint64_t kShingleSeed = 0x6e64736b65746368ULL;  // "ndsketch"
constexpr std::uint32_t kRotationStep = 0x9e3779b9U;           // offset per densification step
constexpr std::uint64_t kDensifySeed = 0x6e6464656e736966ULL;  // "nddensif": the bins' orders
constexpr std::size_t kPadding = 16;                           // bytes after the buffer
static_assert(kNormalizedPadding >= 16, "copy_token reads 16 bytes at a time");

constexpr std::uint64_t kMix1 = 0xbf58476d1ce4e5b9ULL;  // splitmix64's multipliers
constexpr std::uint64_t kMix2 = 0x94d049bb133111ebULL;

// One hash for every shingle, so an ASCII 5-gram hashes the same whether the
// text around it is ASCII or not. A shingle of up to 8 bytes (every ASCII
// 5-gram, every CJK 2-gram) is its bytes packed little-endian into a word,
// mixed by one 64x64->128-bit multiply folded onto itself (every input bit
// reaches the bin bits at the top and the 32 value bits at the bottom); longer
// ones go to xxh3. The size enters the seed, so "ab" and "ab\0" differ.
inline std::uint64_t mix_word(std::uint64_t word, std::size_t size) {
  return mix64(word + size * 0x9e3779b97f4a7c15ULL + kShingleSeed);
}

std::uint64_t load_word(const char* bytes) {
  std::uint64_t word;
  std::memcpy(&word, bytes, 8);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return word;
}

// The first `size` (<= 8) bytes, little-endian; the buffer is padded, so 8 bytes are readable.
std::uint64_t low_bytes(const char* bytes, std::size_t size) {
  const std::uint64_t word = load_word(bytes);
  return size >= 8 ? word : word & ((std::uint64_t{1} << (8 * size)) - 1);
}

std::uint64_t shingle_hash(const char* bytes, std::size_t size) {
  if (size <= 8) return mix_word(low_bytes(bytes, size), size);
  return XXH3_64bits_withSeed(bytes, size, kShingleSeed);
}

// Copies a token in 16-byte steps: the source has kNormalizedPadding readable
// bytes after the text, the destination kPadding after its end. Most words fit
// the first step, taken unconditionally: a loop of 1 or 2 trips would
// mispredict its exit.
inline void copy_token(char* out, const char* bytes, std::uint32_t size) {
  std::memcpy(out, bytes, 16);
  for (std::uint32_t k = 16; k < size; k += 16) std::memcpy(out + k, bytes + k, 16);
}

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

std::uint32_t code_points(std::string_view bytes) {
  std::uint32_t n = 0;
  for (const char c : bytes) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

namespace {

// The build targets baseline x86-64 (no POPCNT), where std::popcount becomes a
// call into libgcc; this is a handful of inline operations.
inline int popcount64(std::uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

}  // namespace

void validate(const SketchOptions& options) {
  if (!options.enabled) return;
  if (options.bits != 1 && options.bits != 2 && options.bits != 4 && options.bits != 8)
    throw std::invalid_argument("sketch.bits must be 1, 2, 4 or 8, got " +
                                std::to_string(options.bits));
  const int bins = kSketchBits / options.bits;
  if (options.bands < 0 || options.bands > kMaxSketchBands)
    throw std::invalid_argument("sketch.bands must be in 0.." + std::to_string(kMaxSketchBands));
  if (options.band_bins < 1 || options.bands * options.band_bins > bins)
    throw std::invalid_argument(
        "sketch.band_bins must be >= 1 and bands * band_bins <= " + std::to_string(bins) +
        " (the bins of a " + std::to_string(options.bits) + "-bit sketch)");
  if (!(options.threshold > 0.0 && options.threshold <= 1.0))
    throw std::invalid_argument("sketch.threshold must be in (0, 1]");
  if (!(options.exact_threshold > 0.0 && options.exact_threshold <= 1.0))
    throw std::invalid_argument("sketch.exact_threshold must be in (0, 1]");
}

double estimate_jaccard(const Sketch& a, const Sketch& b, int bits) {
  int differing = 0;
  for (std::size_t w = 0; w < a.words.size(); ++w) {
    std::uint64_t x = a.words[w] ^ b.words[w];
    // Fold every bin's bits into its lowest bit, then count the non-zero bins.
    std::uint64_t lowest = 0xffffffffffffffffULL;
    if (bits >= 2) {
      x |= x >> 1;
      lowest = 0x5555555555555555ULL;
    }
    if (bits >= 4) {
      x |= x >> 2;
      lowest = 0x1111111111111111ULL;
    }
    if (bits >= 8) {
      x |= x >> 4;
      lowest = 0x0101010101010101ULL;
    }
    differing += popcount64(x & lowest);
  }
  const int bins = kSketchBits / bits;
  const double agree = static_cast<double>(bins - differing) / bins;
  const double chance = 1.0 / static_cast<double>(1U << bits);
  return std::clamp((agree - chance) / (1.0 - chance), 0.0, 1.0);
}

namespace {

constexpr std::uint32_t kCodeMix = 0x2545f491U;  // re-mixes a minimum before its top bits are kept

// Keeps `kBits` bits of every minimum, bin i at bits [i*kBits, (i+1)*kBits):
// the top kBits of minimum * kCodeMix (a minimum's own high bits are biased to 0).
template <int kBits>
Sketch pack_codes(const std::uint32_t* minima) {
  Sketch sketch;
#if NEARDUP_X86_KERNELS && defined(__SSE4_1__)
  // 16 bins at a time: multiply, shift, narrow to one code per byte, then fold
  // the bytes' codes together (pmaddubsw/pmaddwd sum codes times powers of two).
  auto code_bytes = [minima](int first) {
    const __m128i mix = _mm_set1_epi32(static_cast<int>(kCodeMix));
    __m128i v[4];
    for (int k = 0; k < 4; ++k) {
      const __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(minima + first + 4 * k));
      v[k] = _mm_srli_epi32(_mm_mullo_epi32(m, mix), 32 - kBits);
    }
    return _mm_packus_epi16(_mm_packus_epi32(v[0], v[1]), _mm_packus_epi32(v[2], v[3]));
  };
  __m128i packed;
  if constexpr (kBits == 8) {
    packed = code_bytes(0);
  } else if constexpr (kBits == 4) {
    const __m128i pairs = _mm_set1_epi16(0x1001);  // bytes 1, 16: c0 + 16 c1
    packed = _mm_packus_epi16(_mm_maddubs_epi16(code_bytes(0), pairs),
                              _mm_maddubs_epi16(code_bytes(16), pairs));
  } else if constexpr (kBits == 2) {
    const __m128i pairs = _mm_set1_epi16(0x0401);      // bytes 1, 4: c0 + 4 c1
    const __m128i quads = _mm_set1_epi32(0x00100001);  // words 1, 16: (c0 + 4 c1) + 16 (c2 + 4 c3)
    __m128i d[4];
    for (int k = 0; k < 4; ++k)
      d[k] = _mm_madd_epi16(_mm_maddubs_epi16(code_bytes(16 * k), pairs), quads);
    packed = _mm_packus_epi16(_mm_packus_epi32(d[0], d[1]), _mm_packus_epi32(d[2], d[3]));
  } else {
    static_assert(kBits == 1);
    alignas(16) std::uint16_t bits[8];
    for (int k = 0; k < 8; ++k)  // code 0/1 moved to each byte's top bit, then one bit per byte
      bits[k] =
          static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_slli_epi16(code_bytes(16 * k), 7)));
    packed = _mm_load_si128(reinterpret_cast<const __m128i*>(bits));
  }
  std::memcpy(sketch.words.data(), &packed, sizeof sketch.words);
  if constexpr (std::endian::native == std::endian::big)
    for (auto& w : sketch.words) w = __builtin_bswap64(w);
#else
  constexpr int kPerWord = 64 / kBits;
  for (int w = 0; w < 2; ++w) {
    std::uint64_t word = 0;
#pragma GCC unroll 64
    for (int j = 0; j < kPerWord; ++j) {
      const std::uint32_t code = (minima[w * kPerWord + j] * kCodeMix) >> (32 - kBits);
      word |= static_cast<std::uint64_t>(code) << (j * kBits);
    }
    sketch.words[static_cast<std::size_t>(w)] = word;
  }
#endif
  return sketch;
}

constexpr std::uint32_t kEmpty = detail::kEmptyBin;
// Band j's key starts from mix64(kShingleSeed + j), folded at compile time.
constexpr std::array<std::uint64_t, kMaxSketchBands> kBandSeeds = [] {
  std::array<std::uint64_t, kMaxSketchBands> seeds{};
  for (std::size_t band = 0; band < seeds.size(); ++band) seeds[band] = mix64(kShingleSeed + band);
  return seeds;
}();
// From this many shingles on, run() keeps four sets of bins. Below, filling
// and merging four sets (4 x 64 bins) would be a large share of the work: a
// 60-character Chinese text has ~59 shingles.
constexpr std::size_t kFourWayShingles = 128;

}  // namespace

Sketch detail::pack(const std::uint32_t* minima, int bits) {
  switch (bits) {
    case 1:
      return pack_codes<1>(minima);
    case 2:
      return pack_codes<2>(minima);
    case 4:
      return pack_codes<4>(minima);
    default:
      return pack_codes<8>(minima);
  }
}

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
    copy_token(out + size, text.text.data() + t.offset, t.size);
    size += t.size;
    out[size++] = ' ';
  }
  return size - 1;  // no space after the last token
}

Sketcher::Sketcher(const SketchOptions& options)
    : options_(options), bins_(kSketchBits / std::max(options.bits, 1)), bin_shift_(0) {
  validate(options_);
  bin_shift_ = 64 - std::countr_zero(static_cast<unsigned>(bins_));
}

std::span<const std::uint64_t> Sketcher::hash_shingles(const NormalizedText& text) {
  // + 64: join_ascii_avx512 stores whole 64-byte steps.
  if (buffer_.size() < text.text.size() + text.token_count + 64 + 2 * kPadding)
    buffer_.resize(text.text.size() + text.token_count + 64 + 2 * kPadding);
  char* out = buffer_.data();
  const char* base = text.text.data();
  std::size_t size = 0;

  if (text.ascii) {
    // Every token is an ASCII word: 5-grams over the tokens joined by spaces.
    constexpr std::size_t n = 5;
    if (text.token_count == 0) return {};
    const kernels::Kernels& k = kernels::active();
    size = k.join_ascii(text, out);
    std::memset(out + size, 0, kPadding);
    if (hashes_.empty()) hashes_.resize(64);
    if (size <= n) {
      hashes_[0] = shingle_hash(out, size);
      return {hashes_.data(), 1};
    }
    const std::size_t count = size - n + 1;
    if (hashes_.size() < count + 8) hashes_.resize(count + 8);
    std::uint64_t* hashes = hashes_.data();
    k.hash_windows(out, count, hashes);
    return {hashes, count};
  }

  // Decide the shingle kind: mostly CJK -> 2-grams without spaces, else 5-grams.
  std::uint32_t chars = 0, cjk_chars = 0;
  for (std::size_t i = 0; i < text.token_count; ++i) {
    const Token& t = text.tokens[i];
    if (t.kind == TokenKind::symbol) continue;
    const std::uint32_t count = code_points(text.text.substr(t.offset, t.size));
    chars += count;
    if (t.kind == TokenKind::cjk) cjk_chars += count;
  }
  if (chars == 0) return {};
  const bool cjk = cjk_chars * 2 > chars;
  const std::size_t n = cjk ? 2 : 5;

  for (std::size_t i = 0; i < text.token_count; ++i) {
    const Token& t = text.tokens[i];
    if (t.kind == TokenKind::symbol) continue;
    if (!cjk && size != 0) out[size++] = ' ';
    copy_token(out + size, base + t.offset, t.size);
    size += t.size;
  }
  std::memset(out + size, 0, kPadding);
  const char* data = out;

  starts_.clear();
  for (std::size_t i = 0; i < size; ++i)
    if ((static_cast<unsigned char>(data[i]) & 0xC0) != 0x80)
      starts_.push_back(static_cast<std::uint32_t>(i));
  starts_.push_back(static_cast<std::uint32_t>(size));
  const std::size_t count = starts_.size() - 1;
  if (hashes_.empty()) hashes_.resize(64);
  if (count <= n) {
    hashes_[0] = shingle_hash(data, size);
    return {hashes_.data(), 1};
  }
  if (hashes_.size() < count + 1 - n) hashes_.resize(count + 1 - n);  // (never shrinks: no refill)
  std::uint64_t* hashes = hashes_.data();
  for (std::size_t i = 0; i + n <= count; ++i)
    hashes[i] = shingle_hash(data + starts_[i], starts_[i + n] - starts_[i]);
  return {hashes, count + 1 - n};
}

SketchResult Sketcher::run(const NormalizedText& text) {
  SketchResult result;
  // kEmpty doubles as "no shingle yet": a true minimum of 0xffffffff is as
  // good as an empty bin (it is replaced by densification, the same for all).
  const int bins = bins_;
  const int shift = bin_shift_;
  std::uint32_t* minima = minima_.data();
  const std::span<const std::uint64_t> hashes = hash_shingles(text);
  last_hashes_ = hashes;
  const auto shingles = static_cast<std::uint32_t>(hashes.size());
  auto keep = [shift](std::uint32_t* bins_of_way, std::uint64_t h) {
    const auto bin = static_cast<std::size_t>(h >> shift);
    const auto value = static_cast<std::uint32_t>(h);
    const std::uint32_t old = bins_of_way[bin];
    bins_of_way[bin] =
        value < old ? value : old;  // a select, not a branch: the outcome is a coin flip
  };
  const std::uint64_t* h = hashes.data();
  if (hashes.size() < kFourWayShingles) {
    std::fill_n(minima, bins, kEmpty);
    for (std::size_t i = 0; i < hashes.size(); ++i) keep(minima, h[i]);
  } else {
    // Four sets of bins, one per hash of every group of four, merged after: a
    // bin's read-modify-write then rarely waits on the store of the hash just
    // before it (same bin), so the loads of consecutive hashes overlap.
    constexpr int kWays = 4;
    std::uint32_t* way[kWays];
    for (int w = 0; w < kWays; ++w) {
      way[w] = ways_.data() + w * kSketchBits;
      std::fill_n(way[w], bins, kEmpty);
    }
    std::size_t i = 0;
    for (; i + kWays <= hashes.size(); i += kWays)
      for (int w = 0; w < kWays; ++w) keep(way[w], h[i + static_cast<std::size_t>(w)]);
    for (; i < hashes.size(); ++i) keep(way[0], h[i]);
    for (int b = 0; b < bins; ++b)
      minima[b] = std::min(std::min(way[0][b], way[1][b]), std::min(way[2][b], way[3][b]));
  }
  result.shingles = shingles;
  if (shingles == 0) return result;

  // Densify: an empty bin takes the first filled bin of its own fixed order
  // of the bins, plus kRotationStep per step, so two texts fill the same empty
  // bins alike and neighbouring empty bins rarely share a source. A bit map of
  // the filled bins answers each step with one load and a shift (the AVX-512
  // kernel: every step of one bin's walk at once).
  kernels::active().densify(minima, bins);

  result.sketch = detail::pack(minima, options_.bits);

  // Band j hashes bins j, j + stride, ...; the bands' hash chains are
  // independent, so they advance side by side (their multiplies overlap).
  const int stride = bins / options_.band_bins;
  const int bands = options_.bands;
  std::array<std::uint64_t, kMaxSketchBands> keys{};  // unused bands stay 0
  std::copy_n(kBandSeeds.begin(), static_cast<std::size_t>(bands), keys.begin());
  for (int r = 0; r < options_.band_bins; ++r)
    for (int band = 0; band < bands; ++band) {
      auto& key = keys[static_cast<std::size_t>(band)];
      key = mix64(key ^ minima[band + r * stride]);
    }
  result.band_keys = keys;
  return result;
}

void ExactShingles::assign(std::span<const std::uint32_t> hashes,
                           const std::array<std::uint64_t, kRecentBands>& band_keys) {
  data_.assign(kHashes + hashes.size(), 0);
  data_[0] = static_cast<std::uint32_t>(hashes.size());
  for (std::size_t b = 0; b < band_keys.size(); ++b) {
    data_[kBandKeys + 2 * b] = static_cast<std::uint32_t>(band_keys[b] >> 32);
    data_[kBandKeys + 2 * b + 1] = static_cast<std::uint32_t>(band_keys[b]);
  }
  std::copy(hashes.begin(), hashes.end(), data_.begin() + kHashes);
}

void ExactShingles::set_keys(std::span<const std::uint32_t> keys) {
  if (empty()) return;
  const std::size_t n = std::min(keys.size(), kMaxMustMatch);
  data_[1] = static_cast<std::uint32_t>(n);
  std::copy_n(keys.begin(), n, data_.begin() + kKeys);
}

void Sketcher::exact_of_last(ExactShingles& out) {
  out.clear();
  // Counted with repeats: a longer text is left out without sorting it.
  if (options_.recent == 0 || last_hashes_.empty() || last_hashes_.size() > kMaxExactShingles)
    return;
  std::array<std::uint32_t, kMaxExactShingles> sorted;
  const std::size_t n =
      kernels::active().sort_low32(last_hashes_.data(), last_hashes_.size(), sorted.data());
  // kRecentBandBins minima per band, from the bins the main bands start with
  // read backwards (the last bins), so the two indexes overlap little. The
  // bands' hash chains are independent: they advance side by side.
  const int bands = std::min(kRecentBands, bins_ / kRecentBandBins);
  std::array<std::uint64_t, kRecentBands> keys{};
  for (int band = 0; band < bands; ++band)
    keys[static_cast<std::size_t>(band)] =
        mix64(kShingleSeed ^ (0x5265636e74ULL + static_cast<std::uint64_t>(band)));
  for (int r = 0; r < kRecentBandBins; ++r)
    for (int band = 0; band < bands; ++band) {
      auto& key = keys[static_cast<std::size_t>(band)];
      key = mix64(key ^ minima_[static_cast<std::size_t>(bins_ - 1 - (band + r * bands))]);
    }
  out.assign(std::span<const std::uint32_t>(sorted.data(), n), keys);
}

double exact_jaccard(const ExactShingles& a, const ExactShingles& b) {
  const auto x = a.hashes(), y = b.hashes();
  std::size_t i = 0, j = 0, common = 0;
  while (i < x.size() && j < y.size()) {
    common += x[i] == y[j];
    const bool step_i = x[i] <= y[j], step_j = y[j] <= x[i];
    i += step_i;
    j += step_j;
  }
  const std::size_t together = x.size() + y.size() - common;
  return together == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(together);
}

double exact_jaccard_at_least(const ExactShingles& a, const ExactShingles& b, double floor) {
  const auto x = a.hashes(), y = b.hashes();
  // J >= floor  <=>  common >= floor * (|x| + |y|) / (1 + floor)
  const double total = static_cast<double>(x.size() + y.size());
  const auto needed = static_cast<std::size_t>(std::max(0.0, floor * total / (1.0 + floor) - 1e-9));
  std::size_t i = 0, j = 0, common = 0;
  while (i < x.size() && j < y.size()) {
    // (the matches still possible: at most the shorter remainder)
    if (common + std::min(x.size() - i, y.size() - j) < needed) return 0.0;
    common += x[i] == y[j];
    const bool step_i = x[i] <= y[j], step_j = y[j] <= x[i];
    i += step_i;
    j += step_j;
  }
  const std::size_t together = x.size() + y.size() - common;
  const double jaccard =
      together == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(together);
  return jaccard >= floor ? jaccard : 0.0;
}

namespace {

// Two name keys (kNameKeyBit) that one typo may turn into each other: lengths at most one apart
// and at most two letters in one set only (two letters swapped: none; one substituted: two).
bool names_near(std::uint32_t x, std::uint32_t y) {
  const int length_x = static_cast<int>((x >> 26) & 31),
            length_y = static_cast<int>((y >> 26) & 31);
  constexpr std::uint32_t kLetters = (1U << 26) - 1;
  return std::abs(length_x - length_y) <= 1 && std::popcount((x ^ y) & kLetters) <= 2;
}

// Whether some key of `names` (name keys) is near none of `others` (name keys).
bool name_alone(std::span<const std::uint32_t> names, std::span<const std::uint32_t> others) {
  for (const std::uint32_t x : names) {
    bool near = false;
    for (const std::uint32_t y : others) near = near || names_near(x, y);
    if (!near) return true;
  }
  return false;
}

}  // namespace

MustMatchDifference must_match_difference(const ExactShingles& a, const ExactShingles& b) {
  const auto x = a.keys(), y = b.keys();
  // hashed keys first (top bit clear), then names
  const auto split = [](std::span<const std::uint32_t> keys) {
    return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), kNameKeyBit) -
                                    keys.begin());
  };
  const std::size_t hashed_x = split(x), hashed_y = split(y);
  bool x_hashed = false, y_hashed = false;
  std::size_t i = 0, j = 0;
  while (i < hashed_x || j < hashed_y) {
    if (j == hashed_y || (i < hashed_x && x[i] < y[j])) {
      x_hashed = true;
      ++i;
    } else if (i == hashed_x || y[j] < x[i]) {
      y_hashed = true;
      ++j;
    } else {
      ++i;
      ++j;
    }
  }
  const auto names_x = x.subspan(hashed_x), names_y = y.subspan(hashed_y);
  const bool x_name = name_alone(names_x, names_y), y_name = name_alone(names_y, names_x);
  MustMatchDifference d;
  if ((x_hashed || x_name) && (y_hashed || y_name)) {
    d.hashed = x_hashed || y_hashed;
    d.names = x_name || y_name;
  }
  return d;
}

bool must_match_conflict(const ExactShingles& a, const ExactShingles& b) {
  const MustMatchDifference d = must_match_difference(a, b);
  return d.hashed || d.names;
}

std::vector<std::uint64_t> Sketcher::shingle_hashes(const NormalizedText& text) {
  std::vector<std::uint64_t> out;
  const auto hashes = hash_shingles(text);
  out.assign(hashes.begin(), hashes.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace neardup::dedup
