#include "metrics/progress.h"

#include "base/log.h"

#include <unistd.h>

#include <array>
#include <cstdint>

namespace neardup::metrics {
namespace {

/// 950, 1.23k, 45.6M: three significant digits are plenty on a terminal.
std::string human(double value) {
  std::array<char, 32> out{};
  if (value < 1000)
    std::snprintf(out.data(), out.size(), "%.0f", value);
  else if (value < 1e6)
    std::snprintf(out.data(), out.size(), "%.3gk", value / 1e3);
  else if (value < 1e9)
    std::snprintf(out.data(), out.size(), "%.3gM", value / 1e6);
  else
    std::snprintf(out.data(), out.size(), "%.3gG", value / 1e9);
  return out.data();
}

std::uint64_t judged(const ServiceStats& s) { return s.unique + s.duplicate + s.invalid; }

}  // namespace

std::string format_progress(const ServiceStats& previous, const ServiceStats& now, double seconds) {
  // Counters only grow, except after a restart of the stats: treat a drop as "from zero".
  const auto delta = [](std::uint64_t before, std::uint64_t after) {
    return after >= before ? after - before : after;
  };
  const std::uint64_t messages = delta(judged(previous), judged(now));
  const std::uint64_t duplicates = delta(previous.duplicate, now.duplicate);
  const double rate = seconds > 0 ? static_cast<double>(messages) / seconds : 0;
  const double dup_percent =
      messages > 0 ? 100.0 * static_cast<double>(duplicates) / static_cast<double>(messages) : 0;
  std::int64_t lag = 0;
  for (const auto& [partition, value] : now.consumer_lag) lag += value > 0 ? value : 0;
  std::array<char, 160> out{};
  std::snprintf(out.data(), out.size(),
                "%s msg/s | dup %.1f%% | lag %s | window %s entries, %.1f MiB", human(rate).c_str(),
                dup_percent, human(static_cast<double>(lag)).c_str(),
                human(static_cast<double>(now.window_entries)).c_str(),
                static_cast<double>(now.window_bytes) / (1024.0 * 1024.0));
  return out.data();
}

ProgressLine::ProgressLine(std::FILE* out, std::chrono::milliseconds interval, bool force)
    : out_(out),
      interval_(interval),
      enabled_(force || (out != nullptr && ::isatty(::fileno(out)) == 1)) {}

bool ProgressLine::update(const ServiceStats& stats, std::chrono::steady_clock::time_point now) {
  if (!enabled_) return false;
  if (!previous_) {
    previous_ = stats;
    previous_time_ = now;
    return false;
  }
  if (now - previous_time_ < interval_) return false;
  const double seconds = std::chrono::duration<double>(now - previous_time_).count();
  const std::string line = format_progress(*previous_, stats, seconds);
  base::write_progress_line(out_, line);  // under the log's lock: a log line never cuts into it
  printed_ = true;
  previous_ = stats;
  previous_time_ = now;
  return true;
}

void ProgressLine::finish() {
  if (!printed_) return;
  base::end_progress_line(out_);  // nothing when a log line has ended it already
  printed_ = false;
}

}  // namespace neardup::metrics
