// The two ways of delivering (delivery.h): at-least-once (offsets commit once
// acknowledged) and exactly-once (one Kafka transaction per commit interval).
#include "stream/service/delivery.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "stream/core/crash_points_testing.h"
#include "stream/core/process.h"
#include "stream/kafka/clients/transaction.h"
#include "stream/service/decider.h"

namespace neardup::stream {

namespace {

using Clock = std::chrono::steady_clock;
using kafka::KafkaError;

void crash_point(const DeliveryContext& c, std::string_view point) {
  if (c.crash_points.crash_at(point)) throw SimulatedCrash{};
}

class AtLeastOnceDelivery final : public Delivery {
 public:
  explicit AtLeastOnceDelivery(const DeliveryContext& context) : c_(context) {
    c_.consumer.on_commit([this](kafka::ErrorCode err, const kafka::TopicPartitions* offsets) {
      on_commit_result(err, offsets);
    });
  }

  bool transactional() const override { return false; }
  void start() override {}
  void commit(bool sync) override {
    crash_point(c_, "commit");
    commit_acknowledged(sync, nullptr);
  }
  bool commit_due() const override { return false; }
  void commit_decided() override {}

  std::string hand_over(const kafka::TopicPartitions& parts,
                        std::chrono::milliseconds drain_limit) override {
    const bool drained = c_.loop.drain(drain_limit);
    if (!drained) {
      log(config::LogLevel::error, "revoke: " + std::to_string(c_.producer.in_flight()) +
                                       " output record(s) still unacknowledged after " +
                                       std::to_string(drain_limit.count()) +
                                       " ms; their offsets stay uncommitted");
    }
    bool committed = false;
    try {
      committed = commit_acknowledged(true, &parts);
    } catch (const KafkaError& e) {
      log(config::LogLevel::warn, std::string("revoke: ") + e.what());
    }
    return !committed ? "; the commit failed, so their messages since the last commit will be "
                        "read again"
           : drained  ? ", progress committed"
                      : ", progress committed up to the first unacknowledged output";
  }

  void abandon() override {
    // Commit only what is fully acknowledged, then leave.
    c_.producer.poll(std::chrono::milliseconds(0));
    commit_acknowledged(true, nullptr);
  }

  /// A new generation: commits work again.
  void assigned() override { commits_failing_since_.reset(); }
  bool holds_input() const override { return commits_failing_since_.has_value(); }
  bool failure_is_fatal(kafka::ErrorCode, bool) const override { return true; }

  // Nothing is in a transaction: a refused record goes to the dead letters.
  bool refused_by_transaction(kafka::ErrorCode) override { return false; }
  bool keep(SourceIndex, Offset, std::string_view, bool, kafka::ErrorCode) override {
    return false;
  }
  std::optional<Refusal> take(SourceIndex, Offset) override { return std::nullopt; }

 private:
  /// Commits what is acknowledged (of `subset`'s partitions, if given);
  /// false when the commit failed (logged; a later one carries the offsets).
  bool commit_acknowledged(bool sync, const kafka::TopicPartitions* subset);
  /// The outcome of an offset commit (librdkafka's callback): a failed one is
  /// offered again and holds the input back until one succeeds or the group
  /// is joined again.
  void on_commit_result(kafka::ErrorCode err, const kafka::TopicPartitions* offsets);

  const DeliveryContext c_;
  std::optional<Clock::time_point> commits_failing_since_;  // the first failure since a success
  std::uint64_t commit_failures_logged_ = 0;
};

bool AtLeastOnceDelivery::commit_acknowledged(bool sync, const kafka::TopicPartitions* subset) {
  std::vector<SourceIndex> only;
  if (subset) {
    for (const kafka::TopicPartition& p : *subset)
      only.push_back(c_.sources.intern(p.topic, p.partition));
  }
  const std::vector<OffsetLedger::Commit> commits =
      c_.ledger.take_commits(subset ? &only : nullptr);
  c_.stats.committed =
      c_.ledger.finished();  // counted when finished, committed by this call or a later one
  if (commits.empty()) return true;
  kafka::TopicPartitions list(static_cast<int>(commits.size()));
  for (const auto& commit : commits) {
    const Source& src = c_.sources[commit.source];
    list.add(src.topic, src.partition, commit.offset.value);
  }
  const kafka::ErrorCode err = c_.consumer.commit(list, !sync);
  if (err && err != kafka::errc::no_offset) {
    // (the commit callback saw it too, when the request was sent)
    for (const auto& commit : commits) c_.ledger.commit_failed(commit.source);
    on_commit_result(err, nullptr);
    return false;
  }
  return true;
}

void AtLeastOnceDelivery::on_commit_result(kafka::ErrorCode err,
                                           const kafka::TopicPartitions* offsets) {
  if (err == kafka::errc::no_offset) return;
  bool failed = err != kafka::errc::no_error;
  kafka::ErrorCode cause = err;
  for (std::size_t i = 0; offsets && i < offsets->size(); ++i) {
    const kafka::TopicPartition p = (*offsets)[i];
    if (!err && !p.error) continue;
    failed = true;
    if (!cause) cause = p.error;
    const SourceIndex source = c_.sources.intern(p.topic, p.partition);
    if (c_.sources[source].assigned) c_.ledger.commit_failed(source);  // offered again
  }
  if (!failed) {
    if (commits_failing_since_) {
      log(config::LogLevel::info,
          "offset commits succeed again; input resumed (" +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 Clock::now() - *commits_failing_since_)
                                 .count()) +
              " ms after the first failure)");
      commits_failing_since_.reset();
    }
    return;
  }
  if (!commits_failing_since_) {
    commits_failing_since_ = Clock::now();
    if (commit_failures_logged_++ < 20) {
      log(config::LogLevel::warn,
          std::string("offset commit failed (") + kafka::describe(cause) +
              "): input paused until a commit succeeds or the group is joined again (what was "
              "handled since the last commit is read again after a rejoin)");
    }
  }
}

class ExactlyOnceDelivery final : public Delivery {
 public:
  ExactlyOnceDelivery(const DeliveryContext& context, std::string transactional_id)
      : c_(context),
        transactional_id_(std::move(transactional_id)),
        txn_(c_.producer, c_.consumer, std::chrono::seconds(30),
             "another producer took transactional.id '" + transactional_id_ +
                 "': this instance restarted elsewhere, or another instance has the same "
                 "kafka.transactional_id (each instance needs its own, stable across its "
                 "restarts)") {}

  bool transactional() const override { return true; }
  void start() override {
    log(config::LogLevel::info, "exactly-once: transactional.id '" + transactional_id_ + "'");
    txn_.start();
    c_.loop.decided_for_good();  // (an abort goes back to what the decider restored)
  }
  void commit(bool) override { commit_transaction(); }
  bool commit_due() const override { return !transaction_refusal_.empty(); }
  void commit_decided() override { commit_transaction(); }
  std::string hand_over(const kafka::TopicPartitions&, std::chrono::milliseconds) override {
    return ", progress committed in the transaction";
  }
  void abandon() override {
    txn_.abort(false);  // (nothing of it becomes visible; its messages are read again)
  }
  /// A record in the transaction that failed aborts it; its messages are
  /// judged again. Only a bare dead letter refused as a record stops the service.
  bool failure_is_fatal(kafka::ErrorCode err, bool decider_record) const override {
    return !decider_record && kafka::classify(err) == kafka::Severity::message;
  }

  /// A transactional producer takes no record while its transaction must be
  /// aborted (librdkafka answers _STATE): the record is fine, the transaction
  /// is not. It is aborted and its input judged again; a dead letter would
  /// only be refused the same way.
  bool refused_by_transaction(kafka::ErrorCode err) override {
    if (transaction_refusal_.empty())
      transaction_refusal_ = "the transaction refuses records: " + kafka::describe(err);
    return true;
  }
  bool keep(SourceIndex source, Offset offset, std::string_view topic, bool was_dead_letter,
            kafka::ErrorCode err) override {
    Refusal& r = refused_[{source, offset}];
    if (was_dead_letter) {
      r.dead_letter_refused = true;
      r.reason += std::string("; dead letter rejected by the broker: ") + kafka::describe(err);
    } else if (r.reason.empty()) {
      r.reason =
          "output to '" + std::string(topic) + "' rejected by the broker: " + kafka::describe(err);
    }
    return true;
  }
  std::optional<Refusal> take(SourceIndex source, Offset offset) override {
    if (refused_.empty()) return std::nullopt;
    const auto it = refused_.find({source, offset});
    if (it == refused_.end()) return std::nullopt;
    Refusal refusal = std::move(it->second);
    refused_.erase(it);
    return refusal;
  }

 private:
  /// Commits the open transaction with the input offsets of every message
  /// handled in it (their outputs are in it); on an abort, the input is
  /// rewound to the last committed offsets.
  void commit_transaction();
  /// After an abort: what the aborted transaction held is read and judged
  /// again from the last committed offsets (the window keeps its entries; a
  /// message is never its own duplicate, so the verdicts repeat).
  void rewind();

  const DeliveryContext c_;
  const std::string transactional_id_;
  TransactionCycle txn_;
  /// Why the producer refused a record for a reason of its transaction's, not
  /// of the record's (empty: it did not). Such a transaction must be aborted,
  /// never committed: the record is not in it.
  std::string transaction_refusal_;
  std::map<std::pair<SourceIndex, Offset>, Refusal> refused_;  // by (source, input offset)
};

void ExactlyOnceDelivery::commit_transaction() {
  c_.loop.flush_decided();
  if (!transaction_refusal_.empty()) {
    log(config::LogLevel::warn,
        "transaction aborted (its messages are judged again): " + transaction_refusal_);
    txn_.abort();
    rewind();
    return;
  }
  kafka::TopicPartitions offsets(8);
  std::vector<SourceIndex> moved;
  for (const SourceIndex i : c_.sources.indices()) {
    const Source& src = c_.sources[i];
    if (!src.assigned || src.position < 0 || src.position == src.committed) continue;
    offsets.add(src.topic, src.partition, src.position);
    moved.push_back(i);
  }
  if (offsets.empty()) return;  // nothing was handled: the transaction is empty
  crash_point(c_, "commit");
  if (txn_.commit(offsets) == TransactionCycle::Outcome::aborted) {
    rewind();
    return;
  }
  for (const SourceIndex i : moved) c_.sources[i].committed = c_.sources[i].position;
  c_.loop.decided_for_good();
  if (c_.commit_offsets_after_transaction) {
    if (const kafka::ErrorCode err = c_.consumer.commit(offsets, false);
        err && err != kafka::errc::no_offset) {
      log(config::LogLevel::warn,
          std::string("offset commit after the transaction failed: ") + kafka::describe(err));
    }
  }
  c_.ledger.take_commits();  // (everything is acknowledged: the commit flushed)
  c_.stats.committed = c_.ledger.finished();
}

void ExactlyOnceDelivery::rewind() {
  transaction_refusal_.clear();
  // Their requests were decided (they are outside the transaction): the
  // verdicts that still come are ignored, and the messages, read again, are
  // judged again (each finds its own window entry, never its own duplicate).
  c_.loop.drop_uncommitted();
  kafka::TopicPartitions list(8);
  for (const SourceIndex i : c_.sources.indices()) {
    Source& src = c_.sources[i];
    const std::int64_t to = src.committed >= 0 ? src.committed : src.first_read;
    if (!src.assigned || to < 0) continue;
    list.add(src.topic, src.partition, to);
    src.position = to;
    src.first_read = -1;
    c_.ledger.assign(i);
  }
  if (list.empty()) return;
  if (const std::string what = c_.consumer.seek(list, std::chrono::seconds(10)); !what.empty()) {
    throw KafkaError("cannot rewind the input after an aborted transaction: " + what,
                     kafka::errc::fail, kafka::Severity::fatal);
  }
}

}  // namespace

std::unique_ptr<Delivery> make_at_least_once_delivery(const DeliveryContext& context) {
  return std::make_unique<AtLeastOnceDelivery>(context);
}

std::unique_ptr<Delivery> make_exactly_once_delivery(const DeliveryContext& context,
                                                     std::string transactional_id) {
  return std::make_unique<ExactlyOnceDelivery>(context, std::move(transactional_id));
}

}  // namespace neardup::stream
