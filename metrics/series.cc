#include "metrics/series.h"

#include <array>
#include <stdexcept>

namespace neardup::metrics {
namespace {

constexpr std::array kSeries = std::to_array<Series>({
    {"neardup_messages_total", SeriesType::counter, "verdict", "messages",
     "Messages judged, by verdict."},
    {"neardup_match_distance", SeriesType::histogram, "", "bits",
     "Hamming distance (bits) between a duplicate and the window entry it matched."},
    {"neardup_candidates_per_probe", SeriesType::histogram, "", "entries",
     "Window entries checked with a popcount per probe (index selectivity)."},
    {"neardup_window_entries", SeriesType::gauge, "", "entries",
     "Fingerprints currently held in the sliding window."},
    {"neardup_window_bytes", SeriesType::gauge, "", "bytes",
     "Memory held by the sliding window and its index, in bytes."},
    {"neardup_window_evictions_total", SeriesType::counter, "", "entries",
     "Window entries expired by event time or by size."},
    {"neardup_processing_seconds", SeriesType::histogram, "", "seconds",
     "Time neardup spends on one message (decode, fingerprint, probe, insert)."},
    {"neardup_end_to_end_latency_seconds", SeriesType::histogram, "", "seconds",
     "From the input message's Kafka timestamp to its output being acknowledged."},
    {"neardup_consumer_lag", SeriesType::gauge, "partition,topic", "messages",
     "Messages behind the partition's high watermark (librdkafka statistics)."},
    {"neardup_produce_errors_total", SeriesType::counter, "", "records",
     "Output records the broker did not acknowledge."},
    {"neardup_dead_letters_total", SeriesType::counter, "", "messages",
     "Messages sent to the dead-letter topic."},
    {"neardup_dead_letters_truncated_total", SeriesType::counter, "", "messages",
     "Dead letters whose value was cut (or left out) to fit the record size limit."},
    {"neardup_changelog_records_total", SeriesType::counter, "result", "records",
     "Window changelog records, by result (written, replayed at start, followed from other "
     "instances, corrupt and skipped)."},
    {"neardup_changelog_foreign_schema_total", SeriesType::counter, "", "entries",
     "Window changelog entries written with another fingerprint schema (dedup options that change "
     "what a fingerprint or sketch means), not used."},
    {"neardup_window_rebuild_seconds", SeriesType::gauge, "", "seconds",
     "Seconds the start-up rebuild of the window from the changelog took."},
    {"neardup_window_rebuild_entries_read", SeriesType::gauge, "", "entries",
     "Changelog entries the last rebuild of the window read (at start, or at this process's last "
     "judge takeover): about one window, whatever the topic's retention."},
    {"neardup_ready", SeriesType::gauge, "", "0 or 1",
     "1 when partitions are assigned, the window is rebuilt and Kafka brokers are reachable "
     "(/readyz)."},
    {"neardup_kafka_brokers_up", SeriesType::gauge, "", "0 or 1",
     "0 during a Kafka outage (a client lost every broker), 1 otherwise."},
    {"neardup_kafka_broker_up", SeriesType::gauge, "broker", "0 or 1",
     "1 if a neardup client is connected to this broker, 0 if its connection is down (librdkafka "
     "statistics; brokers never tried are absent)."},
    {"neardup_kafka_broker_outages_total", SeriesType::counter, "", "outages",
     "Kafka outages begun: times a client lost every broker."},
    {"neardup_judge_active", SeriesType::gauge, "", "0 or 1",
     "1 while this process is its group's judge (holds the judge topic).", Served::group_judge},
    {"neardup_judge_decisions_total", SeriesType::counter, "", "decisions",
     "Window decisions this process took as its group's judge.", Served::group_judge},
    {"neardup_judge_takeovers_total", SeriesType::counter, "", "takeovers",
     "Times this process became its group's judge.", Served::group_judge},
    {"neardup_judge_takeover_seconds", SeriesType::gauge, "", "seconds",
     "Seconds this process's last takeover as judge took, from the judge partition's assignment to "
     "its first possible decision (the window rebuilt from the changelog); 0 before any.",
     Served::group_judge},
    {"neardup_judge_awaiting_messages", SeriesType::gauge, "", "messages",
     "Messages of this instance waiting for the judge's verdicts.", Served::group_judge},
    {"neardup_judge_waiting_seconds", SeriesType::gauge, "", "seconds",
     "Seconds the oldest request of this instance has waited for its verdicts (0 when none waits): "
     "it grows while no instance of the group judges.",
     Served::group_judge},
    {"neardup_judge_resends_total", SeriesType::counter, "", "requests",
     "Requests sent to the judge again, unanswered for 15 s.", Served::group_judge},
    {"neardup_judge_foreign_schema_total", SeriesType::counter, "", "entries",
     "Judge request entries of another fingerprint schema than the judge's, answered invalid (this "
     "process's judge).",
     Served::group_judge},
    {"neardup_judge_round_trip_seconds", SeriesType::histogram, "", "seconds",
     "From a request to the judge produced to its verdicts read.", Served::group_judge},
    {"neardup_story_summaries_total", SeriesType::counter, "kind", "summaries",
     "Story summaries written to kafka.summary_topic, by kind (interim, final).",
     Served::summaries},
    {"neardup_stories_open", SeriesType::gauge, "", "stories",
     "Originals in the window with duplicates (stories not yet final).", Served::summaries},
    {"neardup_story_duplicates", SeriesType::histogram, "", "duplicates",
     "Duplicates per story, observed at its final summary (when the original leaves the "
     "window).",
     Served::summaries},
    {"neardup_build_info", SeriesType::gauge, "version,...", "always 1",
     "Always 1; the labels describe the running build and its settings."},
});

}  // namespace

std::span<const Series> all_series() { return kSeries; }

const Series& series(std::string_view name) {
  for (const Series& s : kSeries)
    if (s.name == name) return s;
  throw std::logic_error("metrics: series " + std::string(name) +
                         " is not declared in metrics/series.cc");
}

std::string_view to_string(SeriesType type) {
  switch (type) {
    case SeriesType::counter:
      return "counter";
    case SeriesType::gauge:
      return "gauge";
    case SeriesType::histogram:
      return "histogram";
  }
  return "untyped";
}

std::string series_markdown() {
  std::string out =
      "| series | type | labels | unit | help |\n"
      "|---|---|---|---|---|\n";
  for (const Series& s : kSeries) {
    out += "| `";
    out += s.name;
    out += "` | ";
    out += to_string(s.type);
    out += " | ";
    out += s.labels.empty() ? std::string_view("") : s.labels;
    out += " | ";
    out += s.unit;
    out += " | ";
    out += s.help;
    if (s.served == Served::group_judge) out += " (With the group judge only.)";
    if (s.served == Served::summaries) out += " (With story summaries only.)";
    out += " |\n";
  }
  return out;
}

}  // namespace neardup::metrics
