#include "dedup/sketch.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NEARDUP_SKETCH_AVX512 1
#endif

namespace neardup::dedup {
namespace {

constexpr std::uint64_t kShingleSeed = 0x6e64736b65746368ULL;  // "ndsketch"
constexpr std::uint32_t kRotationStep = 0x9e3779b9U;            // offset per densification step
constexpr std::size_t kPadding = 16;                             // bytes after the buffer
static_assert(kNormalizedPadding >= 16, "copy_token reads 16 bytes at a time");

constexpr std::uint64_t mix64(std::uint64_t x) {
  // splitmix64's finalizer: every input bit reaches every output bit.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;  // kMix1
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;  // kMix2
  x ^= x >> 31;
  return x;
}

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
// bytes after the text, the destination kPadding after its end.
inline void copy_token(char* out, const char* bytes, std::uint32_t size) {
  for (std::uint32_t k = 0; k < size; k += 16) std::memcpy(out + k, bytes + k, 16);
}

constexpr std::uint64_t kMix1 = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kMix2 = 0x94d049bb133111ebULL;

// The hashes of the 5-byte windows at data[0], data[1], ... data[count - 1]
// into out[0, count): shingle_hash() of each, portable.
void hash_windows(const char* data, std::size_t count, std::uint64_t* out) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << 40) - 1;
  for (std::size_t i = 0; i < count; ++i) out[i] = mix_word(load_word(data + i) & kMask, 5);
}

#ifdef NEARDUP_SKETCH_AVX512
// GCC 12's _mm512_srli_epi64 passes an intentionally undefined vector as its
// (fully masked-off) merge source, which -Wuninitialized reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// The same, 8 windows per step: one byte permutation cuts 8 overlapping 5-byte
// windows out of a 16-byte load, then splitmix64's finalizer runs on 8 lanes.
// Writes out[0, count rounded up to 8); reads data[0, count + 15).
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vbmi"))) void hash_windows_avx512(const char* data,
                                                                                       std::size_t count,
                                                                                       std::uint64_t* out) {
  alignas(64) std::uint8_t order[64];
  for (int lane = 0; lane < 8; ++lane)
    for (int k = 0; k < 8; ++k) order[8 * lane + k] = static_cast<std::uint8_t>(lane + (k < 5 ? k : 0));
  const __m512i index = _mm512_load_si512(order);
  const __mmask64 keep = 0x1f1f1f1f1f1f1f1fULL;  // 5 bytes of every lane, the rest zero
  const __m512i offset = _mm512_set1_epi64(static_cast<long long>(5 * 0x9e3779b97f4a7c15ULL + kShingleSeed));
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(kMix1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(kMix2));
  for (std::size_t i = 0; i < count; i += 8) {
    const __m512i bytes = _mm512_zextsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)));
    __m512i x = _mm512_add_epi64(_mm512_maskz_permutexvar_epi8(keep, index, bytes), offset);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
    x = _mm512_mullo_epi64(x, m1);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
    x = _mm512_mullo_epi64(x, m2);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
    _mm512_storeu_si512(out + i, x);
  }
}
#pragma GCC diagnostic pop

const bool kHaveAvx512Vbmi = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
#endif

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
    throw std::invalid_argument("sketch.bits must be 1, 2, 4 or 8, got " + std::to_string(options.bits));
  const int bins = kSketchBits / options.bits;
  if (options.bands < 0 || options.bands > kMaxSketchBands)
    throw std::invalid_argument("sketch.bands must be in 0.." + std::to_string(kMaxSketchBands));
  if (options.band_bins < 1 || options.bands * options.band_bins > bins)
    throw std::invalid_argument("sketch.band_bins must be >= 1 and bands * band_bins <= " + std::to_string(bins) +
                                " (the bins of a " + std::to_string(options.bits) + "-bit sketch)");
  if (!(options.threshold > 0.0 && options.threshold <= 1.0))
    throw std::invalid_argument("sketch.threshold must be in (0, 1]");
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

// Keeps `kBits` bits of every minimum, bin i at bits [i*kBits, (i+1)*kBits).
// A constant width lets the compiler unroll and vectorize the loop.
template <int kBits>
Sketch pack(const std::uint32_t* minima) {
  constexpr int kPerWord = 64 / kBits;
  Sketch sketch;
  for (int w = 0; w < 2; ++w) {
    std::uint64_t word = 0;
    for (int j = 0; j < kPerWord; ++j) {
      // Re-mix before keeping `bits` bits: a minimum's high bits are biased to 0.
      const std::uint32_t code = (minima[w * kPerWord + j] * 0x2545f491U) >> (32 - kBits);
      word |= static_cast<std::uint64_t>(code) << (j * kBits);
    }
    sketch.words[static_cast<std::size_t>(w)] = word;
  }
  return sketch;
}

}  // namespace

Sketcher::Sketcher(const SketchOptions& options)
    : options_(options), bins_(kSketchBits / std::max(options.bits, 1)), bin_shift_(0) {
  validate(options_);
  bin_shift_ = 64 - std::countr_zero(static_cast<unsigned>(bins_));
}

template <class Sink>
void Sketcher::for_each_shingle(const NormalizedText& text, Sink&& sink) {
  if (buffer_.size() < text.text.size() + text.token_count + 2 * kPadding)
    buffer_.resize(text.text.size() + text.token_count + 2 * kPadding);
  char* out = buffer_.data();
  const char* base = text.text.data();
  std::size_t size = 0;

  if (text.ascii) {
    // Every token is an ASCII word: 5-grams over the tokens joined by spaces.
    constexpr std::size_t n = 5;
    if (text.token_count == 0) return;
    for (std::size_t i = 0; i < text.token_count; ++i) {
      const Token& t = text.tokens[i];
      if (size != 0) out[size++] = ' ';
      copy_token(out + size, base + t.offset, t.size);
      size += t.size;
    }
    std::memset(out + size, 0, kPadding);
    if (size <= n) {
      sink(shingle_hash(out, size));
      return;
    }
    const std::size_t count = size - n + 1;
    if (hashes_.size() < count + 8) hashes_.resize(count + 8);
    std::uint64_t* hashes = hashes_.data();
#ifdef NEARDUP_SKETCH_AVX512
    if (kHaveAvx512Vbmi) hash_windows_avx512(out, count, hashes);
    else hash_windows(out, count, hashes);
#else
    hash_windows(out, count, hashes);
#endif
    for (std::size_t i = 0; i < count; ++i) sink(hashes[i]);
    return;
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
  if (chars == 0) return;
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
    if ((static_cast<unsigned char>(data[i]) & 0xC0) != 0x80) starts_.push_back(static_cast<std::uint32_t>(i));
  starts_.push_back(static_cast<std::uint32_t>(size));
  const std::size_t count = starts_.size() - 1;
  if (count <= n) {
    sink(shingle_hash(data, size));
    return;
  }
  for (std::size_t i = 0; i + n <= count; ++i) sink(shingle_hash(data + starts_[i], starts_[i + n] - starts_[i]));
}

SketchResult Sketcher::run(const NormalizedText& text) {
  SketchResult result;
  // kEmpty doubles as "no shingle yet": a true minimum of 0xffffffff is as
  // good as an empty bin (it is replaced by densification, the same for all).
  constexpr std::uint32_t kEmpty = 0xffffffffU;
  const int bins = bins_;
  const int shift = bin_shift_;
  std::uint32_t* minima = minima_.data();
  std::fill_n(minima, bins, kEmpty);
  std::uint32_t shingles = 0;
  for_each_shingle(text, [&](std::uint64_t h) {
    const auto bin = static_cast<std::size_t>(h >> shift);
    const auto value = static_cast<std::uint32_t>(h);
    const std::uint32_t old = minima[bin];
    minima[bin] = value < old ? value : old;  // a select, not a branch: the outcome is a coin flip
    ++shingles;
  });
  result.shingles = shingles;
  if (shingles == 0) return result;

  // Densify: an empty bin takes the next filled bin to its right (circularly),
  // plus kRotationStep per step, so two texts fill the same empty bins alike.
  // Most texts fill every bin: a branch-free count (vectorized) skips the walk.
  int empty = 0;
  for (int i = 0; i < bins; ++i) empty += minima[i] == kEmpty;
  if (empty != 0) {
    int first = 0;
    while (first < bins && minima[first] == kEmpty) ++first;
    if (first == bins) first = 0;  // every minimum was 0xffffffff: nothing to copy from
    int next = first + bins;  // index into the circular continuation
    for (int i = bins - 1; i >= 0; --i) {
      if (minima[i] != kEmpty) {
        next = i;
      } else {
        minima[i] = minima[next >= bins ? next - bins : next] + static_cast<std::uint32_t>(next - i) * kRotationStep;
      }
    }
  }

  switch (options_.bits) {
    case 1: result.sketch = pack<1>(minima); break;
    case 2: result.sketch = pack<2>(minima); break;
    case 4: result.sketch = pack<4>(minima); break;
    default: result.sketch = pack<8>(minima); break;
  }

  const int stride = bins / options_.band_bins;
  for (int band = 0; band < options_.bands; ++band) {
    std::uint64_t key = mix64(kShingleSeed + static_cast<std::uint64_t>(band));
    for (int r = 0; r < options_.band_bins; ++r) key = mix64(key ^ minima[band + r * stride]);
    result.band_keys[static_cast<std::size_t>(band)] = key;
  }
  return result;
}

std::vector<std::uint64_t> Sketcher::shingle_hashes(const NormalizedText& text) {
  std::vector<std::uint64_t> out;
  for_each_shingle(text, [&](std::uint64_t h) { out.push_back(h); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace neardup::dedup
