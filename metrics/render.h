#pragma once
// Turns a published ServiceStats snapshot into Prometheus text exposition
// (format 0.0.4). Pure: no state, no locks; safe from any thread.

#include <string>

#include "metrics/metrics.h"

namespace neardup::metrics {

/// Every neardup_* series (see docs/METRICS.md), with HELP and TYPE lines,
/// cumulative histogram buckets and a +Inf bucket. O(series).
std::string render_text(const ServiceStats& stats, const BuildInfo& build, bool ready);

}  // namespace neardup::metrics
