#include "stream/judge/judge.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <vector>

#include "base/random_id.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/changelog_reader.h"
#include "stream/changelog/changelog_writer.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/process.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/client_properties.h"
#include "stream/kafka/clients/transaction.h"
#include "stream/pipeline/event_time.h"
#include "stream/pipeline/story_writer.h"
#include "stream/records/judge_record.h"

namespace neardup::stream {
namespace {

using Clock = std::chrono::steady_clock;
using kafka::KafkaError;

struct SimulatedJudgeCrash {};

/// Exactly-once: request records decided per judge transaction at most.
constexpr std::size_t kRequestsPerTransaction = 32;

}  // namespace

/// The judge thread's state (nothing here is touched by another thread).
struct Judge::State {
  Judge& judge;
  const config::Config& cfg;
  std::unique_ptr<kafka::Consumer> consumer;
  std::unique_ptr<kafka::Producer> producer;  // while active
  std::unique_ptr<TransactionCycle> txn;      // exactly-once, while active
  std::unique_ptr<dedup::Engine> engine;      // while active
  std::unique_ptr<StoryWriter> stories;       // kafka.summary_topic set; its stories while active
  Sources sources;                            // the window's refs: every source ever judged
  std::optional<SourceIndex> last_source;     // source_of()'s memo
  std::string last_source_topic;
  std::int32_t last_source_partition = 0;
  dedup::FingerprintSchema schema;  // this judge's (dedup/engine/schema.h)
  SchemaCompatibility schemas;
  ChangelogBatch changelog;
  ChangelogRecord kept_record;  // the entry being added (its topic buffer reused)
  JudgeVerdictWriter verdicts;
  JudgeRequest request;
  std::vector<kafka::MessagePtr> polled;
  std::string verdict_key_buffer;
  bool active = false;
  std::int64_t next_offset = -1;  // one past the last request record decided, -1 none yet
  std::int64_t committed = -1;    // what the last commit sent, -1 none
  std::string delivery_error;
  std::uint64_t corrupt_logged = 0;
  std::uint64_t corrupt_changelog_logged =
      0;  // unreadable changelog records (warn_unreadable_record)
  bool scope_mismatch_logged = false;
  bool sketch_mismatch_logged = false;
  std::vector<std::uint32_t> foreign_logged;  // request schemas said in the log
  std::exception_ptr pending_exception;       // thrown inside a rebalance, raised after the poll
  std::uint64_t unconfirmed_entries = 0;      // changelog entries since the last commit
  bool summaries_pending = false;             // story summaries produced since the last commit

  State(Judge& j, const config::Config& config)
      : judge(j),
        cfg(config),
        schema(dedup::fingerprint_schema(config.dedup)),
        schemas(schema, "judge: "),
        changelog(base::random_id(), schema) {
    if (!config.kafka.summary_topic.empty())
      stories = std::make_unique<StoryWriter>(config, nullptr, nullptr);
  }

  void add_stats(const std::function<void(JudgeStats&)>& change) {
    base::MutexLock lock(judge.mutex_);
    change(judge.stats_);
  }

  void crash_point(std::string_view point) {
    if (judge.options_.TEST_crash_at && judge.options_.TEST_crash_at(point))
      throw SimulatedJudgeCrash{};
  }

  // ------------------------------------------------------------ roles

  void on_rebalance(bool assigned, const kafka::TopicPartitions& parts) {
    if (!parts.has_topic(cfg.kafka.judge_topic) || pending_exception) return;
    try {  // nothing may unwind through librdkafka's frames: raised after the poll
      if (assigned) {
        take_over();
      } else {
        hand_over();
      }
    } catch (...) {
      pending_exception = std::current_exception();
    }
  }

  void take_over() {
    const auto started = Clock::now();
    kafka::Properties props = judge.options_.producer_properties;
    // (a string built, then moved: assigning a one-character literal trips
    // GCC 12's -Wrestrict false positive in basic_string::_M_replace)
    props.insert_or_assign("linger.ms", std::string("1"));  // a verdict is waited for
    if (judge.options_.exactly_once) props["transactional.id"] = judge.options_.transactional_id;
    producer = std::make_unique<kafka::Producer>(
        props, [this](kafka::Message report) { on_delivery(report); }, judge.options_.health);
    engine = std::make_unique<dedup::Engine>(cfg.dedup);
    if (stories) stories->reset(producer.get());
    std::size_t restored = 0;
    std::string reads;
    if (!cfg.kafka.changelog_topic.empty()) {
      ChangelogReader reader(judge.options_.consumer_properties, cfg.kafka.changelog_topic,
                             std::chrono::seconds(10));
      RestoreHooks hooks;
      hooks.stopped = [this] { return judge.stop_.load(std::memory_order_relaxed); };
      hooks.corrupt = [this](std::int32_t partition, std::int64_t offset,
                             const std::string& reason) {
        warn_unreadable_record("judge: ", cfg.kafka.changelog_topic, partition, offset, reason,
                               corrupt_changelog_logged);
        add_stats([](JudgeStats& s) { ++s.changelog_corrupt; });
      };
      const auto n = restore_window(reader, *engine, cfg, sources, schemas, hooks);
      add_stats([&](JudgeStats& s) {
        s.changelog_foreign_schema = schemas.foreign();
        s.restore_read = reader.entries_read();
      });
      if (!n) return;  // stopping
      restored = *n;
      reads = "; " + rebuild_reads(reader);
    }
    if (judge.options_.exactly_once) {
      txn = std::make_unique<TransactionCycle>(*producer, *consumer, std::chrono::seconds(30));
      txn->start();  // fences any earlier judge of this group
    }
    // (after the fence: an earlier judge's open transaction is aborted, so
    // the summary topic reads to its end)
    if (stories) {
      stories->restore(*engine, sources, judge.options_.consumer_properties,
                       std::chrono::seconds(30));
      if (txn) stories->checkpoint();  // (an abort goes back to what was restored)
    }
    active = true;
    next_offset = committed = -1;
    const auto took = Clock::now() - started;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", std::chrono::duration<double>(took).count());
    const std::uint64_t corrupt = judge.stats().changelog_corrupt;
    log(config::LogLevel::info,
        "judge: this instance now judges for group '" + cfg.kafka.group_id + "' (window rebuilt: " +
            std::to_string(restored) + " entries in " + seconds + " s" + reads +
            (corrupt ? "; " + std::to_string(corrupt) + " unreadable changelog record(s) skipped"
                     : std::string()) +
            ")");
    add_stats([&](JudgeStats& s) {
      ++s.takeovers;
      s.restored = restored;
      s.takeover_ns = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
      s.active = true;
    });
  }

  void hand_over() {
    if (!active) return;
    finish_cycle();
    active = false;
    txn.reset();
    if (producer) producer->flush(std::chrono::seconds(5));
    if (stories) stories->reset(nullptr);
    producer.reset();
    engine.reset();
    log(config::LogLevel::info,
        "judge: no longer judging (stopping, or another instance of the group takes over)");
    add_stats([](JudgeStats& s) {
      s.active = false;
      s.engine = {};
    });
  }

  // ------------------------------------------------------------ deciding

  void on_delivery(kafka::Message report) {
    if (report.error() && delivery_error.empty()) {
      delivery_error = "judge: cannot deliver to '" + std::string(report.topic()) +
                       "': " + kafka::describe(report.error());
    }
  }

  void decide(kafka::Message m) {
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
    // (an instance of an earlier version sends times it did not clamp)
    const std::int64_t now = wall_ms();
    for (JudgeRequestEntry& e : request.entries)
      e.time = event_time_of(e.time.ms, now, cfg.dedup.window.max_future);
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
      if (i + kCellsAhead < count)
        engine->prefetch_cells(request.entries[i + kCellsAhead].analysis);
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

  /// Answers every entry of a request of another fingerprint schema as
  /// invalid (its fingerprints and sketches would be compared with the
  /// window's under another meaning); says so once per schema.
  void refuse_foreign_schema() {
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

  void send_verdicts() {
    kafka::Producer::Record rec;
    rec.topic = cfg.kafka.verdict_topic;
    rec.partition = 0;
    verdict_key_buffer = verdict_key(request.instance);
    rec.key = verdict_key_buffer;
    rec.has_key = true;
    rec.value = verdicts.finish();
    if (const kafka::ErrorCode err = producer->produce(rec)) {
      throw KafkaError("judge: cannot send verdicts to '" + cfg.kafka.verdict_topic +
                           "': " + kafka::describe(err),
                       err, kafka::Severity::fatal);
    }
  }

  /// sources.intern(), remembering the last answer: a request's entries come
  /// partition by partition (an instance's poll batch), and interning builds a
  /// key string and hashes it for every entry.
  SourceIndex source_of(const SourceName& name) {
    if (last_source && name.partition == last_source_partition && name.topic == last_source_topic)
      return *last_source;
    last_source = sources.intern(name.topic, name.partition);
    last_source_topic = name.topic;
    last_source_partition = name.partition;
    return *last_source;
  }

  void remember(const JudgeRequestEntry& e, dedup::Fingerprint fingerprint) {
    fill_kept_entry(kept_record, e.source.topic, e.source.partition, e.source.offset, e.time,
                    fingerprint, engine->last_kept_sketch(), cfg.dedup.sketch, e.analysis.scope);
    changelog.add(kept_record);
    ++unconfirmed_entries;
    if (changelog.entries() >= ChangelogWriter::kBatchMaxEntries ||
        changelog.bytes() >= ChangelogWriter::kBatchMaxBytes)
      flush_changelog();
  }

  void flush_changelog() {
    if (changelog.empty()) return;
    const ChangelogBatch::Encoded encoded = changelog.take();
    kafka::Producer::Record rec;
    rec.topic = cfg.kafka.changelog_topic;
    rec.key = encoded.key;
    rec.has_key = true;
    rec.value = encoded.value;
    rec.timestamp_ms = encoded.stamp.ms > 0 ? encoded.stamp.ms : 0;
    if (const kafka::ErrorCode err = producer->produce(rec)) {
      throw KafkaError("judge: cannot append to the window changelog '" +
                           cfg.kafka.changelog_topic + "': " + kafka::describe(err),
                       err, kafka::Severity::fatal);
    }
  }

  /// Makes what was decided since the last call durable, with the judge
  /// topic's offset: a transaction (exactly-once), or the records
  /// acknowledged and then the offset committed (at-least-once).
  void finish_cycle() {
    if (!active || next_offset < 0 || (next_offset == committed && !summaries_pending)) return;
    flush_changelog();
    crash_point("judge-decided");
    kafka::TopicPartitions offsets(1);
    offsets.add(cfg.kafka.judge_topic, 0, next_offset);
    if (txn) {
      if (txn->commit(offsets) == TransactionCycle::Outcome::aborted) {
        rewind();
        return;
      }
      if (stories) stories->checkpoint();
    } else {
      // Every verdict and changelog entry acknowledged before the offset moves
      // (30 s at most: past that, the next judge re-judges what follows the last commit).
      const auto give_up = Clock::now() + std::chrono::seconds(30);
      while (!producer->flush(std::chrono::milliseconds(500))) {
        if (!delivery_error.empty()) break;
        if (judge.stop_.load(std::memory_order_relaxed) || Clock::now() > give_up) return;
      }
      if (!delivery_error.empty())
        throw KafkaError(delivery_error, kafka::errc::fail, kafka::Severity::fatal);
      if (const kafka::ErrorCode err = consumer->commit(offsets, true);
          err && err != kafka::errc::no_offset) {
        log(config::LogLevel::warn,
            "judge: offset commit failed (a later one carries it): " + kafka::describe(err));
      }
    }
    committed = next_offset;
    summaries_pending = false;
    add_stats([&](JudgeStats& s) { s.written += unconfirmed_entries; });
    unconfirmed_entries = 0;
  }

  /// exactly-once, after an abort: the requests since the last commit are read
  /// and decided again (the window keeps its entries; a message is never its
  /// own duplicate, so the verdicts repeat), and the stories go back to the
  /// last commit, so their duplicates count once.
  void rewind() {
    if (stories) stories->rollback();
    if (committed < 0) {
      // Nothing committed in this term: the group's committed offset is where it began.
      kafka::TopicPartitions list(1);
      list.add(cfg.kafka.judge_topic, 0);
      consumer->committed(list, std::chrono::seconds(10));
      committed = list[0].offset >= 0 ? list[0].offset : 0;
    }
    kafka::TopicPartitions list(1);
    list.add(cfg.kafka.judge_topic, 0, committed);
    if (const std::string what = consumer->seek(list, std::chrono::seconds(10)); !what.empty()) {
      throw KafkaError("judge: cannot rewind after an aborted transaction: " + what,
                       kafka::errc::fail, kafka::Severity::fatal);
    }
    next_offset = committed;
    unconfirmed_entries = 0;
    summaries_pending = false;
  }

  void loop() {
    // (not stop_signalled(): on SIGTERM the service first waits for its last
    // verdicts, then stops the judge)
    while (!judge.stop_.load(std::memory_order_relaxed)) {
      if (judge.crash_requested_.load()) throw SimulatedJudgeCrash{};
      polled.clear();
      // Short waits: a verdict is waited for (a request never waits for the batch to fill).
      // Exactly-once: each pass ends in a transaction, and its verdicts are
      // invisible until it commits; a pass of fewer requests lets them flow.
      consumer->poll_batch(polled, txn ? kRequestsPerTransaction : 500,
                           std::chrono::milliseconds(active ? 2 : 50));
      if (consumer->fatal())
        throw KafkaError("judge consumer: " + consumer->fatal_reason(), consumer->fatal_code(),
                         kafka::Severity::fatal);
      for (const kafka::Message m : polled) {
        if (m.error()) {
          if (m.error() == kafka::errc::fatal)
            throw KafkaError("judge consumer: " + consumer->fatal_reason(), consumer->fatal_code(),
                             kafka::Severity::fatal);
          continue;  // transient; librdkafka retries (and logs it through neardup's logger)
        }
        if (!active) continue;  // fetched before a revoke
        decide(m);
      }
      if (pending_exception) std::rethrow_exception(std::exchange(pending_exception, nullptr));
      // Summaries of what this pass decided: in its transaction (exactly-once).
      if (active && stories && engine && !consumer->assignment_lost())
        summaries_pending |= stories->summarize(engine->oldest_live(), sources, Clock::now()) > 0;
      if (producer) producer->poll(std::chrono::milliseconds(0));
      finish_cycle();
      if (engine) {
        const dedup::EngineStats now = engine->stats();
        add_stats([&](JudgeStats& s) {
          s.engine = now;
          s.summarizing = stories != nullptr;
          if (stories) s.stories = stories->stats();
        });
      }
    }
  }
};

Judge::Judge(JudgeOptions options) : options_(std::move(options)), thread_([this] { run(); }) {}

Judge::~Judge() { stop(); }

void Judge::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

JudgeStats Judge::stats() const {
  base::MutexLock lock(mutex_);
  return stats_;
}

std::string Judge::fatal_error() const {
  base::MutexLock lock(mutex_);
  return fatal_;
}

kafka::ErrorCode Judge::fatal_code() const {
  base::MutexLock lock(mutex_);
  return fatal_code_;
}

void Judge::run() {
  pthread_setname_np(pthread_self(), "neardup-judge");
  State state(*this, options_.config);
  auto fail = [&](const std::string& what, kafka::ErrorCode code) {
    log(config::LogLevel::error, what);
    base::MutexLock lock(mutex_);
    fatal_ = what;
    fatal_code_ = code;
    stats_.active = false;
  };
  try {
    kafka::Properties props = options_.consumer_properties;
    props["group.id"] = options_.config.kafka.group_id + ".judge";
    // Static membership: a judge that restarts with its instance takes the
    // judging back at once, without waiting out a rebalance.
    if (auto it = props.find("group.instance.id"); it != props.end())
      it->second = judge_instance_id(it->second);
    props.insert_or_assign("fetch.wait.max.ms", std::string("5"));  // (GCC 12: see take_over)
    // Every request since the group's committed offset, or all of them: a
    // request is never skipped (auto.offset.reset: latest would skip those
    // sent before the first judge started).
    props["auto.offset.reset"] = "earliest";
    // A dead judge's partition moves on at the session timeout: seconds, not
    // librdkafka's default 45 (6 s is brokers' default group.min.session.timeout.ms).
    if (!options_.config.kafka.consumer.count("session.timeout.ms"))
      props["session.timeout.ms"] = "6000";
    if (!options_.config.kafka.consumer.count("heartbeat.interval.ms"))
      props["heartbeat.interval.ms"] = "1500";
    // One member holds the judge topic's one partition. An eager rebalance
    // (librdkafka's default assignors) takes it from the judge whenever any
    // instance joins or leaves and gives it to whichever member sorts first:
    // a hand-over and a rebuild of the window each time. The cooperative
    // sticky assignor leaves it where it is.
    if (!options_.config.kafka.consumer.count("partition.assignment.strategy"))
      props["partition.assignment.strategy"] = "cooperative-sticky";
    // The rebalance timeout (max.poll.interval.ms, librdkafka's default 300 s)
    // bounds how long a coordinator may wait for a member that died during a
    // rebalance: while it waits, nobody judges. The judge polls every 50 ms at
    // most; a takeover's rebuild runs inside the poll, which librdkafka does
    // not count against this interval.
    // (librdkafka requires it to be at least the session timeout)
    if (!options_.config.kafka.consumer.count("max.poll.interval.ms")) {
      props.insert_or_assign(
          "max.poll.interval.ms",
          std::to_string(
              std::max(20000LL, std::strtoll(props["session.timeout.ms"].c_str(), nullptr, 10))));
    }
    state.consumer = std::make_unique<kafka::Consumer>(
        props,
        [&state](bool assigned, const kafka::TopicPartitions& parts) {
          state.on_rebalance(assigned, parts);
        },
        options_.health);
    state.consumer->subscribe({options_.config.kafka.judge_topic});
    state.loop();
    state.consumer->close();  // the revoke commits what was judged
  } catch (const SimulatedJudgeCrash&) {
    log(config::LogLevel::warn, "judge: simulated crash (nothing flushed or committed)");
    crashed_.store(true);
    if (state.producer) state.producer->purge();
    state.active = false;  // the revoke inside close() does nothing
    try {
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
    base::MutexLock lock(mutex_);
    stats_.active = false;
  } catch (const KafkaError& e) {
    fail(e.what(), e.code());
    state.active = false;
    try {
      if (state.txn) state.txn->abort(false);
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
  } catch (const std::exception& e) {
    fail(std::string("judge: ") + e.what(), kafka::errc::fail);
    state.active = false;
    try {
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
  }
}

}  // namespace neardup::stream
