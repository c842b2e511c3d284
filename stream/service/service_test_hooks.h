#pragma once
// Test-only: what a test may ask of a Service and no deployment sets. Include
// only from tests.

#include <functional>
#include <string_view>

#include "stream/service/service.h"

namespace neardup::stream {

struct ServiceTestHooks {
  /// A crash simulated where this returns true. Points: "before-produce" (a
  /// batch judged, nothing of it produced), "produced" (its outputs produced,
  /// not committed), "commit" (just before offsets or a transaction commit);
  /// and this process's group judge's "judge-decided" (a batch decided and
  /// produced, not committed). run() then returns kSimulatedCrash at once:
  /// nothing is flushed, committed or aborted, queued records are purged.
  std::function<bool(std::string_view point)> crash_at;
};

/// run()'s status after a simulated crash.
inline constexpr int kSimulatedCrash = 137;

}  // namespace neardup::stream
