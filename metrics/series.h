#pragma once
// Every Prometheus series neardup exports, declared once: its name, type,
// labels, unit and help. render.cc takes each family's name, type and help
// from here; docs/METRICS.md's table is series_markdown() (`neardup metrics
// --markdown`), and tests/unit/metrics/metrics_series_test.cc keeps the three in step.

#include <span>
#include <string>
#include <string_view>

namespace neardup::metrics {

enum class SeriesType { counter, gauge, histogram };

/// When /metrics serves a series.
enum class Served {
  always,
  group_judge,  ///< with the group judge (kafka.judge_topic set)
  summaries,    ///< with story summaries (kafka.summary_topic set)
};

struct Series {
  std::string_view name;
  SeriesType type;
  std::string_view labels;  ///< label names, comma-separated ("" for none)
  std::string_view unit;    ///< what a value counts ("" for a plain count)
  std::string_view help;    ///< the HELP line /metrics serves
  Served served = Served::always;
};

/// Every series, in the order /metrics serves them.
std::span<const Series> all_series();

/// The declared series `name`. Throws std::logic_error for an undeclared name
/// (a programming error: render.cc exports only declared series).
const Series& series(std::string_view name);

std::string_view to_string(SeriesType type);

/// docs/METRICS.md's table: a header, then one row per series:
/// series | type | labels | unit | help.
std::string series_markdown();

}  // namespace neardup::metrics
