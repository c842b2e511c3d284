#pragma once
// Test-only: what a test may do to a Service and no deployment does. Include
// only from tests (service.cc defines it).

#include <memory>

#include "stream/core/crash_points_testing.h"
#include "stream/service/service.h"

namespace neardup::stream {

struct ServiceTesting {
  /// `service` and its group judge crash where `points` says
  /// (CrashPoints): run() then returns kSimulatedCrash at once, nothing is
  /// flushed, committed or aborted, queued records are purged. Call before run().
  static void set_crash_points(Service& service, std::shared_ptr<const CrashPoints> points);
};

/// run()'s status after a simulated crash.
inline constexpr int kSimulatedCrash = 137;

}  // namespace neardup::stream
