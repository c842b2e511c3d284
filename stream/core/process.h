#pragma once
// Process-wide services of the `neardup` commands: the log (through metrics'
// logger, configured from the `log:` section) and the stop signals.

#include <string_view>

#include "config/config.h"

namespace neardup::stream {

/// One log line through metrics' logger (format and level from the `log:` config).
/// Thread-safe. Not for the per-message path.
void log(config::LogLevel level, std::string_view message);
/// Applies the `log:` section (format, level) to the process-wide logger.
void configure_logging(const config::LogOptions& options);

/// SIGTERM and SIGINT set a process-wide flag (async-signal-safe); Service::run()
/// and the broker command poll it.
void install_stop_signal_handlers();
bool stop_signalled();

}  // namespace neardup::stream
