#pragma once
// Process-wide services of the `neardup` commands: the log (base/log.h,
// configured from the `log:` section) and the stop signals.

#include <chrono>
#include <string_view>

#include "base/log.h"
#include "config/config.h"

namespace neardup::stream {

/// One log line through the process-wide logger (format and level from the
/// `log:` config). Thread-safe. Not for the per-message path.
using base::log;
/// Applies the `log:` section (format, level) to the process-wide logger.
void configure_logging(const config::LogOptions& options);

/// How long a stop may take from the first SIGTERM/SIGINT (docs/KAFKA.md).
inline constexpr std::chrono::seconds kStopBudget{10};

/// SIGTERM and SIGINT set a process-wide flag (async-signal-safe); Service::run()
/// and the broker command poll it. The stop is bounded whatever the brokers
/// do: a watchdog thread, `budget` after the first signal, logs that the stop
/// did not finish and ends the process with _exit(1) (what was not committed
/// is read again at the next start). A second signal during the stop ends it
/// at once the same way, with one line on stderr. Idempotent.
void install_stop_signal_handlers(std::chrono::milliseconds budget = kStopBudget);
bool stop_signalled();

}  // namespace neardup::stream
