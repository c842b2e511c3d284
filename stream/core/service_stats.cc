#include "stream/core/service_stats.h"

#include <algorithm>

namespace neardup::stream {

void LatencyHistogram::observe_ms(std::int64_t ms) {
  ms = std::max<std::int64_t>(ms, 0);
  if (ms < static_cast<std::int64_t>(kBuckets)) {
    ++counts[static_cast<std::size_t>(ms)];
  } else {
    const std::int64_t seconds = (ms + 999) / 1000;  // (s - 1, s]
    if (seconds <= static_cast<std::int64_t>(kSlowSeconds))
      ++slow[static_cast<std::size_t>(seconds) - kFirstSlowSecond];
    else
      ++beyond;
  }
  ++total;
  sum_ms += static_cast<double>(ms);
}

std::int64_t LatencyHistogram::quantile_ms(double q) const {
  if (total == 0) return 0;
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) return static_cast<std::int64_t>(i);
  }
  for (std::size_t i = 0; i < slow.size(); ++i) {
    seen += slow[i];
    if (seen >= rank) return static_cast<std::int64_t>(i + kFirstSlowSecond) * 1000;
  }
  return static_cast<std::int64_t>(kSlowSeconds) * 1000;
}

namespace {

/// A LatencyHistogram (ms) into a Prometheus histogram of seconds: each stored
/// bucket goes whole into the first metric bucket at or above its upper end
/// (exact while the metric's bounds are whole ms, or whole seconds above 60 s).
void fill_seconds(const LatencyHistogram& from, metrics::Histogram& out) {
  auto add = [&out](double upper_seconds, std::uint64_t n) {
    if (n == 0) return;
    const auto bucket = static_cast<std::size_t>(
        std::lower_bound(out.bounds.begin(), out.bounds.end(), upper_seconds) - out.bounds.begin());
    out.counts[bucket] += n;
    out.count += n;
  };
  for (std::size_t ms = 0; ms < from.counts.size(); ++ms)
    add(static_cast<double>(ms) / 1000.0, from.counts[ms]);
  for (std::size_t i = 0; i < from.slow.size(); ++i)
    add(static_cast<double>(i + LatencyHistogram::kFirstSlowSecond), from.slow[i]);
  if (from.beyond != 0) {  // past every bound: +Inf
    out.counts.back() += from.beyond;
    out.count += from.beyond;
  }
  out.sum += from.sum_ms / 1000.0;
}

}  // namespace

metrics::Histogram StoryStats::size_histogram() {
  return metrics::Histogram({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000});
}

metrics::ServiceStats to_metrics(const ServiceSnapshot& s, int max_distance) {
  metrics::ServiceStats m = metrics::ServiceStats::with_buckets(max_distance);
  m.unique = s.unique + s.passed;
  m.duplicate = s.duplicate;
  m.invalid = s.invalid;
  // Every duplicate, at its SimHash distance: one bucket per bit up to k, and
  // +Inf for those the sketch stage found through a shared band (more than k
  // bits away). Filled bucket by bucket: one observe() per duplicate would be
  // O(duplicates).
  auto& distance = m.match_distance;
  for (std::size_t d = 0; d < s.match_distance.size(); ++d) {
    distance.counts[std::min(d, distance.counts.size() - 1)] += s.match_distance[d];
    distance.count += s.match_distance[d];
    distance.sum += static_cast<double>(d * s.match_distance[d]);
  }
  m.window_entries = s.engine.window.entries;
  m.window_bytes = s.engine.bytes;
  m.window_evictions = s.engine.window.evictions;
  m.processing_seconds = s.processing_seconds;
  m.candidates_per_probe = s.candidates_per_probe;
  fill_seconds(s.end_to_end, m.end_to_end_latency_seconds);
  fill_seconds(s.judge_round_trip, m.judge_round_trip_seconds);
  m.consumer_lag = s.consumer_lag;
  m.produce_errors = s.produce_errors;
  m.dead_letters = s.dead_letters;
  m.dead_letters_truncated = s.dead_letters_truncated;
  m.changelog_written = s.changelog_written;
  m.changelog_replayed = s.changelog_replayed;
  m.changelog_followed = s.changelog_followed;
  m.changelog_corrupt = s.changelog_corrupt;
  m.changelog_foreign_schema = s.changelog_foreign_schema;
  m.judge_foreign_schema = s.judge_foreign_schema;
  m.window_rebuild_seconds = s.changelog_rebuild_seconds;
  m.window_rebuild_entries_read = s.changelog_rebuild_read;
  m.judged_by_group = s.judged_by_group;
  m.judge_active = s.judge_active;
  m.judge_decisions = s.judge_decisions;
  m.judge_takeovers = s.judge_takeovers;
  m.judge_takeover_seconds = s.judge_takeover_seconds;
  m.judge_awaiting = s.judge_awaiting;
  m.judge_waiting_seconds = s.judge_waiting_seconds;
  m.judge_resends = s.judge_resends;
  m.summarizing = s.summarizing;
  m.story_summaries_interim = s.stories.interim;
  m.story_summaries_final = s.stories.finals;
  m.stories_open = s.stories.stories;
  m.story_duplicates = s.stories.sizes;
  return m;
}

}  // namespace neardup::stream
