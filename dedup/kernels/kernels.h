#pragma once
// The one place that picks CPU kernels: one table of function pointers per
// variant (dedup/core/cpu.h), and `kernels::active()`, the table of the variant
// the process runs. The index, SimHash and sketch call their kernels through
// it and never ask which variant is active, so all of them always run the same
// one, and a new variant is one more row in kernels.cc.
//
// The kernels themselves live here too, below their callers (dedup/index/,
// dedup/fingerprint/), which include this header and never the other way:
// index_filters.cc, simhash_kernels.cc and sketch_kernels.cc, in namespace
// `kernels` (the sketch's portable ones in `detail`, sketch_kernels.h). They
// are declared here only so that kernels.cc can list them. Call them through
// active().

#include <array>
#include <cstddef>
#include <cstdint>

#include "dedup/core/cpu.h"

namespace neardup::dedup {

struct NormalizedText;

namespace kernels {

/// One variant's kernels. Every variant computes the same results bit for bit
/// (tests/unit/dedup/kernels/kernels_test.cc); the buffer contracts below are the widest any
/// variant needs, and callers size their buffers for them.
struct Kernels {
  /// Index residue filter: writes the indices i < n (n <= 256) with
  /// popcount(res[i] ^ residue) <= k to hits; returns how many.
  std::uint32_t (*filter)(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                          std::uint16_t* hits);
  /// The same over packed 3-byte residues; may read one byte past the last.
  std::uint32_t (*filter24)(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue, int k,
                            std::uint16_t* hits);
  /// SimHash: sums[i] += the weight of every feature with bit i set, for n
  /// (<= 16384) features; unit weights ignore `weights` (null is fine).
  void (*simhash_unit)(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                       std::int32_t* sums);
  void (*simhash_weighted)(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                           std::int32_t* sums);
  /// Sketch: the ASCII tokens of `text` (text.ascii, at least one token) joined
  /// by single spaces into out; returns the size. Writes out[0, size + 64).
  std::size_t (*join_ascii)(const NormalizedText& text, char* out);
  /// Sketch: the hashes of the 5-byte windows at data[0, count) into out.
  /// Writes out[0, count rounded up to 8); reads data[0, count + 15).
  void (*hash_windows)(const char* data, std::size_t count, std::uint64_t* out);
  /// Sketch: fills the empty bins of minima[0, bins) (bins 16, 32, 64 or
  /// 128) as detail::densify defines it.
  void (*densify)(std::uint32_t* minima, int bins);
  /// Recent texts: the distinct low 32 bits of hashes[0, count) (count <=
  /// kMaxExactShingles), ascending, into out; returns how many.
  std::size_t (*sort_low32)(const std::uint64_t* hashes, std::size_t count, std::uint32_t* out);
};

/// Every variant's kernels, indexed by cpu::Variant. A variant this build does
/// not contain holds the portable kernels (cpu::supported() never picks it).
extern const std::array<Kernels, cpu::kVariants.size()> kByVariant;

/// The kernels of cpu::active() (NEARDUP_CPU, or the best this CPU runs):
/// one relaxed load and an index. Thread-safe.
inline const Kernels& active() { return kByVariant[static_cast<std::size_t>(cpu::active())]; }

/// The packed 3-byte residue at `p` (little-endian), as filter24 reads it.
inline std::uint32_t residue24(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16;
}

// ---- the kernels the table lists --------------------------------------------

// index_filters.cc
std::uint32_t filter_portable(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue,
                              int k, std::uint16_t* hits);
std::uint32_t filter24_portable(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                                int k, std::uint16_t* hits);
// simhash_kernels.cc
void accumulate_unit(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                     std::int32_t* sums);
void accumulate_weighted(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                         std::int32_t* sums);
// sketch_kernels.cc
void hash_windows(const char* data, std::size_t count, std::uint64_t* out);

#if NEARDUP_X86_KERNELS
std::uint32_t filter_popcnt(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                            std::uint16_t* hits);
std::uint32_t filter24_popcnt(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                              int k, std::uint16_t* hits);
std::uint32_t filter_avx2(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                          std::uint16_t* hits);
std::uint32_t filter24_avx2(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue, int k,
                            std::uint16_t* hits);
std::uint32_t filter_avx512bw(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue,
                              int k, std::uint16_t* hits);
std::uint32_t filter24_avx512bw(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                                int k, std::uint16_t* hits);
void accumulate_unit_avx2(const std::uint64_t* hashes, const std::uint32_t* weights, std::size_t n,
                          std::int32_t* sums);
void accumulate_weighted_avx2(const std::uint64_t* hashes, const std::uint32_t* weights,
                              std::size_t n, std::int32_t* sums);
std::uint32_t filter_avx512(const std::uint32_t* res, std::uint32_t n, std::uint32_t residue, int k,
                            std::uint16_t* hits);
std::uint32_t filter24_avx512(const std::uint8_t* res, std::uint32_t n, std::uint32_t residue,
                              int k, std::uint16_t* hits);
void accumulate_unit_avx512(const std::uint64_t* hashes, const std::uint32_t* weights,
                            std::size_t n, std::int32_t* sums);
void accumulate_weighted_avx512(const std::uint64_t* hashes, const std::uint32_t* weights,
                                std::size_t n, std::int32_t* sums);
std::size_t join_ascii_avx512(const char* text, std::size_t size, char* out);
void hash_windows_avx512bw(const char* data, std::size_t count, std::uint64_t* out);
void hash_windows_avx512(const char* data, std::size_t count, std::uint64_t* out);
void densify_avx512(std::uint32_t* minima, int bins);
std::size_t sort_low32_avx512(const std::uint64_t* hashes, std::size_t count, std::uint32_t* out);
#endif

}  // namespace kernels
}  // namespace neardup::dedup
