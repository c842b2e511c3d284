#pragma once
// The page on the metrics port ("/") and its JSON twin ("/api/summary"): live
// counts and rates, the biggest stories of the last hour with a chart of their
// duplicates per minute (inline SVG), the most recent duplicate pairs side by
// side with the differing words marked, and the originals with the most
// duplicates. One
// self-contained HTML document (inline CSS and a few lines of script that
// reload the live part every 2 s; no external assets), rendered on the server
// so that it reads the same without script. Pure functions: no state, no
// locks, safe from any thread; they run on the HTTP workers, never on the
// pipeline thread. Every message text is escaped (HTML or JSON): messages are
// untrusted input. With PairsSnapshot::texts_redacted the texts are left out.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/page/recent_pairs.h"
#include "metrics/page/word_diff.h"

namespace neardup::metrics {

/// The counters the page shows (from the last published ServiceStats).
struct PageCounts {
  std::uint64_t unique = 0, duplicate = 0, invalid = 0;
  std::uint64_t window_entries = 0, dead_letters = 0;
  double in_per_second = 0, duplicates_per_second = 0;  ///< over the last `rate_seconds`
  double rate_seconds = 0;                              ///< 0: not enough samples yet
  bool ready = false;
  std::string version;
};

/// Message rates from the published totals: the change over the last
/// `span` (or since the oldest sample kept). Not thread-safe. O(1) amortized.
class RateMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateMeter(std::chrono::milliseconds span = std::chrono::seconds(10)) : span_(span) {}
  void add(Clock::time_point at, std::uint64_t messages, std::uint64_t duplicates);
  /// Fills in_per_second, duplicates_per_second and rate_seconds (0 with fewer
  /// than two samples at least 100 ms apart).
  void fill(PageCounts& counts) const;

 private:
  struct Sample {
    Clock::time_point at;
    std::uint64_t messages, duplicates;
  };
  std::chrono::milliseconds span_;
  std::deque<Sample> samples_;  // oldest first; at most one older than span_
};

/// Appends `text` escaped for HTML text and attribute values (& < > " ').
void append_html_escaped(std::string& out, std::string_view text);

/// The Content-Security-Policy of the page: nothing but its own inline style
/// and script (by their SHA-256) and requests to its own origin (the reload).
const std::string& page_content_security_policy();
/// The Content-Security-Policy of every other answer on the page's paths
/// (/api/summary, refusals): nothing may load or run.
inline constexpr std::string_view kLockedContentSecurityPolicy =
    "default-src 'none'; frame-ancestors 'none'";

/// The whole HTML document. `pairs` null: the page says pairs are not recorded.
std::string render_page(const PageCounts& counts, const PairsSnapshot* pairs);
/// The same data as JSON (docs/METRICS.md, "The page").
std::string render_summary_json(const PageCounts& counts, const PairsSnapshot* pairs);

}  // namespace neardup::metrics
