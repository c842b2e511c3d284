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

constexpr std::size_t kPadding = 16;  // bytes after the buffer

using detail::copy_token;
using detail::kShingleSeed;
using detail::load_word;
using detail::mix_word;

// The first `size` (<= 8) bytes, little-endian; the buffer is padded, so 8 bytes are readable.
std::uint64_t low_bytes(const char* bytes, std::size_t size) {
  const std::uint64_t word = load_word(bytes);
  return size >= 8 ? word : word & ((std::uint64_t{1} << (8 * size)) - 1);
}

std::uint64_t shingle_hash(const char* bytes, std::size_t size) {
  if (size <= 8) return mix_word(low_bytes(bytes, size), size);
  return XXH3_64bits_withSeed(bytes, size, kShingleSeed);
}

}  // namespace

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

void Sketcher::exact_of_last(ExactShingles& out) {
  out.clear();
  // Counted with repeats: a longer text is left out without sorting it.
  if (options_.recent == 0 || last_hashes_.empty() || last_hashes_.size() > kMaxExactShingles)
    return;
  std::array<std::uint32_t, kMaxExactShingles> sorted;
  const std::size_t count =
      kernels::active().sort_low32(last_hashes_.data(), last_hashes_.size(), sorted.data());
  // Bit 0 is ExactShingles' boilerplate mark: clearing it keeps the order and
  // may make two neighbours equal.
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t h = sorted[i] & ~kBoilerplateShingle;
    if (n == 0 || sorted[n - 1] != h) sorted[n++] = h;
  }
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

std::vector<std::uint64_t> Sketcher::shingle_hashes(const NormalizedText& text) {
  std::vector<std::uint64_t> out;
  const auto hashes = hash_shingles(text);
  out.assign(hashes.begin(), hashes.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace neardup::dedup
