#pragma once
// Simulated crashes, a test-only seam: the points where a test may stop a
// Service or its judge dead (nothing flushed, committed or aborted; queued
// records purged), to check what a crash leaves behind. A test implements
// CrashPoints and injects it (stream/service/service_testing.h); no
// deployment does: the production default, a CrashSwitch with nothing set,
// never crashes. Production code only asks at its points.

#include <memory>
#include <string_view>
#include <utility>

namespace neardup::stream {

/// Where to crash. The points: the service's "before-produce" (a batch
/// judged, nothing of it produced), "produced" (its outputs produced, not
/// committed), "commit" (just before offsets or a transaction commit), and
/// its group judge's "judge-decided" (a batch decided and produced, not
/// committed). Called on the thread that reaches the point (the pipeline
/// thread or the judge's), so an implementation is safe to call from both.
class CrashPoints {
 public:
  virtual bool crash_at(std::string_view point) const = 0;

  virtual ~CrashPoints() = default;
};

/// Thrown at a crash point a test chose, by the service's loop, its delivery,
/// or a decider whose judge crashed there; Service::run() then stops dead.
struct SimulatedCrash {};

/// The CrashPoints every part of one service asks: none (never a crash)
/// until a test sets its own, before the service runs.
class CrashSwitch final : public CrashPoints {
 public:
  void set(std::shared_ptr<const CrashPoints> points) { points_ = std::move(points); }
  bool crash_at(std::string_view point) const override {
    return points_ && points_->crash_at(point);
  }

 private:
  std::shared_ptr<const CrashPoints> points_;
};

}  // namespace neardup::stream
