#include "base/log.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/json.h"
#include "base/thread_annotations.h"

namespace neardup::base {
namespace {

// Any thread logs. level and format are read without the lock (a line may
// still use the previous setting while configure_logging() runs); the write
// and what it depends on are under `mutex`.
struct LogState {
  Mutex mutex;
  std::atomic<int> level{static_cast<int>(LogLevel::info)};
  std::atomic<int> format{static_cast<int>(LogFormat::text)};
  std::atomic<std::FILE*> sink{nullptr};        // nullptr: stderr
  int sink_is_terminal GUARDED_BY(mutex) = -1;  // of the sink in use; -1: not asked yet
  std::FILE* progress_on GUARDED_BY(mutex) =
      nullptr;  // the stream whose current line the progress line holds
};

LogState& state() {
  static LogState s;
  return s;
}

std::string timestamp(std::chrono::system_clock::time_point time) {
  const auto since = time.time_since_epoch();
  const std::time_t secs = std::chrono::system_clock::to_time_t(time);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  std::array<char, 96> out{};
  std::snprintf(out.data(), out.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms < 0 ? ms + 1000 : ms));
  return out.data();
}

bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7F) return true;
  }
  return false;
}

void append_text_value(std::string& out, std::string_view value) {
  if (!needs_quotes(value)) {
    out.append(value);
    return;
  }
  append_json_string(out, value);  // logfmt quoting uses the same escapes
}

}  // namespace

LogField::LogField(std::string k, double v) : key(std::move(k)), number(std::isfinite(v)) {
  if (!number) {
    value = std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");  // JSON has no literal for these
    return;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.6g", v);
  value = text.data();
}

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
  }
  return "info";
}

std::string format_log_line(LogFormat format, LogLevel level,
                            std::chrono::system_clock::time_point time, std::string_view message,
                            std::span<const LogField> fields) {
  std::string out;
  out.reserve(64 + message.size());
  if (format == LogFormat::json) {
    out += "{\"ts\":\"" + timestamp(time) + "\",\"level\":\"";
    out += level_name(level);
    out += "\",\"msg\":";
    append_json_string(out, message);
    for (const auto& field : fields) {
      out += ',';
      append_json_string(out, field.key);
      out += ':';
      if (field.number)
        out += field.value;
      else
        append_json_string(out, field.value);
    }
    out += '}';
    return out;
  }
  out += timestamp(time);
  out += ' ';
  out += level_name(level);
  out += ' ';
  // The message is free text; only line breaks are escaped so one event stays one line.
  for (const char c : message) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  for (const auto& field : fields) {
    out += ' ';
    out += field.key;
    out += '=';
    append_text_value(out, field.value);
  }
  return out;
}

void configure_logging(LogFormat format, LogLevel level, std::FILE* sink) {
  auto& s = state();
  MutexLock lock(s.mutex);
  s.format.store(static_cast<int>(format));
  s.level.store(static_cast<int>(level));
  s.sink.store(sink);
  s.sink_is_terminal = -1;
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= state().level.load(std::memory_order_relaxed);
}

void log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  if (!log_enabled(level)) return;
  auto& s = state();
  try {
    std::string line =
        format_log_line(static_cast<LogFormat>(s.format.load(std::memory_order_relaxed)), level,
                        std::chrono::system_clock::now(), message,
                        std::span<const LogField>(fields.begin(), fields.size()));
    line += '\n';
    MutexLock lock(s.mutex);
    std::FILE* sink = s.sink.load();
    if (sink == nullptr) sink = stderr;
    // The progress line (metrics/progress.h) may stand on the sink's current
    // line: clear it on a terminal (it is redrawn at its next update), end it
    // elsewhere, so the log line starts on a line of its own.
    if (s.progress_on == sink) {
      if (s.sink_is_terminal < 0) s.sink_is_terminal = ::isatty(::fileno(sink)) == 1 ? 1 : 0;
      std::fputs(s.sink_is_terminal == 1 ? "\r\x1b[K" : "\n", sink);
      s.progress_on = nullptr;
    }
    std::fwrite(line.data(), 1, line.size(), sink);
    std::fflush(sink);
  } catch (...) {
    // Logging must never take the service down (e.g. bad_alloc); the line is lost.
  }
}

void write_progress_line(std::FILE* out, std::string_view text) {
  auto& s = state();
  MutexLock lock(s.mutex);
  std::fputc('\r', out);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fputs("\x1b[K", out);
  std::fflush(out);
  s.progress_on = out;
}

void end_progress_line(std::FILE* out) {
  auto& s = state();
  MutexLock lock(s.mutex);
  if (s.progress_on != out) return;
  std::fputc('\n', out);
  std::fflush(out);
  s.progress_on = nullptr;
}

}  // namespace neardup::base
