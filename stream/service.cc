#include "stream/service.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <random>
#include <vector>

#include "stream/changelog.h"
#include "stream/client_properties.h"
#include "stream/changelog_writer.h"
#include "stream/dedup_worker.h"
#include "stream/kafka.h"
#include "stream/offset_ledger.h"
#include "stream/output_router.h"
#include "stream/sources.h"
#include "stream/transaction.h"
#include "stream/window_restore.h"

namespace neardup::stream {

namespace {

using Clock = std::chrono::steady_clock;
using kafka::KafkaError;

/// Thrown at a crash point a test chose (ServiceOptions::crash_at).
struct SimulatedCrash {};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t timestamp_of(const rd_kafka_message_t& m) {
  rd_kafka_timestamp_type_t type;
  return rd_kafka_message_timestamp(&m, &type);
}

}  // namespace

// Threads: everything here is the pipeline thread's (run(), and the delivery
// and rebalance callbacks librdkafka serves inside its poll calls), except
// `stop` (any thread) and what the DedupWorker owns between submit and wait.
struct Service::Impl {
  // ---- constant after construction
  ServiceOptions options;
  const config::Config& cfg;
  std::atomic<bool>& stop;
  std::uint64_t instance_id = 0;  // marks this process's changelog records
  bool exactly_once = false;      // kafka.delivery: exactly-once
  kafka::Properties consumer_properties;

  // ---- pipeline thread
  std::string fatal_error;
  ServiceSnapshot stats;
  Sources sources;
  OffsetLedger ledger;
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<OutputRouter> router;
  std::unique_ptr<ChangelogWriter> changelog_writer;  // null when the changelog is off
  std::unique_ptr<ChangelogFollower> changelog;       // set while the changelog is on and read
  std::string delivery_fatal;  // set in the delivery handler, raised after the poll
  std::unique_ptr<kafka::Consumer> consumer;
  std::unique_ptr<TransactionCycle> txn;  // exactly-once only
  Slot slots[2];                        // (their messages go before the consumer does)
  std::unique_ptr<DedupWorker> worker;  // null in bypass mode; after slots: joined before they go
  dedup::EngineStats engine_stats;      // the worker's, as of the last slot it finished
  std::vector<Remembered> followed;     // other instances' changelog entries for the next slot
  int inflight = -1;                    // the slot with the worker (polled, not yet handled), or -1
  std::string rebalance_fatal;             // an error while finishing a batch inside a revoke
  std::exception_ptr rebalance_exception;  // any other exception there (std::bad_alloc)
  bool abandoning = false;                 // after a fatal error: a revoke only lets go
  // How long a revoke waits for the output of the partitions it takes away: a
  // rebalance can afford it; the shutdown's revoke comes after its own flush.
  std::chrono::milliseconds revoke_drain{60'000};

  ~Impl() {
    // The consumer's close serves a last revoke, which must find every member
    // alive: close it here, first (a no-op when run() closed it already).
    abandoning = true;
    try {
      if (consumer) consumer->close();
    } catch (...) {
    }
  }

  Impl(ServiceOptions opts, std::atomic<bool>& stop_flag)
      : options(std::move(opts)), cfg(options.config), stop(stop_flag) {
    stats.match_distance.assign(static_cast<std::size_t>(cfg.dedup.index.max_distance) + 1, 0);
    auto producer_props = default_producer_properties(options.brokers);
    for (const auto& [k, v] : cfg.kafka.producer) producer_props[k] = v;
    auto consumer_props = default_consumer_properties(options.brokers, cfg.kafka.group_id);
    for (const auto& [k, v] : cfg.kafka.consumer) consumer_props[k] = v;
    exactly_once = cfg.kafka.delivery == config::Delivery::exactly_once && !options.bypass_dedup;
    if (exactly_once) {
      producer_props["transactional.id"] = cfg.kafka.transactional_id.empty()
                                               ? default_transactional_id(cfg.kafka.group_id)
                                               : cfg.kafka.transactional_id;
      // A crashed instance's open transaction holds read_committed consumers
      // back until it times out (or the instance restarts with its id).
      if (!cfg.kafka.producer.count("transaction.timeout.ms")) producer_props["transaction.timeout.ms"] = "30000";
      // (librdkafka requires message.timeout.ms <= transaction.timeout.ms)
      if (!cfg.kafka.producer.count("message.timeout.ms")) {
        producer_props["message.timeout.ms"] = producer_props["transaction.timeout.ms"];
      }
      // Inputs and the changelog: only what committed.
      if (!cfg.kafka.consumer.count("isolation.level")) consumer_props["isolation.level"] = "read_committed";
    }
    consumer_properties = consumer_props;
    std::random_device entropy;
    instance_id = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                  static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    if (!options.bypass_dedup) worker = std::make_unique<DedupWorker>(cfg);
    producer = std::make_unique<kafka::Producer>(
        producer_props, [this](const rd_kafka_message_t& m) { on_delivery(m); }, options.broker_health);
    router = std::make_unique<OutputRouter>(cfg, *producer, ledger, sources, stats,
                                            config::producer_message_max_bytes(cfg.kafka));
    if (!cfg.kafka.changelog_topic.empty() && !options.bypass_dedup) {
      changelog_writer = std::make_unique<ChangelogWriter>(cfg, *producer, ledger, instance_id);
    }
    consumer = std::make_unique<kafka::Consumer>(
        consumer_props,
        [this](bool assigned, const rd_kafka_topic_partition_list_t& parts) { on_rebalance(assigned, parts); },
        options.broker_health);
    if (exactly_once) txn = std::make_unique<TransactionCycle>(*producer, *consumer, std::chrono::seconds(30));
    router->set_exactly_once(exactly_once);
  }

  // ---------------------------------------------------------------- delivery

  void on_delivery(const rd_kafka_message_t& m) {
    const Ticket ticket = Ticket::unpack(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m._private)));
    if (ticket.source == ChangelogWriter::kBatchSource) {
      if (m.err) {
        ++stats.produce_errors;
        if (!exactly_once) note_delivery_fatal(m);  // (exactly-once: its transaction aborts)
      }
      if (changelog_writer) {
        stats.changelog_written += changelog_writer->on_delivery(ticket.seq, !m.err, [this](Ticket t) { acknowledge(t); });
      }
      return;
    }
    if (m.err) {
      ++stats.produce_errors;
      // A record the broker refuses as a record goes to the dead letters
      // (router->resend() after the poll); anything else is final after
      // librdkafka's own retries: never commit past it, stop, so a restart replays it.
      // (exactly-once: the transaction aborts; the router remembers a refused
      // record, so the messages judged again send it to the dead letters.)
      if (!router->on_delivery_error(m, ticket) &&
          (!exactly_once || kafka::classify(m.err) == kafka::Severity::message)) {
        note_delivery_fatal(m);  // (a bare dead letter refused: a cluster fault, in either mode)
      }
      return;
    }
    ++stats.produced;
    if (rd_kafka_topic_name(m.rkt) == cfg.kafka.dead_letter_topic) ++stats.dead_letters;
    acknowledge(ticket);
  }

  void note_delivery_fatal(const rd_kafka_message_t& m) {
    if (!delivery_fatal.empty()) return;
    delivery_fatal = std::string("cannot deliver to '") + rd_kafka_topic_name(m.rkt) + "': " + rd_kafka_err2str(m.err) +
                     " (" + std::string(kafka::to_string(kafka::classify(m.err))) + " error after retries)";
  }

  /// One output record of the input `ticket` is acknowledged.
  void acknowledge(Ticket ticket) {
    // The delivery report's own timestamp is the broker's (log append time
    // with some brokers), so the input's timestamp is kept in the ledger.
    if (auto ts = ledger.acknowledge(ticket)) stats.end_to_end.observe_ms(wall_ms() - *ts);
  }

  /// Serves delivery reports (up to `timeout`), then sends what they turned into dead letters.
  void serve_deliveries(std::chrono::milliseconds timeout) {
    producer->poll(timeout);
    try {
      router->resend();
    } catch (const KafkaError& e) {
      if (delivery_fatal.empty()) delivery_fatal = e.what();
    }
  }

  // ---------------------------------------------------------------- commits

  /// exactly-once: commits the open transaction with the input offsets of
  /// every message handled in it (their outputs are in it); on an abort, the
  /// input is rewound to the last committed offsets.
  void commit_transaction() {
    flush_changelog();
    kafka::PartitionListPtr offsets(rd_kafka_topic_partition_list_new(8));
    std::vector<std::uint32_t> moved;
    for (std::uint32_t i = 0; i < sources.size(); ++i) {
      const Source& src = sources[i];
      if (!src.assigned || src.position < 0 || src.position == src.committed) continue;
      rd_kafka_topic_partition_list_add(offsets.get(), src.topic.c_str(), src.partition)->offset = src.position;
      moved.push_back(i);
    }
    if (offsets->cnt == 0) return;  // nothing was handled: the transaction is empty
    crash_point("commit");
    if (txn->commit(*offsets) == TransactionCycle::Outcome::aborted) {
      rewind();
      return;
    }
    for (std::uint32_t i : moved) sources[i].committed = sources[i].position;
    if (options.commit_offsets_after_transaction) {
      if (const rd_kafka_resp_err_t err = consumer->commit(*offsets, false); err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        log(config::LogLevel::warn, std::string("offset commit after the transaction failed: ") + rd_kafka_err2str(err));
      }
    }
    ledger.take_commits();  // (everything is acknowledged: the commit flushed)
    stats.committed = ledger.finished();
  }

  /// exactly-once, after an abort: what the aborted transaction held is read
  /// and judged again from the last committed offsets (the window keeps its
  /// entries; a message is never its own duplicate, so the verdicts repeat).
  void rewind() {
    if (inflight >= 0) {
      worker->wait();
      slots[std::exchange(inflight, -1)].messages.clear();  // judged, never sent: read again
    }
    router->forget_resends();
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(8));
    for (std::uint32_t i = 0; i < sources.size(); ++i) {
      Source& src = sources[i];
      const std::int64_t to = src.committed >= 0 ? src.committed : src.first_read;
      if (!src.assigned || to < 0) continue;
      rd_kafka_topic_partition_list_add(list.get(), src.topic.c_str(), src.partition)->offset = to;
      src.position = to;
      src.first_read = -1;
      ledger.assign(i);
    }
    if (list->cnt == 0) return;
    if (rd_kafka_error_t* error = rd_kafka_seek_partitions(consumer->handle(), list.get(), 10000)) {
      const std::string what = rd_kafka_error_string(error);
      rd_kafka_error_destroy(error);
      throw KafkaError("cannot rewind the input after an aborted transaction: " + what, RD_KAFKA_RESP_ERR__FAIL,
                       kafka::Severity::fatal);
    }
  }

  void crash_point(std::string_view point) {
    if (options.crash_at && options.crash_at(point)) throw SimulatedCrash{};
  }

  /// The periodic commit: the transaction (exactly-once) or the acknowledged offsets.
  void commit_progress(bool sync) {
    if (txn) {
      commit_transaction();
      return;
    }
    crash_point("commit");
    commit(sync);
  }

  /// Commits what is acknowledged; false when the commit failed (logged; a later one carries the offsets).
  bool commit(bool sync, const rd_kafka_topic_partition_list_t* subset = nullptr) {
    std::vector<std::uint32_t> only;
    if (subset) {
      for (int i = 0; i < subset->cnt; ++i) only.push_back(sources.intern(subset->elems[i].topic, subset->elems[i].partition));
    }
    const std::vector<OffsetLedger::Commit> commits = ledger.take_commits(subset ? &only : nullptr);
    stats.committed = ledger.finished();  // counted when finished, committed by this call or a later one
    if (commits.empty()) return true;
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(commits.size())));
    for (const auto& c : commits) {
      const Source& src = sources[c.source];
      rd_kafka_topic_partition_list_add(list.get(), src.topic.c_str(), src.partition)->offset = c.offset;
    }
    const rd_kafka_resp_err_t err = consumer->commit(*list, !sync);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      log(config::LogLevel::warn,
          std::string("offset commit failed (will retry with later offsets): ") + rd_kafka_err2str(err));
      for (const auto& c : commits) ledger.commit_failed(c.source);
      return false;
    }
    return true;
  }

  /// Waits until every produced record is acknowledged (or `limit` passes).
  bool drain(std::chrono::milliseconds limit) {
    flush_changelog();
    const auto deadline = Clock::now() + limit;
    while ((producer->in_flight() > 0 || router->has_resends()) && Clock::now() < deadline) {
      serve_deliveries(std::chrono::milliseconds(50));
    }
    serve_deliveries(std::chrono::milliseconds(0));
    return producer->in_flight() == 0;
  }

  // ---------------------------------------------------------------- rebalance

  void on_rebalance(bool assigned, const rd_kafka_topic_partition_list_t& parts) {
    if (assigned) {
      for (int i = 0; i < parts.cnt; ++i) {
        const std::uint32_t index = sources.intern(parts.elems[i].topic, parts.elems[i].partition);
        sources[index].assigned = true;
        sources[index].position = sources[index].committed = sources[index].first_read = -1;
        ledger.assign(index);
      }
      stats.assigned = true;
      log(config::LogLevel::info, "assigned " + std::to_string(parts.cnt) + " partition(s)");
      if (abandoning) return;
      learn_committed_positions(parts);
      try {  // nothing may unwind through librdkafka's frames: raised after the poll
        read_changelog_to_end();
      } catch (const KafkaError& e) {
        if (rebalance_fatal.empty()) rebalance_fatal = e.what();
      } catch (...) {
        if (!rebalance_exception) rebalance_exception = std::current_exception();
      }
      return;
    }
    if (abandoning) {
      // Closing after a fatal error (or on destruction): nothing more is
      // produced or committed; the partitions just go.
      release(parts);
      return;
    }
    // Revoked: finish what was read, commit it, then let the partitions go.
    // Nothing may unwind through librdkafka's C frames: errors are kept and
    // raised on the pipeline thread after the poll.
    try {
      finish_inflight();
      if (txn) commit_transaction();  // (an abort rewinds; the partitions go all the same)
    } catch (const KafkaError& e) {
      if (rebalance_fatal.empty()) rebalance_fatal = e.what();
    } catch (...) {
      if (!rebalance_exception) rebalance_exception = std::current_exception();
    }
    if (txn) {
      release(parts);
      log(config::LogLevel::info, "revoked " + std::to_string(parts.cnt) + " partition(s), progress committed in the transaction");
      return;
    }
    const bool drained = drain(revoke_drain);
    if (!drained) {
      log(config::LogLevel::error, "revoke: " + std::to_string(producer->in_flight()) +
                                       " output record(s) still unacknowledged after " +
                                       std::to_string(revoke_drain.count()) + " ms; their offsets stay uncommitted");
    }
    bool committed = false;
    try {
      committed = commit(true, &parts);
    } catch (const KafkaError& e) {
      log(config::LogLevel::warn, std::string("revoke: ") + e.what());
    }
    release(parts);
    log(config::LogLevel::info, "revoked " + std::to_string(parts.cnt) + " partition(s)" +
                                    (!committed ? "; the commit failed, so their messages since the last commit "
                                                  "will be read again"
                                     : drained ? ", progress committed"
                                               : ", progress committed up to the first unacknowledged output"));
  }

  void release(const rd_kafka_topic_partition_list_t& parts) {
    for (int i = 0; i < parts.cnt; ++i) {
      const std::uint32_t index = sources.intern(parts.elems[i].topic, parts.elems[i].partition);
      sources[index].assigned = false;
      ledger.revoke(index);
    }
    stats.assigned = std::any_of(sources.begin(), sources.end(), [](const Source& s) { return s.assigned; });
  }

  /// Where each newly assigned partition resumes, for the lag until its first
  /// message arrives (else the lag would count the partition from its start).
  void learn_committed_positions(const rd_kafka_topic_partition_list_t& parts) {
    kafka::PartitionListPtr committed(rd_kafka_topic_partition_list_copy(&parts));
    const rd_kafka_resp_err_t err = rd_kafka_committed(consumer->handle(), committed.get(), 2000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      log(config::LogLevel::debug, std::string("committed offsets unknown (the lag counts from the partitions' "
                                               "start until their first message): ") + rd_kafka_err2str(err));
      return;
    }
    for (int i = 0; i < committed->cnt; ++i) {
      const auto& e = committed->elems[i];
      if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset < 0) continue;
      Source& src = sources[sources.intern(e.topic, e.partition)];
      src.position = src.committed = e.offset;
    }
  }

  // ---------------------------------------------------------------- batches

  /// Waits for the worker's batch, if any, and produces it.
  void finish_inflight() {
    if (inflight < 0) return;
    Slot& slot = slots[inflight];
    inflight = -1;
    wait_worker(slot);
    handle_slot(slot);
  }

  void wait_worker(const Slot& slot) {
    worker->wait();
    engine_stats = slot.engine_stats;
  }

  /// Hands freshly polled messages (and the changelog entries followed since
  /// the last slot) to the worker. Sources are interned here, on this thread.
  void submit(Slot& slot) {
    const std::size_t n = slot.messages.size();
    slot.jobs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const rd_kafka_message_t& m = *slot.messages[i];
      Job& job = slot.jobs[i];
      job.judge = false;
      if (m.err) continue;
      job.source = sources.intern(rd_kafka_topic_name(m.rkt), m.partition);
      job.judge = sources[job.source].assigned;
      const std::int64_t ts = timestamp_of(m);
      job.time = dedup::EventTime{ts >= 0 ? ts : wall_ms()};
    }
    slot.remember.swap(followed);
    followed.clear();
    worker->submit(slot);
  }

  void handle_slot(Slot& slot) {
    for (std::size_t i = 0; i < slot.messages.size(); ++i) {
      const rd_kafka_message_t& m = *slot.messages[i];
      const Job& job = slot.jobs[i];
      if (m.err || job.judge) handle(m, job.source, &slot.prepared[i], &slot.outcomes[i], job.time);
    }
    slot.messages.clear();
  }

  // ---------------------------------------------------------------- per message

  /// `index`: the source of `in` (interned; unused when in.err). `prepared`,
  /// `outcome`: the worker's decode, analysis and verdict of `in` (null in
  /// bypass mode). `time`: its event time (bypass: unused).
  void handle(const rd_kafka_message_t& in, std::uint32_t index, const Prepared* prepared, const Outcome* outcome,
              dedup::EventTime time) {
    if (in.err) {
      const auto severity = kafka::classify(in.err);
      const std::string what = std::string("consumer: ") + rd_kafka_err2str(in.err);
      if (in.err == RD_KAFKA_RESP_ERR__FATAL) throw KafkaError(what + ": " + consumer->fatal_reason(), in.err, severity);
      log(config::LogLevel::warn, what);  // transient (broker down, topic not there yet): librdkafka retries
      return;
    }
    Source& src = sources[index];
    if (!src.assigned) return;  // a message fetched before a revoke; it will be read again
    if (src.first_read < 0) src.first_read = in.offset;
    src.position = in.offset + 1;
    ++stats.consumed;
    const OffsetLedger::Added added = ledger.add(index, in.offset, timestamp_of(in));
    if (added.jumped_back) {
      log(config::LogLevel::warn, "input " + src.topic + " partition " + std::to_string(src.partition) +
                                      ": offsets went back from " + std::to_string(added.previous_offset) + " to " +
                                      std::to_string(in.offset) +
                                      " (topic recreated, log truncated or offsets reset); judging on and "
                                      "committing the new offsets");
    }
    const Ticket ticket = added.ticket;
    if (options.bypass_dedup) {
      ++stats.passed;
      router->forward(in, ticket);
      return;
    }

    const dedup::Verdict& verdict = outcome->verdict;
    stats.processing_ns += outcome->spent_ns;
    stats.processing_seconds.observe(static_cast<double>(outcome->spent_ns) * 1e-9);
    if (verdict.kind != dedup::VerdictKind::invalid)  // an invalid text is never looked up
      stats.candidates_per_probe.observe(static_cast<double>(verdict.candidates));

    const Source* of = nullptr;
    if (verdict.kind == dedup::VerdictKind::duplicate && verdict.match) {
      const std::uint32_t of_index = ref_source(verdict.match->of);
      if (of_index < sources.size()) of = &sources[of_index];
    }
    if (options.on_verdict) {
      VerdictEvent event{src.topic, src.partition, in.offset, prepared->text(), &verdict, {}, 0, 0};
      if (of) {
        event.of_topic = of->topic;
        event.of_partition = of->partition;
        event.of_offset = ref_offset(verdict.match->of);
      }
      options.on_verdict(event);
    }

    if (changelog_writer && verdict.kind == dedup::VerdictKind::unique) {
      changelog_writer->append(src, ticket, in.offset, time, verdict.fingerprint, outcome->kept_sketch);
    }
    router->route(in, ticket, verdict, outcome->error, of);
  }

  // ---------------------------------------------------------------- changelog

  void flush_changelog() {
    if (changelog_writer) changelog_writer->flush();
  }

  /// Reads the whole changelog and replays it into the engine. Returns false if
  /// a stop was requested first. Throws KafkaError (missing topic, fatal errors).
  bool rebuild_window() {
    if (cfg.kafka.changelog_topic.empty() || options.bypass_dedup) {
      stats.window_ready = true;
      return true;
    }
    changelog = std::make_unique<ChangelogFollower>(cfg, consumer_properties, sources, stats, instance_id);
    RestoreHooks hooks;
    hooks.progress = [this] { publish(); };
    hooks.progress_every = options.progress_interval;
    hooks.stopped = [this] { return stop.load(std::memory_order_relaxed) || stop_signalled(); };
    dedup::Engine& engine = worker->engine();  // no slot is submitted yet
    if (!changelog->rebuild(engine, hooks)) return false;
    engine_stats = engine.stats();
    stats.window_ready = true;
    return true;
  }

  /// Remembers what other instances kept since the last call.
  void follow_changelog() {
    if (changelog) changelog->follow(followed);
  }

  /// On an assignment: what the partitions' previous owners kept is in the
  /// changelog by now (their revoke waited for it); read it before judging
  /// any message of those partitions, so their near-copies are caught.
  void read_changelog_to_end() {
    if (changelog) changelog->read_to_end(followed);
  }

  // ---------------------------------------------------------------- progress

  void fill_lag() {
    stats.consumer_lag.clear();
    for (std::uint32_t index = 0; index < sources.size(); ++index) {
      const Source& src = sources[index];
      if (!src.assigned) continue;
      std::int64_t lo = 0, hi = 0;
      if (rd_kafka_get_watermark_offsets(consumer->handle(), src.topic.c_str(), src.partition, &lo, &hi) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          hi >= 0) {
        // A committed offset below the log start (trimmed by retention) resumes at the start.
        const std::int64_t committed = ledger.committed_offset(index);
        const std::int64_t pos = std::max(lo, src.position >= 0 ? src.position : (committed >= 0 ? committed : lo));
        stats.consumer_lag[{src.topic, src.partition}] = std::max<std::int64_t>(0, hi - pos);
      }
    }
  }

  void publish() {
    if (!options.on_progress) return;
    stats.engine = engine_stats;
    fill_lag();
    options.on_progress(stats);
  }

  void raise_if_fatal() {
    if (producer->fatal()) throw KafkaError("producer: " + producer->fatal_reason(), RD_KAFKA_RESP_ERR__FATAL, kafka::Severity::fatal);
    if (consumer->fatal()) throw KafkaError("consumer: " + consumer->fatal_reason(), RD_KAFKA_RESP_ERR__FATAL, kafka::Severity::fatal);
    if (!delivery_fatal.empty()) throw KafkaError(delivery_fatal, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
    if (!rebalance_fatal.empty()) throw KafkaError(rebalance_fatal, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
    if (rebalance_exception) std::rethrow_exception(std::exchange(rebalance_exception, nullptr));
  }

  // ---------------------------------------------------------------- the loop

  /// One poll loop iteration's consume and judge step.
  void poll_and_judge() {
    if (options.bypass_dedup) {
      Slot& slot = slots[0];
      consumer->poll_batch(slot.messages, 2000, std::chrono::milliseconds(50));
      for (const auto& m : slot.messages)
        handle(*m, m->err ? 0 : sources.intern(rd_kafka_topic_name(m->rkt), m->partition), nullptr, nullptr, {});
      slot.messages.clear();
      return;
    }
    // Double buffering: the worker analyzes and judges the batch just polled
    // while this thread produces the one before it. With a batch in flight the
    // poll does not wait, so a lone message is not held back.
    const int next = inflight == 0 ? 1 : 0;
    Slot& polled = slots[next];
    polled.messages.clear();
    consumer->poll_batch(polled.messages, 2000, std::chrono::milliseconds(inflight >= 0 ? 0 : 50));
    // (a revoke inside the poll may have finished the in-flight batch already)
    const int previous = inflight;
    if (previous >= 0) wait_worker(slots[previous]);
    inflight = -1;
    if (!polled.messages.empty() || !followed.empty()) {
      submit(polled);
      inflight = next;
    }
    if (previous >= 0) {
      crash_point("before-produce");
      handle_slot(slots[previous]);
      crash_point("produced");
    }
  }

  int run() {
    try {
      publish();
      if (!rebuild_window()) {
        log(config::LogLevel::info, "stopped while rebuilding the window; nothing was consumed");
        publish();
        return 0;
      }
      if (txn) txn->start();
      consumer->subscribe(cfg.kafka.input_topics);
      auto last_commit = Clock::now(), last_progress = Clock::now();
      while (!stop.load(std::memory_order_relaxed) && !stop_signalled()) {
        poll_and_judge();
        flush_changelog();
        follow_changelog();
        serve_deliveries(std::chrono::milliseconds(0));
        raise_if_fatal();
        const auto now = Clock::now();
        if (now - last_commit >= options.commit_interval) {
          commit_progress(false);
          last_commit = now;
        }
        if (now - last_progress >= options.progress_interval) {
          publish();
          last_progress = now;
        }
      }
      log(config::LogLevel::info, "stopping: flushing output and committing offsets");
      finish_inflight();  // every polled message of a still assigned partition is handled
      if (txn) commit_transaction();
      const bool drained = drain(options.shutdown_flush);
      raise_if_fatal();
      commit_progress(true);
      if (!drained) {
        log(config::LogLevel::warn, std::to_string(producer->in_flight()) +
                                        " output record(s) unacknowledged at shutdown; their input offsets are not "
                                        "committed and will be read again");
      }
      // Leaving the group revokes the partitions; the flush above had the
      // shutdown's time, so that revoke only commits what is acknowledged by now.
      revoke_drain = std::chrono::milliseconds(500);
      consumer->close();
      publish();
      return 0;
    } catch (const KafkaError& e) {
      return stop_after_fatal(e.what());
    } catch (const SimulatedCrash&) {
      return crash();
    }
  }

  /// A crash as a test simulates it: nothing more reaches the broker.
  int crash() {
    log(config::LogLevel::warn, "simulated crash: stopping without flushing, committing or aborting");
    abandoning = true;
    try {
      if (inflight >= 0) worker->wait();
    } catch (...) {
    }
    inflight = -1;
    rd_kafka_purge(producer->handle(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    try {
      consumer->close();  // (a real crash would leave the group only at the session timeout)
    } catch (...) {
    }
    return Service::kSimulatedCrash;
  }

  int stop_after_fatal(const std::string& what) {
    fatal_error = what;
    log(config::LogLevel::error,
        "fatal Kafka error, stopping (offsets of undelivered messages are not committed): " + what);
    try {
      // The worker's batch is dropped (its offsets are not committed); wait
      // for it only so that its counters are final.
      if (inflight >= 0) wait_worker(slots[std::exchange(inflight, -1)]);
    } catch (...) {
    }
    try {
      if (txn) {
        txn->abort(false);  // (nothing of it becomes visible; its messages are read again)
      } else {
        // Commit only what is fully acknowledged, then leave.
        producer->poll(std::chrono::milliseconds(0));
        commit(true);
      }
    } catch (...) {
    }
    abandoning = true;
    try {
      consumer->close();  // leaves the group now (its revoke produces and commits nothing)
    } catch (...) {
    }
    publish();
    return 1;
  }
};

Service::Service(ServiceOptions options) {
  if (options.brokers.empty() && options.config.kafka.brokers) options.brokers = *options.config.kafka.brokers;
  if (options.brokers.empty()) throw std::invalid_argument("no Kafka brokers given (kafka.brokers or --brokers)");
  if (options.config.kafka.input_topics.empty()) throw std::invalid_argument("kafka.input_topics is empty");
  impl_ = std::make_unique<Impl>(std::move(options), stop_);
}

Service::~Service() = default;

int Service::run() { return impl_->run(); }
const std::string& Service::fatal_error() const { return impl_->fatal_error; }
ServiceSnapshot Service::snapshot() const {
  ServiceSnapshot s = impl_->stats;
  s.engine = impl_->engine_stats;
  return s;
}

}  // namespace neardup::stream
