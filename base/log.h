#pragma once
// Structured log lines for neardup: `log.format: text|json`, `log.level`.
//   text: 2024-05-01T12:00:00.123Z info assigned partitions count=8 topic=input
//   json: {"ts":"2024-05-01T12:00:00.123Z","level":"info","msg":"assigned
//   partitions","count":8,"topic":"input"}
// Text values with spaces, quotes or '=' are quoted (logfmt); JSON output is
// always valid JSON (control characters escaped, invalid UTF-8 replaced by U+FFFD).
//
// Thread-safe: one global configuration, one mutex around the write, whole
// lines only. Not for the per-message path (use counters there).

#include <chrono>
#include <concepts>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace neardup::base {

enum class LogFormat { text, json };
enum class LogLevel { debug, info, warn, error };

/// One key=value pair. Numbers stay numbers in JSON.
struct LogField {
  std::string key;
  std::string value;
  bool number = false;

  LogField(std::string k, std::string_view v) : key(std::move(k)), value(v) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(v) {}
  LogField(std::string k, const std::string& v) : key(std::move(k)), value(v) {}
  template <typename T>
  requires(std::integral<T> && !std::same_as<T, bool>) LogField(std::string k, T v)
      : key(std::move(k)), value(std::to_string(v)), number(true) {}
  LogField(std::string k, double v);
  LogField(std::string k, bool v) : key(std::move(k)), value(v ? "true" : "false"), number(true) {}
};

/// Sets format, minimum level and destination (default: text, info, stderr).
/// `sink` is not owned and must outlive every later log() call.
void configure_logging(LogFormat format, LogLevel level, std::FILE* sink = stderr);
/// True if a line at `level` would be written (skip building expensive fields otherwise).
bool log_enabled(LogLevel level);
/// Writes one line if `level` is enabled. Never throws. If the progress line
/// stands on the sink's current line, it is cleared first (on a terminal) or
/// ended with a newline (elsewhere), so the log line starts on a line of its own.
void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});

/// For the progress line (metrics/progress.h), under the same lock as log():
/// writes `text` in place ("\r...\x1b[K") on `out` and remembers that it stands there.
void write_progress_line(std::FILE* out, std::string_view text);
/// Ends a progress line that still stands on `out`'s current line (a newline); else nothing.
void end_progress_line(std::FILE* out);

/// The line log() would write (without the trailing newline). Pure.
std::string format_log_line(LogFormat format, LogLevel level,
                            std::chrono::system_clock::time_point time, std::string_view message,
                            std::span<const LogField> fields);
/// "debug", "info", "warn", "error".
std::string_view level_name(LogLevel level);

}  // namespace neardup::base
