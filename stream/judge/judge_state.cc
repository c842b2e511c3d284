// Judge::State (judge_state.h): taking over and handing over the judge
// topic's partition, the commit cycle, the poll loop.
#include "stream/judge/judge_state.h"

#include <chrono>
#include <cstdio>

#include "base/random_id.h"
#include "stream/changelog/changelog_reader.h"
#include "stream/core/crash_points_testing.h"
#include "stream/core/process.h"

namespace neardup::stream {

using namespace judge_detail;
using kafka::KafkaError;
using Clock = std::chrono::steady_clock;

Judge::State::State(Judge& j, const config::Config& config)
    : judge(j),
      cfg(config),
      schema(dedup::fingerprint_schema(config.dedup)),
      schemas(schema, "judge: "),
      changelog(base::random_id(), schema) {
  if (!config.kafka.summary_topic.empty())
    stories = std::make_unique<StoryWriter>(config, nullptr, nullptr);
}

void Judge::State::add_stats(const std::function<void(JudgeStats&)>& change) {
  base::MutexLock lock(judge.mutex_);
  change(judge.stats_);
}

void Judge::State::crash_point(std::string_view point) {
  if (judge.options_.crash_points && judge.options_.crash_points->crash_at(point))
    throw SimulatedJudgeCrash{};
}

void Judge::State::on_rebalance(bool assigned, const kafka::TopicPartitions& parts) {
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

void Judge::State::take_over() {
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
    hooks.corrupt = [this](std::int32_t partition, std::int64_t offset, const std::string& reason) {
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

void Judge::State::hand_over() {
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

void Judge::State::finish_cycle() {
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

void Judge::State::rewind() {
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

void Judge::State::loop() {
  // (not stop_signalled(): on SIGTERM the service first waits for its last
  // verdicts, then stops the judge)
  while (!judge.stop_.load(std::memory_order_relaxed)) {
    if (judge.crash_requested_.load()) throw SimulatedJudgeCrash{};
    polled.clear();
    // poll_batch returns with the first request that arrives (a request
    // never waits for the batch to fill), so the wait only bounds an idle
    // pass: 20 passes a second while nothing arrives. Exactly-once: each pass
    // ends in a transaction, and its verdicts are invisible until it commits;
    // a pass of fewer requests lets them flow.
    consumer->poll_batch(polled, txn ? kRequestsPerTransaction : 500,
                         std::chrono::milliseconds(50));
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

}  // namespace neardup::stream
