#include "stream/service/service_impl.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

void Service::Impl::on_delivery(const rd_kafka_message_t& m) {
  const Ticket ticket =
      Ticket::unpack(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m._private)));
  if (is_decider_record(ticket)) {  // a changelog batch or a judge request
    if (m.err) {
      ++stats.produce_errors;
      // A request is never in a transaction: nothing else would notice. A
      // changelog batch under exactly-once is: its transaction aborts.
      if (is_request_delivery(ticket) || !exactly_once) note_delivery_fatal(m);
    }
    decider->on_delivery(ticket, !m.err);  // (a request's verdict acknowledges its messages)
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

void Service::Impl::note_delivery_fatal(const rd_kafka_message_t& m) {
  if (!delivery_fatal.empty()) return;
  delivery_fatal = std::string("cannot deliver to '") + rd_kafka_topic_name(m.rkt) +
                   "': " + rd_kafka_err2str(m.err) + " (" +
                   std::string(kafka::to_string(kafka::classify(m.err))) + " error after retries)";
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
  kafka::PartitionListPtr offsets(rd_kafka_topic_partition_list_new(8));
  std::vector<SourceIndex> moved;
  for (const SourceIndex i : sources.indices()) {
    const Source& src = sources[i];
    if (!src.assigned || src.position < 0 || src.position == src.committed) continue;
    rd_kafka_topic_partition_list_add(offsets.get(), src.topic.c_str(), src.partition)->offset =
        src.position;
    moved.push_back(i);
  }
  if (offsets->cnt == 0) return;  // nothing was handled: the transaction is empty
  crash_point("commit");
  if (txn->commit(*offsets) == TransactionCycle::Outcome::aborted) {
    rewind();
    return;
  }
  for (const SourceIndex i : moved) sources[i].committed = sources[i].position;
  if (options.commit_offsets_after_transaction) {
    if (const rd_kafka_resp_err_t err = consumer->commit(*offsets, false);
        err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      log(config::LogLevel::warn,
          std::string("offset commit after the transaction failed: ") + rd_kafka_err2str(err));
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
  kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(8));
  for (const SourceIndex i : sources.indices()) {
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
    throw KafkaError("cannot rewind the input after an aborted transaction: " + what,
                     RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
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

bool Service::Impl::commit(bool sync, const rd_kafka_topic_partition_list_t* subset) {
  std::vector<SourceIndex> only;
  if (subset) {
    for (int i = 0; i < subset->cnt; ++i)
      only.push_back(sources.intern(subset->elems[i].topic, subset->elems[i].partition));
  }
  const std::vector<OffsetLedger::Commit> commits = ledger.take_commits(subset ? &only : nullptr);
  stats.committed =
      ledger.finished();  // counted when finished, committed by this call or a later one
  if (commits.empty()) return true;
  kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(commits.size())));
  for (const auto& c : commits) {
    const Source& src = sources[c.source];
    rd_kafka_topic_partition_list_add(list.get(), src.topic.c_str(), src.partition)->offset =
        c.offset;
  }
  const rd_kafka_resp_err_t err = consumer->commit(*list, !sync);
  if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
    // (the commit callback saw it too, when the request was sent)
    for (const auto& c : commits) ledger.commit_failed(c.source);
    on_commit_result(err, nullptr);
    return false;
  }
  return true;
}

void Service::Impl::on_commit_result(rd_kafka_resp_err_t err,
                                     const rd_kafka_topic_partition_list_t* offsets) {
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
  bool failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
  rd_kafka_resp_err_t cause = err;
  for (int i = 0; offsets && i < offsets->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = offsets->elems[i];
    if (!err && !p.err) continue;
    failed = true;
    if (!cause) cause = p.err;
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
          std::string("offset commit failed (") + rd_kafka_err2str(cause) +
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
  rd_kafka_topic_partition_list_t* parts = nullptr;
  if (rd_kafka_assignment(consumer->handle(), &parts) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  kafka::PartitionListPtr owned(parts);
  const rd_kafka_resp_err_t err = hold ? rd_kafka_pause_partitions(consumer->handle(), parts)
                                       : rd_kafka_resume_partitions(consumer->handle(), parts);
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
