#include "dedup/core/cpu.h"
#include "dedup/core/cpu_testing.h"

#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

namespace neardup::dedup::cpu {

namespace detail {
constinit std::atomic<std::uint8_t> active{kUnchosen};
}  // namespace detail

namespace {

#if NEARDUP_X86_KERNELS
// What CPUID (and XGETBV, for the AVX-512 register state) report, read once.
// The only place in neardup that asks the CPU.
struct X86Features {
  bool popcnt, avx2, avx512f, avx512bw, avx512dq, avx512vl, avx512vbmi, avx512vbmi2,
      avx512vpopcntdq;
};

const X86Features& x86() {
  static const X86Features features = [] {
    __builtin_cpu_init();
    return X86Features{
        .popcnt = __builtin_cpu_supports("popcnt") != 0,
        .avx2 = __builtin_cpu_supports("avx2") != 0,
        .avx512f = __builtin_cpu_supports("avx512f") != 0,
        .avx512bw = __builtin_cpu_supports("avx512bw") != 0,
        .avx512dq = __builtin_cpu_supports("avx512dq") != 0,
        .avx512vl = __builtin_cpu_supports("avx512vl") != 0,
        .avx512vbmi = __builtin_cpu_supports("avx512vbmi") != 0,
        .avx512vbmi2 = __builtin_cpu_supports("avx512vbmi2") != 0,
        .avx512vpopcntdq = __builtin_cpu_supports("avx512vpopcntdq") != 0,
    };
  }();
  return features;
}

struct Requirement {
  const char* feature;
  bool X86Features::*present;
};
constexpr Requirement kPopcnt[] = {{"popcnt", &X86Features::popcnt}};
// Each list is the union of what its variant's kernels' target attributes
// name, including the kernels it takes from the variants below it.
constexpr Requirement kAvx2[] = {{"popcnt", &X86Features::popcnt}, {"avx2", &X86Features::avx2}};
constexpr Requirement kAvx512bw[] = {
    {"popcnt", &X86Features::popcnt},     {"avx2", &X86Features::avx2},
    {"avx512f", &X86Features::avx512f},   {"avx512bw", &X86Features::avx512bw},
    {"avx512dq", &X86Features::avx512dq}, {"avx512vl", &X86Features::avx512vl},
};
constexpr Requirement kAvx512[] = {
    {"avx512f", &X86Features::avx512f},         {"avx512bw", &X86Features::avx512bw},
    {"avx512dq", &X86Features::avx512dq},       {"avx512vbmi", &X86Features::avx512vbmi},
    {"avx512vbmi2", &X86Features::avx512vbmi2}, {"avx512vpopcntdq", &X86Features::avx512vpopcntdq},
};

std::span<const Requirement> requirements(Variant variant) {
  switch (variant) {
    case Variant::portable:
      return {};
    case Variant::popcnt:
      return kPopcnt;
    case Variant::avx2:
      return kAvx2;
    case Variant::avx512bw:
      return kAvx512bw;
    case Variant::avx512:
      return kAvx512;
  }
  return {};
}
#endif

std::string join_names(bool supported_only) {
  std::string names;
  for (const Variant v : kVariants) {
    if (supported_only && !supported(v)) continue;
    if (!names.empty()) names += ", ";
    names += name(v);
  }
  return names;
}

}  // namespace

std::string_view name(Variant variant) {
  switch (variant) {
    case Variant::portable:
      return "portable";
    case Variant::popcnt:
      return "popcnt";
    case Variant::avx2:
      return "avx2";
    case Variant::avx512bw:
      return "avx512bw";
    case Variant::avx512:
      return "avx512";
  }
  return "unknown";
}

std::string missing(Variant variant) {
  if (variant == Variant::portable) return "";
#if NEARDUP_X86_KERNELS
  std::string lacks;
  for (const Requirement& r : requirements(variant)) {
    if (x86().*r.present) continue;
    lacks += lacks.empty() ? "this CPU lacks " : ", ";
    lacks += r.feature;
  }
  return lacks;
#elif defined(NEARDUP_PORTABLE)
  return "not in this build (NEARDUP_PORTABLE)";
#else
  return "not in this build (x86-64 only)";
#endif
}

bool supported(Variant variant) { return missing(variant).empty(); }

Variant best_supported() {
  for (auto it = kVariants.rbegin(); it != kVariants.rend(); ++it) {
    if (supported(*it)) return *it;
  }
  return Variant::portable;
}

Variant parse_choice(std::string_view value) {
  for (const Variant v : kVariants) {
    if (name(v) != value) continue;
    const std::string lacks = missing(v);
    if (lacks.empty()) return v;
    throw std::invalid_argument("NEARDUP_CPU=" + std::string(value) + ": " + lacks +
                                "; choose one this machine runs: " + join_names(true));
  }
  throw std::invalid_argument("NEARDUP_CPU=" + std::string(value) +
                              ": unknown CPU variant; choose one of " + join_names(false) +
                              " (this machine runs: " + join_names(true) + ")");
}

Variant detail::choose() {
  static const Variant chosen = [] {
    const char* forced = std::getenv("NEARDUP_CPU");
    if (forced == nullptr || *forced == '\0') return best_supported();
    try {
      return parse_choice(forced);
    } catch (const std::invalid_argument& e) {
      // Before main, or inside the first kernel call: no caller to throw to.
      std::fprintf(stderr, "neardup: %s\n", e.what());
      std::exit(2);
    }
  }();
  std::uint8_t unchosen = kUnchosen;  // set_active_for_testing may have come first
  active.compare_exchange_strong(unchosen, static_cast<std::uint8_t>(chosen),
                                 std::memory_order_relaxed);
  return static_cast<Variant>(active.load(std::memory_order_relaxed));
}

void set_active_for_testing(Variant variant) {
  const std::string lacks = missing(variant);
  if (!lacks.empty())
    throw std::invalid_argument("CPU variant " + std::string(name(variant)) + ": " + lacks);
  detail::choose();  // NEARDUP_CPU is still checked once
  detail::active.store(static_cast<std::uint8_t>(variant), std::memory_order_relaxed);
}

namespace {
// Choose while the program loads, so a bad NEARDUP_CPU stops it before it
// reads any input rather than at its first message.
[[maybe_unused]] const Variant kChosenAtLoad = active();
}  // namespace

}  // namespace neardup::dedup::cpu
