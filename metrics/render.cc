#include "metrics/render.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/series.h"

namespace neardup::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric number(double value, MetricType type, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  if (type == MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  return m;
}

MetricType type_of(SeriesType type) {
  switch (type) {
    case SeriesType::counter:
      return MetricType::Counter;
    case SeriesType::gauge:
      return MetricType::Gauge;
    case SeriesType::histogram:
      return MetricType::Histogram;
  }
  return MetricType::Untyped;
}

/// An empty family of the declared series `name` (metrics/series.cc).
MetricFamily family(std::string_view name) {
  const Series& s = series(name);
  return {std::string(s.name), std::string(s.help), type_of(s.type), {}};
}

MetricFamily scalar(std::string_view name, double value) {
  MetricFamily f = family(name);
  f.metric.push_back(number(value, f.type));
  return f;
}

MetricFamily histogram(std::string_view name, const Histogram& h) {
  MetricFamily f = family(name);
  ClientMetric m;
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    if (i < h.counts.size()) cumulative += h.counts[i];
    m.histogram.bucket.push_back({cumulative, h.bounds[i]});
  }
  // +Inf always equals _count, even if counts and count drifted (they never should).
  m.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
  f.metric.push_back(std::move(m));
  return f;
}

/// A prometheus::Collectable over one immutable snapshot: the hot path never
/// sees prometheus-cpp, scrapes convert the last published copy.
class SnapshotCollectable final : public prometheus::Collectable {
 public:
  SnapshotCollectable(const ServiceStats& stats, const BuildInfo& build, bool ready)
      : stats_(stats), build_(build), ready_(ready) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    const auto& s = stats_;
    auto count = [](std::uint64_t value) { return static_cast<double>(value); };

    MetricFamily messages = family("neardup_messages_total");
    for (const auto& [verdict, value] : {std::pair<const char*, std::uint64_t>{"unique", s.unique},
                                         {"duplicate", s.duplicate},
                                         {"invalid", s.invalid}})
      messages.metric.push_back(number(count(value), messages.type, {{"verdict", verdict}}));
    out.push_back(std::move(messages));

    out.push_back(histogram("neardup_match_distance", s.match_distance));
    out.push_back(histogram("neardup_candidates_per_probe", s.candidates_per_probe));
    out.push_back(scalar("neardup_window_entries", count(s.window_entries)));
    out.push_back(scalar("neardup_window_bytes", count(s.window_bytes)));
    out.push_back(scalar("neardup_window_evictions_total", count(s.window_evictions)));
    out.push_back(histogram("neardup_processing_seconds", s.processing_seconds));
    out.push_back(histogram("neardup_end_to_end_latency_seconds", s.end_to_end_latency_seconds));

    MetricFamily lag = family("neardup_consumer_lag");
    for (const auto& [key, value] : s.consumer_lag) {
      lag.metric.push_back(
          number(count(value), lag.type,
                 {{"partition", std::to_string(key.second)}, {"topic", key.first}}));
    }
    out.push_back(std::move(lag));

    out.push_back(scalar("neardup_produce_errors_total", count(s.produce_errors)));
    out.push_back(scalar("neardup_dead_letters_total", count(s.dead_letters)));
    out.push_back(scalar("neardup_dead_letters_truncated_total", count(s.dead_letters_truncated)));
    MetricFamily changelog = family("neardup_changelog_records_total");
    for (const auto& [result, value] :
         {std::pair<const char*, std::uint64_t>{"written", s.changelog_written},
          {"replayed", s.changelog_replayed},
          {"followed", s.changelog_followed},
          {"corrupt", s.changelog_corrupt}}) {
      changelog.metric.push_back(number(count(value), changelog.type, {{"result", result}}));
    }
    out.push_back(std::move(changelog));
    out.push_back(
        scalar("neardup_changelog_foreign_schema_total", count(s.changelog_foreign_schema)));
    out.push_back(scalar("neardup_window_rebuild_seconds", s.window_rebuild_seconds));
    out.push_back(
        scalar("neardup_window_rebuild_entries_read", count(s.window_rebuild_entries_read)));
    out.push_back(scalar("neardup_ready", ready_ ? 1 : 0));
    out.push_back(scalar("neardup_kafka_brokers_up", s.kafka_brokers_up ? 1 : 0));
    MetricFamily broker_up = family("neardup_kafka_broker_up");
    for (const auto& [broker, up] : s.kafka_broker_up)
      broker_up.metric.push_back(number(up ? 1 : 0, broker_up.type, {{"broker", broker}}));
    out.push_back(std::move(broker_up));
    out.push_back(scalar("neardup_kafka_broker_outages_total", count(s.kafka_broker_outages)));
    if (s.judged_by_group) {
      out.push_back(scalar("neardup_judge_active", s.judge_active ? 1 : 0));
      out.push_back(scalar("neardup_judge_decisions_total", count(s.judge_decisions)));
      out.push_back(scalar("neardup_judge_takeovers_total", count(s.judge_takeovers)));
      out.push_back(scalar("neardup_judge_takeover_seconds", s.judge_takeover_seconds));
      out.push_back(scalar("neardup_judge_awaiting_messages", count(s.judge_awaiting)));
      out.push_back(scalar("neardup_judge_waiting_seconds", s.judge_waiting_seconds));
      out.push_back(scalar("neardup_judge_resends_total", count(s.judge_resends)));
      out.push_back(scalar("neardup_judge_foreign_schema_total", count(s.judge_foreign_schema)));
      out.push_back(histogram("neardup_judge_round_trip_seconds", s.judge_round_trip_seconds));
    }
    if (s.summarizing) {
      MetricFamily summaries = family("neardup_story_summaries_total");
      for (const auto& [kind, value] :
           {std::pair<const char*, std::uint64_t>{"interim", s.story_summaries_interim},
            {"final", s.story_summaries_final}})
        summaries.metric.push_back(number(count(value), summaries.type, {{"kind", kind}}));
      out.push_back(std::move(summaries));
      out.push_back(scalar("neardup_stories_open", count(s.stories_open)));
      out.push_back(histogram("neardup_story_duplicates", s.story_duplicates));
    }

    std::vector<ClientMetric::Label> labels{{"version", build_.version}};
    for (const auto& [name, value] : build_.labels) {
      if (name != "version") labels.push_back({name, value});
    }
    MetricFamily build_info = family("neardup_build_info");
    build_info.metric.push_back(number(1, build_info.type, std::move(labels)));
    out.push_back(std::move(build_info));
    return out;
  }

 private:
  const ServiceStats& stats_;
  const BuildInfo& build_;
  bool ready_;
};

}  // namespace

std::string render_text(const ServiceStats& stats, const BuildInfo& build, bool ready) {
  const SnapshotCollectable collectable(stats, build, ready);
  return prometheus::TextSerializer().Serialize(collectable.Collect());
}

}  // namespace neardup::metrics
