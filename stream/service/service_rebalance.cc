#include "stream/service/service_impl.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

void Service::Impl::on_rebalance(bool assigned, const kafka::TopicPartitions& parts) {
  if (input_held) {
    // librdkafka keeps a partition's pause across its revocation and a later
    // assignment to this member (it would never be read again): what leaves
    // or arrives is resumed here, before librdkafka fetches it, and
    // hold_back_input pauses the assignment again while the hold applies.
    consumer->resume(parts);
  }
  if (assigned) {
    for (const kafka::TopicPartition& p : parts) {
      const SourceIndex index = sources.intern(p.topic, p.partition);
      sources[index].assigned = true;
      sources[index].position = sources[index].committed = sources[index].first_read = -1;
      ledger.assign(index);
    }
    stats.assigned = true;
    log(config::LogLevel::info, "assigned " + std::to_string(parts.size()) + " partition(s)");
    // A new generation: commits work again, and (eager protocol) the whole
    // assignment comes unpaused; a cooperative one keeps what stays paused.
    delivery->assigned();
    if (!consumer->cooperative()) reapply_hold = true;
    if (abandoning) return;
    learn_committed_positions(parts);
    try {  // nothing may unwind through librdkafka's frames: raised after the poll
      decider->assigned();
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
    if (decider->waiting()) {
      delivery->commit_decided();  // (exactly-once: what was decided so far commits)
      // Briefly: a judge that is down (it may be the instance that just left)
      // must not hold up the group's rebalance; what stays unanswered is read
      // again by the partitions' next owner and gets the same verdicts.
      const auto wait = std::min(revoke_drain, std::chrono::milliseconds(2000));
      if (!decider->settle(wait)) {
        log(config::LogLevel::warn, "revoke: " + std::to_string(decider->unanswered()) +
                                        " message(s) unanswered by the judge after " +
                                        std::to_string(wait.count()) +
                                        " ms; their offsets stay uncommitted (read again)");
      }
    }
    delivery->commit_decided();  // (an abort rewinds; the partitions go all the same)
  } catch (const KafkaError& e) {
    if (rebalance_fatal.empty()) rebalance_fatal = e.what();
  } catch (...) {
    if (!rebalance_exception) rebalance_exception = std::current_exception();
  }
  // Their progress is made durable (delivery.h), then they go.
  const std::string how = delivery->hand_over(parts, revoke_drain);
  release(parts);
  log(config::LogLevel::info, "revoked " + std::to_string(parts.size()) + " partition(s)" + how);
}

void Service::Impl::release(const kafka::TopicPartitions& parts) {
  for (const kafka::TopicPartition& p : parts) {
    const SourceIndex index = sources.intern(p.topic, p.partition);
    sources[index].assigned = false;
    ledger.revoke(index);
  }
  stats.assigned =
      std::any_of(sources.begin(), sources.end(), [](const Source& s) { return s.assigned; });
}

void Service::Impl::learn_committed_positions(const kafka::TopicPartitions& parts) {
  kafka::TopicPartitions committed(static_cast<int>(parts.size()));
  for (const kafka::TopicPartition& p : parts) committed.add(std::string(p.topic), p.partition);
  const kafka::ErrorCode err = consumer->committed(committed, std::chrono::seconds(2));
  if (err != kafka::errc::no_error) {
    log(config::LogLevel::debug,
        std::string("committed offsets unknown (the lag counts from the partitions' "
                    "start until their first message): ") +
            kafka::describe(err));
    return;
  }
  for (const kafka::TopicPartition& e : committed) {
    if (e.error != kafka::errc::no_error || e.offset < 0) continue;
    Source& src = sources[sources.intern(e.topic, e.partition)];
    src.position = src.committed = e.offset;
  }
}

}  // namespace neardup::stream
