#include "stream/service/service_impl.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

void Service::Impl::on_delivery(kafka::Message m) {
  const Ticket ticket =
      Ticket::unpack(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m.opaque())));
  if (is_decider_record(ticket)) {  // a changelog batch or a judge request
    if (m.error()) {
      ++stats.produce_errors;
      // A request is never in a transaction: nothing else would notice. A
      // changelog batch under exactly-once is: its transaction aborts.
      if (is_request_delivery(ticket) || !exactly_once) note_delivery_fatal(m);
    }
    decider->on_delivery(ticket, !m.error());  // (a request's verdict acknowledges its messages)
    return;
  }
  if (m.error()) {
    ++stats.produce_errors;
    // A record the broker refuses as a record goes to the dead letters
    // (router->resend() after the poll); anything else is final after
    // librdkafka's own retries: never commit past it, stop, so a restart replays it.
    // (exactly-once: the transaction aborts; the router remembers a refused
    // record, so the messages judged again send it to the dead letters.)
    if (!router->on_delivery_error(m, ticket) &&
        (!exactly_once || kafka::classify(m.error()) == kafka::Severity::message)) {
      note_delivery_fatal(m);  // (a bare dead letter refused: a cluster fault, in either mode)
    }
    return;
  }
  ++stats.produced;
  if (m.topic() == cfg.kafka.dead_letter_topic) ++stats.dead_letters;
  acknowledge(ticket);
}

void Service::Impl::note_delivery_fatal(kafka::Message m) {
  if (!delivery_fatal.empty()) return;
  delivery_fatal =
      "cannot deliver to '" + std::string(m.topic()) + "': " + kafka::describe(m.error()) + " (" +
      std::string(kafka::to_string(kafka::classify(m.error()))) + " error after retries)";
}

void Service::Impl::acknowledge(Ticket ticket) {
  // The delivery report's own timestamp is the broker's (log append time
  // with some brokers), so the input's timestamp is kept in the ledger.
  if (auto ts = ledger.acknowledge(ticket)) stats.end_to_end.observe_ms(wall_ms() - *ts);
}

void Service::Impl::serve_deliveries(std::chrono::milliseconds timeout) {
  decider->serve();
  producer->poll(timeout);
  try {
    router->resend();
  } catch (const KafkaError& e) {
    if (delivery_fatal.empty()) delivery_fatal = e.what();
  }
}

void Service::Impl::commit_transaction() {
  decider->flush();
  if (const std::string& refusal = router->transaction_refusal(); !refusal.empty()) {
    log(config::LogLevel::warn, "transaction aborted (its messages are judged again): " + refusal);
    txn->abort();
    rewind();
    return;
  }
  kafka::TopicPartitions offsets(8);
  std::vector<SourceIndex> moved;
  for (const SourceIndex i : sources.indices()) {
    const Source& src = sources[i];
    if (!src.assigned || src.position < 0 || src.position == src.committed) continue;
    offsets.add(src.topic, src.partition, src.position);
    moved.push_back(i);
  }
  if (offsets.empty()) return;  // nothing was handled: the transaction is empty
  crash_point("commit");
  if (txn->commit(offsets) == TransactionCycle::Outcome::aborted) {
    rewind();
    return;
  }
  for (const SourceIndex i : moved) sources[i].committed = sources[i].position;
  decider->committed();
  if (options.commit_offsets_after_transaction) {
    if (const kafka::ErrorCode err = consumer->commit(offsets, false);
        err && err != kafka::errc::no_offset) {
      log(config::LogLevel::warn,
          std::string("offset commit after the transaction failed: ") + kafka::describe(err));
    }
  }
  ledger.take_commits();  // (everything is acknowledged: the commit flushed)
  stats.committed = ledger.finished();
}

void Service::Impl::rewind() {
  if (inflight >= 0) {
    worker->wait();
    slots[std::exchange(inflight, -1)].messages.clear();  // judged, never sent: read again
  }
  router->forget_resends();
  // Their requests were decided (they are outside the transaction): the
  // verdicts that still come are ignored, and the messages, read again, are
  // judged again (each finds its own window entry, never its own duplicate).
  decider->forget();
  kafka::TopicPartitions list(8);
  for (const SourceIndex i : sources.indices()) {
    Source& src = sources[i];
    const std::int64_t to = src.committed >= 0 ? src.committed : src.first_read;
    if (!src.assigned || to < 0) continue;
    list.add(src.topic, src.partition, to);
    src.position = to;
    src.first_read = -1;
    ledger.assign(i);
  }
  if (list.empty()) return;
  if (const std::string what = consumer->seek(list, std::chrono::seconds(10)); !what.empty()) {
    throw KafkaError("cannot rewind the input after an aborted transaction: " + what,
                     kafka::errc::fail, kafka::Severity::fatal);
  }
}

void Service::Impl::commit_progress(bool sync) {
  if (txn) {
    commit_transaction();
    return;
  }
  crash_point("commit");
  commit(sync);
}

bool Service::Impl::commit(bool sync, const kafka::TopicPartitions* subset) {
  std::vector<SourceIndex> only;
  if (subset) {
    for (const kafka::TopicPartition& p : *subset)
      only.push_back(sources.intern(p.topic, p.partition));
  }
  const std::vector<OffsetLedger::Commit> commits = ledger.take_commits(subset ? &only : nullptr);
  stats.committed =
      ledger.finished();  // counted when finished, committed by this call or a later one
  if (commits.empty()) return true;
  kafka::TopicPartitions list(static_cast<int>(commits.size()));
  for (const auto& c : commits) {
    const Source& src = sources[c.source];
    list.add(src.topic, src.partition, c.offset.value);
  }
  const kafka::ErrorCode err = consumer->commit(list, !sync);
  if (err && err != kafka::errc::no_offset) {
    // (the commit callback saw it too, when the request was sent)
    for (const auto& c : commits) ledger.commit_failed(c.source);
    on_commit_result(err, nullptr);
    return false;
  }
  return true;
}

void Service::Impl::on_commit_result(kafka::ErrorCode err, const kafka::TopicPartitions* offsets) {
  if (err == kafka::errc::no_offset) return;
  bool failed = err != kafka::errc::no_error;
  kafka::ErrorCode cause = err;
  for (std::size_t i = 0; offsets && i < offsets->size(); ++i) {
    const kafka::TopicPartition p = (*offsets)[i];
    if (!err && !p.error) continue;
    failed = true;
    if (!cause) cause = p.error;
    const SourceIndex source = sources.intern(p.topic, p.partition);
    if (sources[source].assigned) ledger.commit_failed(source);  // offered again
  }
  if (!failed) {
    if (commits_failing_since) {
      log(config::LogLevel::info,
          "offset commits succeed again; input resumed (" +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 Clock::now() - *commits_failing_since)
                                 .count()) +
              " ms after the first failure)");
      commits_failing_since.reset();
    }
    return;
  }
  if (!commits_failing_since) {
    commits_failing_since = Clock::now();
    if (commit_failures_logged++ < 20) {
      log(config::LogLevel::warn,
          std::string("offset commit failed (") + kafka::describe(cause) +
              "): input paused until a commit succeeds or the group is joined again (what was "
              "handled since the last commit is read again after a rejoin)");
    }
  }
}

void Service::Impl::hold_back_input() {
  const bool behind = decider->behind();
  const bool hold = behind || commits_failing_since.has_value();
  // An eager assignment comes unpaused (on_rebalance resumed what it paused
  // before). Resuming a partition that was never paused is not harmless:
  // librdkafka restarts its fetch from the position the application last
  // saw, and what it had queued comes again.
  if (std::exchange(reapply_hold, false)) input_held = false;
  if (hold == input_held) return;
  kafka::TopicPartitions parts;
  if (consumer->assignment(parts) != kafka::errc::no_error) return;
  const kafka::ErrorCode err = hold ? consumer->pause(parts) : consumer->resume(parts);
  if (err) return;  // (tried again next iteration)
  input_held = hold;
}

bool Service::Impl::drain(std::chrono::milliseconds limit) {
  decider->flush();
  const auto deadline = Clock::now() + limit;
  while ((producer->in_flight() > 0 || router->has_resends()) && Clock::now() < deadline) {
    serve_deliveries(std::chrono::milliseconds(50));
  }
  serve_deliveries(std::chrono::milliseconds(0));
  return producer->in_flight() == 0;
}

}  // namespace neardup::stream
