#pragma once
// A group consumer: subscribe or assign, poll, commit, close.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stream/kafka/errors.h"
#include "stream/kafka/handle.h"
#include "stream/kafka/message.h"
#include "stream/kafka/properties.h"
#include "stream/kafka/topic_partitions.h"

namespace neardup::stream {
class BrokerHealth;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// librdkafka's event queue, opaque (consumer.cc converts it).
struct QueueHandle;

/// A group consumer (subscribe, manual offset commit). The rebalance handler
/// runs inside poll_batch() on the caller's thread, before the assignment
/// changes, so the caller can flush and commit what it has done.
/// Not thread-safe: one thread polls; request_stop()-style flags live outside.
class Consumer {
 public:
  /// `assigned` true for an assignment, false for a revocation; `partitions`
  /// are the ones that change hands.
  using RebalanceHandler = std::function<void(bool assigned, const TopicPartitions& partitions)>;

  /// Throws KafkaError when the client cannot be created. `health` as for
  /// Producer; served inside poll_batch().
  Consumer(const Properties& properties, RebalanceHandler on_rebalance,
           BrokerHealth* health = nullptr);
  /// A consumer without a rebalance handler (assign(), or a group that needs none).
  Consumer(const Properties& properties, std::nullptr_t, BrokerHealth* health = nullptr);
  /// Closes (leaves the group, at most kCloseBudget) and destroys, waiting at
  /// most kDestroyBudget for librdkafka's threads: one that does not end (seen
  /// with librdkafka 2.0.2 after the consumer's topics were deleted) is left
  /// to the process's exit, logged and counted in abandoned_clients().
  ~Consumer();
  /// (once one destroy was abandoned, the next ones get kDestroyBudgetAfterAbandon:
  /// their threads wait on the same brokers)
  static constexpr std::chrono::seconds kDestroyBudget{3};
  static constexpr std::chrono::milliseconds kDestroyBudgetAfterAbandon{500};
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  void subscribe(const std::vector<std::string>& topics);
  /// Up to `max` messages (or error events), appended to `out`: waits up to
  /// `timeout` for the first, then takes what is already fetched without
  /// waiting (librdkafka's batch call alone would wait for all `max`).
  void poll_batch(std::vector<MessagePtr>& out, std::size_t max, std::chrono::milliseconds timeout);
  /// Commits the given offsets (the next offset to read). Synchronous unless
  /// `async`. Throws KafkaError for fatal errors; returns the error otherwise
  /// (errc::no_offset: there was nothing to commit).
  ErrorCode commit(const TopicPartitions& offsets, bool async);
  /// The outcome of every offset commit (`err` the request's; each partition
  /// may carry its own; `offsets` may be null), served inside poll_batch() (or
  /// commit(), when synchronous).
  using CommitHandler = std::function<void(ErrorCode err, const TopicPartitions* offsets)>;
  void on_commit(CommitHandler handler) { on_commit_ = std::move(handler); }

  /// Reads exactly `partitions` from their offsets (kOffsetBeginning...),
  /// outside any group rebalance. Returns the error, if any.
  ErrorCode assign(const TopicPartitions& partitions);
  /// The partitions assigned now. Returns the error, if any, and an empty list then.
  ErrorCode assignment(TopicPartitions& out) const;
  /// Whether the current assignment was lost (a session timeout, a fencing):
  /// another member may own those partitions already.
  bool assignment_lost() const;
  /// Whether the group rebalances cooperatively (incremental assignments).
  bool cooperative() const;
  /// Stops or restarts fetching `partitions` (they stay assigned).
  ErrorCode pause(const TopicPartitions& partitions);
  ErrorCode resume(const TopicPartitions& partitions);
  /// Moves the next read of each partition to its offset, waiting up to
  /// `timeout`. Returns "" or librdkafka's reason (the first partition that
  /// refused, when one did).
  std::string seek(const TopicPartitions& partitions, std::chrono::milliseconds timeout);
  /// Sets each entry's offset to the group's committed offset (kOffsetInvalid:
  /// none), asking the coordinator and waiting up to `timeout`. Returns the
  /// request's error; each entry may carry its own.
  ErrorCode committed(TopicPartitions& partitions, std::chrono::milliseconds timeout);

  /// A partition's low (log start) and high (next to be written) offsets.
  struct Watermarks {
    ErrorCode error = errc::no_error;  ///< no offsets when set
    std::int64_t low = 0;
    std::int64_t high = 0;
  };
  /// Asks the partition's leader, waiting up to `timeout`.
  Watermarks query_watermarks(const std::string& topic, std::int32_t partition,
                              std::chrono::milliseconds timeout) const;
  /// What the last fetch response said, without a request (the high offset
  /// is the broker's as of then; an error while there was none).
  Watermarks cached_watermarks(const std::string& topic, std::int32_t partition) const;
  /// As Producer::partition_count.
  int partition_count(const std::string& topic, std::chrono::milliseconds timeout) const;
  /// Each entry's offset is a time (ms since the epoch) on the way in and, on
  /// the way out, the first offset of its partition stamped at or after that
  /// time (kOffsetEnd: none is), as the partition's leader answers; waits up
  /// to `timeout`. Returns the request's error; each entry may carry its own.
  ErrorCode offsets_for_times(TopicPartitions& partitions, std::chrono::milliseconds timeout) const;
  /// Leaves the group (serving a final revocation through the handler on this
  /// thread), waiting at most kCloseBudget: brokers that are gone, or topics
  /// deleted under the consumer, can keep librdkafka's close from ever
  /// finishing. Returns false when it did not finish (logged; the consumer is
  /// then destroyed without waiting for it, and counted in abandoned_clients()
  /// if even that does not finish). Idempotent.
  /// A cooperative-sticky consumer that has joined its group but not yet been
  /// assigned first waits for that assignment (up to 2 s, polling without
  /// telling the handler): librdkafka before 2.3.0 aborts the process when
  /// such a consumer is destroyed (confluentinc/librdkafka#4312). If none comes (or it
  /// never joined), the handle is left undestroyed (its memory and threads,
  /// until the process exits).
  bool close();
  static constexpr std::chrono::seconds kCloseBudget{4};
  bool fatal() const { return !fatal_reason_.empty(); }
  /// The fatal error as "ERR_NAME: text", also when a polled message reported
  /// it (errc::fatal) before the error callback ran; "" while there is none.
  std::string fatal_reason() const;
  /// The fatal error's own code (e.g. errc::fenced_instance), as librdkafka
  /// holds it; errc::no_error while there is none.
  ErrorCode fatal_code() const;

  /// librdkafka's handle, for stream/kafka/ itself (the transaction cycle).
  ClientHandle* handle() const { return rk_.get(); }

 private:
  /// What librdkafka's callbacks reach (consumer.cc).
  struct Callbacks;
  void create(const Properties& properties);
  bool close_within(std::chrono::milliseconds budget);

  RebalanceHandler on_rebalance_;
  CommitHandler on_commit_;
  BrokerHealth* health_;
  std::string fatal_reason_;
  HandlePtr rk_;
  QueueHandle* queue_ = nullptr;
  bool closed_ = false;
  bool close_finished_ = true;  // false: the close ran out of time (destroy without it)
  bool subscribed_ = false;
  bool cooperative_configured_ = false;  // partition.assignment.strategy names cooperative-sticky
  bool assigned_once_ = false;           // a rebalance has assigned (perhaps no partitions)
  bool settling_ = false;                // close() waits for that: the handler hears nothing
};

/// Kafka clients (Consumer) whose close or destroy ran out of its budget:
/// their threads may still run, so a process with any should end with _exit
/// (its static destructors would race those threads). Thread-safe.
int abandoned_clients();
/// Of those, the consumers that did not finish leaving their group: what they
/// were to commit may not be committed, and the process should end with a
/// non-zero status. Thread-safe.
int unfinished_closes();

}  // namespace neardup::stream::kafka
