#pragma once
// Exactly-once delivery (kafka.delivery: exactly-once): the transaction cycle
// of the service's producer, the way KIP-447 and librdkafka's transactional
// producer intend it. A transaction holds one commit interval's outputs
// (output, duplicates, dead letters), its window changelog entries and the
// input offsets of the messages they came from, sent with the consumer's group
// metadata so that a zombie instance (one whose partitions moved on) is fenced.
// Everything in it becomes visible to read_committed consumers at once, or not
// at all.
//
// Errors are classified once, here: retriable ones are retried within the
// timeout; one that requires an abort aborts the transaction (the caller then
// rewinds its input to the last committed offsets and judges those messages
// again); a fatal one (fenced by a newer instance with the same
// transactional.id or by a newer group generation, authorization) throws
// kafka::KafkaError with Severity::fatal.
//
// Pipeline thread only. librdkafka serves delivery reports inside commit()
// (it flushes), so the producer's delivery handler runs there too.

#include <chrono>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {

/// The default transactional.id: "neardup-<group_id>-<instance_id>" with
/// kafka.instance_id (stable across restarts wherever the instance id is),
/// else "neardup-<group_id>-<host name>".
std::string default_transactional_id(const config::KafkaOptions& kafka);

class TransactionCycle {
 public:
  /// `producer` was created with transactional.id set; `consumer` is the group member whose offsets
  /// commit.
  /// `fenced_hint` is appended to the error when another producer with the
  /// same transactional.id fenced this one (what the operator should check).
  TransactionCycle(kafka::Producer& producer, kafka::Consumer& consumer,
                   std::chrono::milliseconds timeout, std::string fenced_hint = {});

  /// Registers the transactional id (aborting what a previous run with the same
  /// id left open) and begins the first transaction. Throws kafka::KafkaError.
  void start();

  enum class Outcome { committed, aborted };
  /// Sends `offsets` (the next offset to read per partition; may be empty) with
  /// the group metadata, commits, and begins the next transaction. Returns
  /// aborted when the transaction had to be aborted (the next one is begun
  /// too). Throws kafka::KafkaError for fatal errors.
  Outcome commit(const kafka::TopicPartitions& offsets);
  /// Aborts the open transaction and begins the next (best effort when `begin_next` is false: on
  /// the way out).
  void abort(bool begin_next = true);

  std::uint64_t committed() const { return committed_; }
  std::uint64_t aborted() const { return aborted_; }

 private:
  kafka::Producer& producer_;
  kafka::Consumer& consumer_;
  const std::chrono::milliseconds timeout_;
  const std::string fenced_hint_;
  std::uint64_t committed_ = 0, aborted_ = 0;
};

}  // namespace neardup::stream
