#include "dedup/kernels/kernels.h"

#include "dedup/kernels/sketch_kernels.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup::kernels {

namespace {

constexpr Kernels kPortable{
    .filter = filter_portable,
    .filter24 = filter24_portable,
    .simhash_unit = accumulate_unit,
    .simhash_weighted = accumulate_weighted,
    .join_ascii = detail::join_ascii_tokens,
    .hash_windows = hash_windows,
    .densify = detail::densify,
    .sort_low32 = detail::sort_low32,
};

#if NEARDUP_X86_KERNELS
constexpr Kernels kPopcnt{
    .filter = filter_popcnt,
    .filter24 = filter24_popcnt,
    .simhash_unit = accumulate_unit,
    .simhash_weighted = accumulate_weighted,
    .join_ascii = detail::join_ascii_tokens,
    .hash_windows = hash_windows,
    .densify = detail::densify,
    .sort_low32 = detail::sort_low32,
};

// AVX2 kernels for the index filters and the SimHash accumulate. The sketch
// kernels stay portable: AVX2 has no 64-bit multiply for hash_windows'
// finalizer (vpmullq is AVX-512DQ), and the join, densify and sort rest on
// VBMI2 compress, VBMI byte permutes and mask registers.
constexpr Kernels kAvx2{
    .filter = filter_avx2,
    .filter24 = filter24_avx2,
    .simhash_unit = accumulate_unit_avx2,
    .simhash_weighted = accumulate_weighted_avx2,
    .join_ascii = detail::join_ascii_tokens,
    .hash_windows = hash_windows,
    .densify = detail::densify,
    .sort_low32 = detail::sort_low32,
};

// AVX-512 without VBMI, VBMI2 and VPOPCNTDQ: avx512's kernels that need none
// of them (SimHash, sort_low32), AVX-512BW filters and window hashing, and
// portable ones for the rest.
constexpr Kernels kAvx512bw{
    .filter = filter_avx512bw,
    .filter24 = filter24_avx512bw,
    .simhash_unit = accumulate_unit_avx512,
    .simhash_weighted = accumulate_weighted_avx512,
    .join_ascii = detail::join_ascii_tokens,
    .hash_windows = hash_windows_avx512bw,
    .densify = detail::densify,
    .sort_low32 = sort_low32_avx512,
};

constexpr Kernels kAvx512{
    .filter = filter_avx512,
    .filter24 = filter24_avx512,
    .simhash_unit = accumulate_unit_avx512,
    .simhash_weighted = accumulate_weighted_avx512,
    .join_ascii = [](const NormalizedText& text, char* out) -> std::size_t {
      return join_ascii_avx512(text.text.data(), text.text.size(), out);
    },
    .hash_windows = hash_windows_avx512,
    .densify = densify_avx512,
    .sort_low32 = sort_low32_avx512,
};
#else
constexpr Kernels kPopcnt = kPortable;
constexpr Kernels kAvx2 = kPortable;
constexpr Kernels kAvx512bw = kPortable;
constexpr Kernels kAvx512 = kPortable;
#endif

static_assert(static_cast<int>(cpu::Variant::portable) == 0 &&
                  static_cast<int>(cpu::Variant::popcnt) == 1 &&
                  static_cast<int>(cpu::Variant::avx2) == 2 &&
                  static_cast<int>(cpu::Variant::avx512bw) == 3 &&
                  static_cast<int>(cpu::Variant::avx512) == 4 && cpu::kVariants.size() == 5,
              "kByVariant has one row per cpu::Variant, in its order");

}  // namespace

constinit const std::array<Kernels, cpu::kVariants.size()> kByVariant{kPortable, kPopcnt, kAvx2,
                                                                      kAvx512bw, kAvx512};

}  // namespace neardup::dedup::kernels
