// Judge::State (judge_state.h): deciding a request record, answering it,
// appending what it kept to the changelog.
#include <algorithm>
#include <chrono>

#include "stream/core/process.h"
#include "stream/judge/judge_state.h"
#include "stream/pipeline/event_time.h"

namespace neardup::stream {

using kafka::KafkaError;
using Clock = std::chrono::steady_clock;

void Judge::State::on_delivery(kafka::Message report) {
  if (report.error() && delivery_error.empty()) {
    delivery_error = "judge: cannot deliver to '" + std::string(report.topic()) +
                     "': " + kafka::describe(report.error());
  }
}

void Judge::State::decide(kafka::Message m) {
  // A judge that lost its partition (a session timeout it slept through)
  // decides nothing more: its successor does, from the committed offset.
  if (consumer->assignment_lost()) return;
  next_offset = m.offset() + 1;
  std::string error;
  if (!decode_judge_request(m.payload(), request, &error)) {
    if (corrupt_logged++ < 10) {
      log(config::LogLevel::warn,
          "judge: request at offset " + std::to_string(m.offset()) + " skipped: " + error);
    }
    add_stats([](JudgeStats& s) { ++s.corrupt; });
    return;
  }
  if (request.schema != 0 && request.schema != schema.id) {
    refuse_foreign_schema();
    return;
  }
  const dedup::SketchOptions& mine = cfg.dedup.sketch;
  if (mine.enabled && (request.bits != mine.bits || request.band_bins != mine.band_bins ||
                       request.bands != mine.bands)) {
    // Sketches of other options cannot be compared with the window's: the
    // SimHash decides these alone (as for such changelog records).
    if (!sketch_mismatch_logged) {
      sketch_mismatch_logged = true;
      log(config::LogLevel::warn,
          "judge: an instance sends sketches made with other dedup.sketch options (bits " +
              std::to_string(request.bits) + ", band_bins " + std::to_string(request.band_bins) +
              ", bands " + std::to_string(request.bands) +
              "); its messages are judged by SimHash alone until every instance runs the "
              "same configuration");
    }
    for (JudgeRequestEntry& e : request.entries) e.analysis.summary.sketch.shingles = 0;
  }
  if (!cfg.dedup.window.scoped && !scope_mismatch_logged) {
    for (const JudgeRequestEntry& e : request.entries) {
      if (e.analysis.scope.value == 0) continue;
      scope_mismatch_logged = true;
      log(config::LogLevel::warn,
          "judge: an instance sends scoped messages (dedup.scope other than global) but this "
          "judge's dedup.scope is global: it judges them across scopes until every instance "
          "runs the same configuration");
      break;
    }
  }
  verdicts.start(request.instance, request.batch);
  // (an instance of an earlier version sends times it did not clamp; a
  // request carries no repost keys: they are made here, once, for the
  // prefetches and the decision)
  const std::int64_t now = wall_ms();
  for (JudgeRequestEntry& e : request.entries) {
    e.time = event_time_of(e.time.ms, now, cfg.dedup.window.max_future);
    engine->key_reposts(e.analysis);
  }
  const auto started = Clock::now();
  const std::size_t count = request.entries.size();
  // The window's memory accesses start well before each decision
  // (dedup::Engine::prefetch kAhead decisions ahead, prefetch_cells
  // kCellsAhead ahead). The dedup worker does it two records ahead with an
  // analysis between decisions; here decisions follow each other at once,
  // so only a deeper pipeline overlaps their cache misses (the depths:
  // the judge thread's fastest in neardup_pipeline_bench).
  constexpr std::size_t kAhead = 16, kCellsAhead = 8;
  for (std::size_t j = 0; j < std::min(kAhead, count); ++j)
    engine->prefetch(request.entries[j].analysis);
  for (std::size_t j = 0; j < std::min(kCellsAhead, count); ++j)
    engine->prefetch_cells(request.entries[j].analysis);
  for (std::size_t i = 0; i < count; ++i) {
    if (i + kAhead < count) engine->prefetch(request.entries[i + kAhead].analysis);
    if (i + kCellsAhead < count) engine->prefetch_cells(request.entries[i + kCellsAhead].analysis);
    const JudgeRequestEntry& e = request.entries[i];
    const SourceIndex index = source_of(e.source);
    const dedup::RecordRef ref = pack_ref(index, e.source.offset);
    const dedup::Verdict v = engine->decide(e.analysis, e.time, ref);
    if (stories) stories->note_verdict(v, ref, e.time);
    JudgeVerdictEntry out;
    out.kind = v.kind;
    out.fingerprint = v.fingerprint;
    out.features = v.features;
    out.candidates = static_cast<std::uint32_t>(v.candidates);
    if (v.kind == dedup::VerdictKind::duplicate && v.match) {
      const Source& of = sources[ref_source(v.match->of)];
      out.of = SourceRef{of.topic, of.partition, ref_offset(v.match->of)};  // (no copy)
      out.of_time = v.match->time;
      out.of_fingerprint = v.match->fingerprint;
      out.distance = v.match->distance;
      out.count = v.count;
      out.similarity = v.similarity;
    }
    verdicts.add(out);
    if (v.kind == dedup::VerdictKind::unique && !cfg.kafka.changelog_topic.empty())
      remember(e, v.fingerprint);
  }
  const auto spent = static_cast<std::uint64_t>((Clock::now() - started).count());
  send_verdicts();
  const std::size_t n = request.entries.size();
  add_stats([&](JudgeStats& s) {
    s.decisions += n;
    ++s.requests;
    s.decide_ns += spent;
  });
}

void Judge::State::refuse_foreign_schema() {
  if (std::find(foreign_logged.begin(), foreign_logged.end(), request.schema) ==
      foreign_logged.end()) {
    foreign_logged.push_back(request.schema);
    const std::string differences =
        dedup::schema_differences(request.schema_description, schema.description);
    log(config::LogLevel::warn,
        "judge: instance " + dedup::Fingerprint{request.instance}.hex() +
            " sends fingerprint schema " + dedup::schema_hex(request.schema) +
            ", this judge's is " + schema.hex() + " (" +
            (differences.empty() ? "their options: " + request.schema_description
                                 : "options differ: " + differences) +
            "): its messages are answered invalid (dead letters) until every instance of "
            "the group runs the same dedup options");
  }
  verdicts.start(request.instance, request.batch);
  for (const JudgeRequestEntry& e : request.entries) {
    JudgeVerdictEntry out;
    out.kind = dedup::VerdictKind::invalid;
    out.fingerprint = e.analysis.summary.fingerprint;
    out.features = e.analysis.summary.features;
    out.foreign_schema = true;
    verdicts.add(out);
  }
  send_verdicts();
  const std::size_t n = request.entries.size();
  add_stats([&](JudgeStats& s) {
    s.foreign_schema += n;
    ++s.requests;
  });
}

void Judge::State::send_verdicts() {
  kafka::Producer::Record rec;
  rec.topic = cfg.kafka.verdict_topic;
  rec.partition = 0;
  verdict_key_buffer = verdict_key(request.instance);
  rec.key = verdict_key_buffer;
  rec.has_key = true;
  rec.value = verdicts.finish();
  if (const kafka::ErrorCode err = producer->produce(rec)) {
    throw KafkaError(
        "judge: cannot send verdicts to '" + cfg.kafka.verdict_topic + "': " + kafka::describe(err),
        err, kafka::Severity::fatal);
  }
}

SourceIndex Judge::State::source_of(const SourceName& name) {
  if (last_source && name.partition == last_source_partition && name.topic == last_source_topic)
    return *last_source;
  last_source = sources.intern(name.topic, name.partition);
  last_source_topic = name.topic;
  last_source_partition = name.partition;
  return *last_source;
}

void Judge::State::remember(const JudgeRequestEntry& e, dedup::Fingerprint fingerprint) {
  fill_kept_entry(kept_record, e.source.topic, e.source.partition, e.source.offset, e.time,
                  fingerprint, engine->last_kept_sketch(), cfg.dedup.sketch, e.analysis.scope);
  changelog.add(kept_record);
  ++unconfirmed_entries;
  if (changelog.entries() >= ChangelogWriter::kBatchMaxEntries ||
      changelog.bytes() >= ChangelogWriter::kBatchMaxBytes)
    flush_changelog();
}

void Judge::State::flush_changelog() {
  if (changelog.empty()) return;
  const ChangelogBatch::Encoded encoded = changelog.take();
  if (const kafka::ErrorCode err =
          producer->produce(changelog_append(cfg.kafka.changelog_topic, encoded))) {
    throw KafkaError("judge: cannot append to the window changelog '" + cfg.kafka.changelog_topic +
                         "': " + kafka::describe(err),
                     err, kafka::Severity::fatal);
  }
}

}  // namespace neardup::stream
