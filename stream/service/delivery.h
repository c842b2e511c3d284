#pragma once
// How `neardup run` delivers: the seam between the service's loop (consume,
// decide, route: service.cc) and the ways of making a batch's outputs and its
// input offsets durable, one implementation each, chosen once when the
// service is built (kafka.delivery):
//   at-least-once: outputs are produced as they are decided; the input
//       offsets commit once every output before them is acknowledged
//       (OffsetLedger), so a crash replays, never loses, what was in flight.
//       A failed offset commit holds the input back until one succeeds or the
//       group is joined again.
//   exactly-once: outputs, changelog entries and input offsets commit in one
//       Kafka transaction per commit interval (TransactionCycle); an aborted
//       transaction rewinds the input to the last committed offsets, and its
//       messages are read and judged again.
// A Delivery owns what differs between the two: the commits, what a revoke
// and a fatal error leave behind, which failed delivery stops the service,
// what becomes of a refused record (the router's RefusedRecords), and when
// the decider's state is for good (its checkpoints).
//
// The seam runs one way: a Delivery gets the service's clients and books at
// construction (DeliveryContext) and calls the loop back only through its
// DeliveryLoop. Pipeline thread only (some calls come inside librdkafka
// callbacks served by the loop's poll calls).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/service/output_router.h"

namespace neardup::stream {

class CrashPoints;

/// The loop's side of the seam: what a Delivery asks of the service.
/// Implemented by the service; pipeline thread only.
class DeliveryLoop {
 public:
  /// Buffered outputs (the decider's changelog entries) go out now.
  virtual void flush_decided() = 0;
  /// Everything decided so far is committed for good (exactly-once: at start
  /// and at each transaction's commit): the decider checkpoints its state.
  virtual void decided_for_good() = 0;
  /// After an aborted transaction: whatever was handled since the last commit
  /// is dropped (the worker's batch, resends queued, messages awaiting
  /// verdicts); the input is read again from the committed offsets.
  virtual void drop_uncommitted() = 0;
  /// Waits until every produced record is acknowledged (or `limit` passes);
  /// false if some are not.
  virtual bool drain(std::chrono::milliseconds limit) = 0;

  virtual ~DeliveryLoop() = default;
};

/// What a Delivery is built from. Every reference outlives it.
struct DeliveryContext {
  kafka::Producer& producer;  ///< the service's: its outputs and changelog entries
  kafka::Consumer& consumer;  ///< the service's input consumer (its offsets)
  Sources& sources;           ///< the input partitions: positions and committed offsets
  OffsetLedger& ledger;       ///< which offsets are acknowledged
  ServiceSnapshot& stats;     ///< `committed`
  /// exactly-once: also commit each transaction's offsets through the consumer
  /// (ServiceOptions::commit_offsets_after_transaction).
  bool commit_offsets_after_transaction = true;
  /// Where "commit" stops dead (stream/core/crash_points_testing.h; never, but in tests).
  const CrashPoints& crash_points;
  DeliveryLoop& loop;
};

/// One way of delivering. Also the router's RefusedRecords: what becomes of a
/// record refused for good depends on it.
class Delivery : public RefusedRecords {
 public:
  /// Whether outputs commit in transactions: a decider's records on the
  /// service's producer are in them, and the group's judge commits its own
  /// in transactions too. Asked once, when the decider is built.
  virtual bool transactional() const = 0;
  /// Before the input is subscribed, once the decider started (exactly-once:
  /// the producer's transactions begin; the decider's state is committed as
  /// it stands). Throws kafka::KafkaError.
  virtual void start() = 0;
  /// The periodic commit, and the shutdown's last one (`sync`: waits for the
  /// broker's answer). at-least-once: the acknowledged offsets; exactly-once:
  /// the open transaction with the offsets of everything handled in it.
  /// Throws kafka::KafkaError (a fatal one, or a rewind that failed).
  virtual void commit(bool sync) = 0;
  /// Whether a commit is due before the interval ends (exactly-once: a
  /// record was refused by the transaction, which must abort now).
  virtual bool commit_due() const = 0;
  /// What is decided commits now, before the loop waits for verdicts or
  /// drains (a revoke, the shutdown). exactly-once: the open transaction;
  /// at-least-once: nothing (offsets commit once acknowledged).
  virtual void commit_decided() = 0;
  /// A revoke, once the partitions' messages are decided (commit_decided):
  /// their progress is made durable within `drain_limit`. Returns how, for
  /// the log line ("revoked N partition(s)" + it). Catches its own errors.
  virtual std::string hand_over(const kafka::TopicPartitions& parts,
                                std::chrono::milliseconds drain_limit) = 0;
  /// After a fatal error: what is certain stays (at-least-once: the
  /// acknowledged offsets commit), the rest is dropped (exactly-once: the
  /// transaction aborts). Best effort; may throw.
  virtual void abandon() = 0;
  /// Partitions were assigned (a new generation of the group).
  virtual void assigned() {}
  /// Whether the input must pause (at-least-once: offset commits fail).
  virtual bool holds_input() const { return false; }
  /// A record of the service's producer failed for good with `err` (after
  /// librdkafka's retries) and nothing took it (the router did not send it to
  /// the dead letters): whether the service must stop, never committing past
  /// it. `decider_record`: a changelog batch. at-least-once: always;
  /// exactly-once: only an output refused as a record (its bare dead letter),
  /// since anything else aborts its transaction and is judged again.
  virtual bool failure_is_fatal(kafka::ErrorCode err, bool decider_record) const = 0;
};

std::unique_ptr<Delivery> make_at_least_once_delivery(const DeliveryContext& context);
/// `transactional_id`: the producer's (its properties carry it already).
std::unique_ptr<Delivery> make_exactly_once_delivery(const DeliveryContext& context,
                                                     std::string transactional_id);

}  // namespace neardup::stream
