#include "dedup/kernels.h"

#include "dedup/normalize.h"
#include "dedup/sketch.h"

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
constexpr Kernels kAvx512 = kPortable;
#endif

static_assert(static_cast<int>(cpu::Variant::portable) == 0 &&
                  static_cast<int>(cpu::Variant::popcnt) == 1 &&
                  static_cast<int>(cpu::Variant::avx512) == 2 && cpu::kVariants.size() == 3,
              "kByVariant has one row per cpu::Variant, in its order");

}  // namespace

constinit const std::array<Kernels, cpu::kVariants.size()> kByVariant{kPortable, kPopcnt, kAvx512};

}  // namespace neardup::dedup::kernels
