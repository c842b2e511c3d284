#pragma once
// Tests only: the test-side seam of dedup/core/cpu.h. Production code never
// includes this header; the variant a process runs is chosen once, from the
// CPU and NEARDUP_CPU.

#include "dedup/core/cpu.h"

namespace neardup::dedup::cpu {

/// Makes every kernel run `variant` from now on, so one process can check each
/// supported variant against portable. Not thread-safe with respect to running
/// kernels: call it while no other thread fingerprints, sketches or probes.
/// Throws std::invalid_argument (with missing()) if unsupported.
void set_active_for_testing(Variant variant);

}  // namespace neardup::dedup::cpu
