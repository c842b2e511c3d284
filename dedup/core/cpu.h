#pragma once
// CPU-specific code: which kernel set (variant) the process runs.
//
// dedup/kernels/ holds hand-written SIMD kernels with a portable twin: the
// index's residue filters, the SimHash bit-sum accumulate and the sketch's
// ASCII token join, 5-byte window hashing, densification and sort. Their
// callers never ask the CPU what it supports: they call the kernels through
// kernels::active() (dedup/kernels/kernels.h), the table of cpu::active(),
// chosen here once per process, so all of them always run the same variant.
//
// The choice is the best variant this build contains and this CPU runs,
// unless the environment variable NEARDUP_CPU names one (portable, popcnt,
// avx2, avx512bw, avx512). Every variant computes the same results bit for
// bit; forcing one is for tests, benchmarks and ruling out a kernel when
// debugging. A NEARDUP_CPU that is unknown or that this CPU (or build)
// cannot run is a startup error: the choice is made while the program loads,
// the message on stderr names the variants available, and the process exits
// with status 2 (a usage error) before main. Falling back silently would let
// a benchmark measure a kernel other than the one it asked for.
//
// Only the kernels above are chosen at run time. The SSE2/SSE4.1 code in
// normalize.cc, sketch.cc and the portable densify (sketch_kernels.cc)
// follows the compiler's target (-march, by default x86-64-v2) and is
// compiled out of a NEARDUP_PORTABLE build.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

// 1 where x86-64 intrinsics and __attribute__((target)) may be compiled: an
// x86-64 GCC or Clang build without NEARDUP_PORTABLE. Every x86-specific line
// of dedup/ sits under `#if NEARDUP_X86_KERNELS`.
#if !defined(NEARDUP_PORTABLE) && (defined(__x86_64__) || defined(_M_X64)) && \
    (defined(__GNUC__) || defined(__clang__))
#define NEARDUP_X86_KERNELS 1
#else
#define NEARDUP_X86_KERNELS 0
#endif

namespace neardup::dedup::cpu {

/// Kernel sets, in order of preference from last to first.
enum class Variant : std::uint8_t {
  portable,  // plain C++: any CPU, any compiler; the reference the others must match
  popcnt,    // x86-64 POPCNT: the index filters count bits in one instruction
  avx2,      // AVX2 and POPCNT (Haswell, Zen 1 and later): the index filters, SimHash
  avx512bw,  // AVX-512 F, BW, DQ, VL (Skylake-X, Cascade Lake): the kernels that need no
             // VBMI, VBMI2 or VPOPCNTDQ
  avx512,    // AVX-512 F, BW, DQ, VBMI, VBMI2, VPOPCNTDQ (Ice Lake, Zen 4 and later): every kernel
};

/// Every variant the code knows, whether or not this build contains it.
inline constexpr std::array<Variant, 5> kVariants{Variant::portable, Variant::popcnt, Variant::avx2,
                                                  Variant::avx512bw, Variant::avx512};

/// "portable", "popcnt", "avx2", "avx512bw", "avx512": the values NEARDUP_CPU accepts.
std::string_view name(Variant variant);

/// Whether this build contains `variant`'s code and this CPU (and OS) runs it.
/// portable is always supported. Thread-safe.
bool supported(Variant variant);

/// Why `variant` is not supported ("this CPU lacks avx512vbmi2, avx512vpopcntdq",
/// "not in this build (NEARDUP_PORTABLE)"), or "" when it is.
std::string missing(Variant variant);

/// The most capable supported variant, from CPU detection alone (NEARDUP_CPU ignored).
Variant best_supported();

/// The variant NEARDUP_CPU=`value` selects. Throws std::invalid_argument, with
/// a message naming the valid and the available choices, for an unknown name
/// or an unsupported variant.
Variant parse_choice(std::string_view value);

namespace detail {
inline constexpr std::uint8_t kUnchosen = 0xff;
extern std::atomic<std::uint8_t> active;  // a Variant, or kUnchosen before the first active()
Variant choose();                         // the first active(): NEARDUP_CPU or best_supported()
}  // namespace detail

/// The variant every kernel runs: NEARDUP_CPU when set and non-empty, else
/// best_supported(). Chosen once (at program load), then one relaxed load per
/// call, cheap enough for a per-chunk table lookup (kernels::active()). Thread-safe.
inline Variant active() {
  const std::uint8_t chosen = detail::active.load(std::memory_order_relaxed);
  if (chosen != detail::kUnchosen) [[likely]]
    return static_cast<Variant>(chosen);
  return detail::choose();
}

}  // namespace neardup::dedup::cpu
