#pragma once
// Random ids: what tells one service instance's changelog batches, or one
// judge's takeover, from another's.

#include <cstdint>

namespace neardup::base {

/// 64 bits from std::random_device mixed with the steady clock, so two
/// processes started at once still differ where random_device is weak.
/// Thread-safe; a system call or two per id: not for the per-message path.
std::uint64_t random_id();

}  // namespace neardup::base
