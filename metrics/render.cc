#include "metrics/render.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <utility>
#include <vector>

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

MetricFamily scalar(std::string name, std::string help, MetricType type, double value) {
  return {std::move(name), std::move(help), type, {number(value, type)}};
}

MetricFamily histogram(std::string name, std::string help, const Histogram& h) {
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
  return {std::move(name), std::move(help), MetricType::Histogram, {std::move(m)}};
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

    MetricFamily messages{
        "neardup_messages_total", "Messages judged, by verdict.", MetricType::Counter, {}};
    messages.metric.push_back(
        number(static_cast<double>(s.unique), MetricType::Counter, {{"verdict", "unique"}}));
    messages.metric.push_back(
        number(static_cast<double>(s.duplicate), MetricType::Counter, {{"verdict", "duplicate"}}));
    messages.metric.push_back(
        number(static_cast<double>(s.invalid), MetricType::Counter, {{"verdict", "invalid"}}));
    out.push_back(std::move(messages));

    out.push_back(
        histogram("neardup_match_distance",
                  "Hamming distance (bits) between a duplicate and the window entry it matched.",
                  s.match_distance));
    out.push_back(histogram("neardup_candidates_per_probe",
                            "Window entries checked with a popcount per probe (index selectivity).",
                            s.candidates_per_probe));
    out.push_back(scalar("neardup_window_entries",
                         "Fingerprints currently held in the sliding window.", MetricType::Gauge,
                         static_cast<double>(s.window_entries)));
    out.push_back(scalar("neardup_window_bytes",
                         "Memory held by the sliding window and its index, in bytes.",
                         MetricType::Gauge, static_cast<double>(s.window_bytes)));
    out.push_back(scalar("neardup_window_evictions_total",
                         "Window entries expired by event time or by size.", MetricType::Counter,
                         static_cast<double>(s.window_evictions)));
    out.push_back(
        histogram("neardup_processing_seconds",
                  "Time neardup spends on one message (decode, fingerprint, probe, insert).",
                  s.processing_seconds));
    out.push_back(
        histogram("neardup_end_to_end_latency_seconds",
                  "From the input message's Kafka timestamp to its output being acknowledged.",
                  s.end_to_end_latency_seconds));

    MetricFamily lag{"neardup_consumer_lag",
                     "Messages behind the partition's high watermark (librdkafka statistics).",
                     MetricType::Gauge,
                     {}};
    for (const auto& [key, value] : s.consumer_lag) {
      lag.metric.push_back(
          number(static_cast<double>(value), MetricType::Gauge,
                 {{"partition", std::to_string(key.second)}, {"topic", key.first}}));
    }
    out.push_back(std::move(lag));

    out.push_back(scalar("neardup_produce_errors_total",
                         "Output records the broker did not acknowledge.", MetricType::Counter,
                         static_cast<double>(s.produce_errors)));
    out.push_back(scalar("neardup_dead_letters_total", "Messages sent to the dead-letter topic.",
                         MetricType::Counter, static_cast<double>(s.dead_letters)));
    out.push_back(
        scalar("neardup_dead_letters_truncated_total",
               "Dead letters whose value was cut (or left out) to fit the record size limit.",
               MetricType::Counter, static_cast<double>(s.dead_letters_truncated)));
    MetricFamily changelog{
        "neardup_changelog_records_total",
        "Window changelog records, by result (written, replayed at start, followed from "
        "other instances, corrupt and skipped).",
        MetricType::Counter,
        {}};
    for (const auto& [result, value] :
         {std::pair<const char*, std::uint64_t>{"written", s.changelog_written},
          {"replayed", s.changelog_replayed},
          {"followed", s.changelog_followed},
          {"corrupt", s.changelog_corrupt}}) {
      changelog.metric.push_back(
          number(static_cast<double>(value), MetricType::Counter, {{"result", result}}));
    }
    out.push_back(std::move(changelog));
    out.push_back(scalar("neardup_changelog_foreign_schema_total",
                         "Window changelog entries written with another fingerprint schema "
                         "(dedup options that change what a fingerprint or sketch means), not "
                         "used.",
                         MetricType::Counter, static_cast<double>(s.changelog_foreign_schema)));
    out.push_back(scalar("neardup_window_rebuild_seconds",
                         "Seconds the start-up rebuild of the window from the changelog took.",
                         MetricType::Gauge, s.window_rebuild_seconds));
    out.push_back(scalar("neardup_window_rebuild_entries_read",
                         "Changelog entries the last rebuild of the window read (at start, or at "
                         "this process's last judge takeover): about one window, whatever the "
                         "topic's retention.",
                         MetricType::Gauge, static_cast<double>(s.window_rebuild_entries_read)));
    out.push_back(scalar(
        "neardup_ready",
        "1 when partitions are assigned, the window is rebuilt and Kafka brokers are reachable "
        "(/readyz).",
        MetricType::Gauge, ready_ ? 1 : 0));
    out.push_back(scalar("neardup_kafka_brokers_up",
                         "0 during a Kafka outage (a client lost every broker), 1 otherwise.",
                         MetricType::Gauge, s.kafka_brokers_up ? 1 : 0));
    MetricFamily broker_up{
        "neardup_kafka_broker_up",
        "1 if a neardup client is connected to this broker, 0 if its connection is down "
        "(librdkafka statistics; brokers never tried are absent).",
        MetricType::Gauge,
        {}};
    for (const auto& [broker, up] : s.kafka_broker_up) {
      broker_up.metric.push_back(number(up ? 1 : 0, MetricType::Gauge, {{"broker", broker}}));
    }
    out.push_back(std::move(broker_up));
    out.push_back(scalar("neardup_kafka_broker_outages_total",
                         "Kafka outages begun: times a client lost every broker.",
                         MetricType::Counter, static_cast<double>(s.kafka_broker_outages)));
    if (s.judged_by_group) {
      out.push_back(scalar("neardup_judge_active",
                           "1 while this process is its group's judge (holds the judge topic).",
                           MetricType::Gauge, s.judge_active ? 1 : 0));
      out.push_back(scalar("neardup_judge_decisions_total",
                           "Window decisions this process took as its group's judge.",
                           MetricType::Counter, static_cast<double>(s.judge_decisions)));
      out.push_back(scalar("neardup_judge_takeovers_total",
                           "Times this process became its group's judge.", MetricType::Counter,
                           static_cast<double>(s.judge_takeovers)));
      out.push_back(scalar("neardup_judge_takeover_seconds",
                           "Seconds this process's last takeover as judge took, from the judge "
                           "partition's assignment to its first possible decision (the window "
                           "rebuilt from the changelog); 0 before any.",
                           MetricType::Gauge, s.judge_takeover_seconds));
      out.push_back(scalar("neardup_judge_awaiting_messages",
                           "Messages of this instance waiting for the judge's verdicts.",
                           MetricType::Gauge, static_cast<double>(s.judge_awaiting)));
      out.push_back(scalar("neardup_judge_waiting_seconds",
                           "Seconds the oldest request of this instance has waited for its "
                           "verdicts (0 when none waits): it grows while no instance of the "
                           "group judges.",
                           MetricType::Gauge, s.judge_waiting_seconds));
      out.push_back(scalar("neardup_judge_resends_total",
                           "Requests sent to the judge again, unanswered for 15 s.",
                           MetricType::Counter, static_cast<double>(s.judge_resends)));
      out.push_back(scalar("neardup_judge_foreign_schema_total",
                           "Judge request entries of another fingerprint schema than the judge's, "
                           "answered invalid (this process's judge).",
                           MetricType::Counter, static_cast<double>(s.judge_foreign_schema)));
      out.push_back(histogram("neardup_judge_round_trip_seconds",
                              "From a request to the judge produced to its verdicts read.",
                              s.judge_round_trip_seconds));
    }
    if (s.summarizing) {
      MetricFamily summaries{"neardup_story_summaries_total",
                             "Story summaries written to kafka.summary_topic, by kind (interim, "
                             "final).",
                             MetricType::Counter,
                             {}};
      for (const auto& [kind, value] :
           {std::pair<const char*, std::uint64_t>{"interim", s.story_summaries_interim},
            {"final", s.story_summaries_final}}) {
        summaries.metric.push_back(
            number(static_cast<double>(value), MetricType::Counter, {{"kind", kind}}));
      }
      out.push_back(std::move(summaries));
      out.push_back(scalar("neardup_stories_open",
                           "Originals in the window with duplicates (stories not yet final).",
                           MetricType::Gauge, static_cast<double>(s.stories_open)));
      out.push_back(histogram("neardup_story_duplicates",
                              "Duplicates per story, observed at its final summary (when the "
                              "original leaves the window).",
                              s.story_duplicates));
    }

    std::vector<ClientMetric::Label> labels{{"version", build_.version}};
    for (const auto& [name, value] : build_.labels) {
      if (name != "version") labels.push_back({name, value});
    }
    out.push_back({"neardup_build_info",
                   "Always 1; the labels describe the running build and its settings.",
                   MetricType::Gauge,
                   {number(1, MetricType::Gauge, std::move(labels))}});
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
