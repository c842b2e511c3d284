#pragma once
// The sketch's kernels and what they share with the sketch (dedup/fingerprint/sketch.h):
// the shingle hash of a 5-byte window, the token copy, densification and the
// sort of an exact shingle set. kernels.cc lists the portable ones and their
// x86 twins (sketch_kernels.cc) in its table; the sketch calls them through
// kernels::active() and never includes the x86 ones.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dedup/core/types.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup {

/// The most shingles of a text whose exact shingle set is kept
/// (ExactShingles, dedup/fingerprint/sketch.h).
inline constexpr std::size_t kMaxExactShingles = 128;

namespace detail {

/// A bin no shingle fell in.
inline constexpr std::uint32_t kEmptyBin = 0xffffffffU;
/// One-permutation MinHash densification with independent sources
/// (Shrivastava 2017, "optimal densification"), in place over `bins` (16, 32,
/// 64 or 128) minima: every empty bin i (kEmptyBin) takes the first filled bin
/// j of its own order (densify_orders(bins) row i, attempt a = 0, 1, ...), as
/// minima[j] + (a + 1) * 0x9e3779b9. With no filled bin, bin i becomes
/// kEmptyBin + (bins - i) * 0x9e3779b9. Two texts with the same filled bins
/// fill an empty bin alike; unlike the rotation rule (the next filled bin to
/// the right), neighbouring empty bins rarely share a source, so a short
/// text's bins, and the LSH bands made of them, stay close to independent.
/// Exposed for tests.
void densify(std::uint32_t* minima, int bins);
/// The distinct low 32 bits of hashes[0, count) (count <= kMaxExactShingles),
/// ascending, into out; returns how many. Exposed for tests.
std::size_t sort_low32(const std::uint64_t* hashes, std::size_t count, std::uint32_t* out);
/// The densification orders for `bins` (16, 32, 64 or 128): bins * bins bytes,
/// row i a fixed pseudo-random permutation of 0 .. bins - 1. Exposed for tests.
const std::uint8_t* densify_orders(int bins);
/// The tokens of `text` joined by single spaces into `out`, which must hold
/// text.text.size() + text.token_count + 16 bytes; returns the joined size.
/// The portable ASCII join (CPUs without AVX-512 VBMI2 use it). Exposed for tests.
std::size_t join_ascii_tokens(const NormalizedText& text, char* out);

/// The seed of every shingle hash ("ndsketch").
inline constexpr std::uint64_t kShingleSeed = 0x6e64736b65746368ULL;
static_assert(kNormalizedPadding >= 16, "copy_token reads 16 bytes at a time");

// One hash for every shingle, so an ASCII 5-gram hashes the same whether the
// text around it is ASCII or not. A shingle of up to 8 bytes (every ASCII
// 5-gram, every CJK 2-gram) is its bytes packed little-endian into a word,
// mixed by one 64x64->128-bit multiply folded onto itself (every input bit
// reaches the bin bits at the top and the 32 value bits at the bottom); longer
// ones go to xxh3. The size enters the seed, so "ab" and "ab\0" differ.
inline std::uint64_t mix_word(std::uint64_t word, std::size_t size) {
  return mix64(word + size * 0x9e3779b97f4a7c15ULL + kShingleSeed);
}

/// The 8 bytes at `bytes`, little-endian.
inline std::uint64_t load_word(const char* bytes) {
  std::uint64_t word;
  std::memcpy(&word, bytes, 8);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return word;
}

// Copies a token in 16-byte steps: the source has kNormalizedPadding readable
// bytes after the text, the destination at least 16 after its end. Most words fit
// the first step, taken unconditionally: a loop of 1 or 2 trips would
// mispredict its exit.
inline void copy_token(char* out, const char* bytes, std::uint32_t size) {
  std::memcpy(out, bytes, 16);
  for (std::uint32_t k = 16; k < size; k += 16) std::memcpy(out + k, bytes + k, 16);
}

}  // namespace detail

}  // namespace neardup::dedup
