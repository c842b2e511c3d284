#pragma once
// The progress line `neardup run` shows every few seconds when stderr is a
// terminal:  "1.23k msg/s | dup 4.5% | lag 120 | window 11.0k entries, 2.1 MiB"
// Never shown when stderr is a file or a pipe (logs stay clean there).

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "metrics/metrics.h"

namespace neardup::metrics {

/// Rate and duplicate share over the interval between two snapshots, total lag
/// over all partitions, window size. Pure. `seconds` <= 0 shows a rate of 0.
std::string format_progress(const ServiceStats& previous, const ServiceStats& now, double seconds);

/// Prints format_progress() in place ("\r...\x1b[K") at most once per interval.
/// Not thread-safe: call update() from one thread (the pipeline's publish step).
class ProgressLine {
 public:
  /// Enabled only if `out` is a terminal, unless `force` (tests).
  explicit ProgressLine(std::FILE* out = stderr,
                        std::chrono::milliseconds interval = std::chrono::seconds(2),
                        bool force = false);
  bool enabled() const { return enabled_; }
  /// Prints when `interval` has passed since the last print. Returns true if it printed.
  bool update(const ServiceStats& stats, std::chrono::steady_clock::time_point now);
  /// Ends the line (a newline) if anything was printed, so logs start on a fresh line.
  void finish();

 private:
  std::FILE* out_;
  std::chrono::milliseconds interval_;
  bool enabled_;
  bool printed_ = false;
  std::optional<ServiceStats> previous_;
  std::chrono::steady_clock::time_point previous_time_;
};

}  // namespace neardup::metrics
