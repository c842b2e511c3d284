#pragma once
// RAII owners of librdkafka handles (C API) and the one place where Kafka
// errors are classified: fatal (stop the service), retriable (librdkafka or the
// caller tries again) or message-level (this record is bad, the client is fine).
// Everything above this header speaks in these types, never in raw handles.

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"

namespace neardup::stream {
class BrokerHealth;
class TransactionCycle;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// A Kafka error code: librdkafka's enum itself (rd_kafka_resp_err_t), no
/// copy of ours, so a code passes this boundary as it is and `if (err)` tests
/// for an error. Above stream/kafka/, codes are named through kafka::errc and
/// printed with error_name() and describe(); nothing there names librdkafka's
/// constants (deploy/check-kafka-boundary.sh).
using ErrorCode = rd_kafka_resp_err_t;

/// The codes neardup acts on, by name (std::errc's habit).
namespace errc {
inline constexpr ErrorCode no_error = RD_KAFKA_RESP_ERR_NO_ERROR;
/// Raised by neardup itself for a failure without a librdkafka code.
inline constexpr ErrorCode fail = RD_KAFKA_RESP_ERR__FAIL;
/// The client's fatal error (see fatal_reason()).
inline constexpr ErrorCode fatal = RD_KAFKA_RESP_ERR__FATAL;
inline constexpr ErrorCode invalid_arg = RD_KAFKA_RESP_ERR__INVALID_ARG;
inline constexpr ErrorCode timed_out = RD_KAFKA_RESP_ERR__TIMED_OUT;
inline constexpr ErrorCode transport = RD_KAFKA_RESP_ERR__TRANSPORT;
inline constexpr ErrorCode all_brokers_down = RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN;
inline constexpr ErrorCode message_timed_out = RD_KAFKA_RESP_ERR__MSG_TIMED_OUT;
/// A consumer event: the partition's end was reached (enable.partition.eof).
inline constexpr ErrorCode partition_eof = RD_KAFKA_RESP_ERR__PARTITION_EOF;
/// An offset commit with nothing to commit.
inline constexpr ErrorCode no_offset = RD_KAFKA_RESP_ERR__NO_OFFSET;
inline constexpr ErrorCode unknown_topic_or_partition = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
inline constexpr ErrorCode topic_already_exists = RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
inline constexpr ErrorCode message_too_large = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
inline constexpr ErrorCode not_leader_for_partition = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
inline constexpr ErrorCode request_timed_out = RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
inline constexpr ErrorCode not_enough_replicas = RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS;
/// A static group member (group.instance.id) replaced by a newer member with
/// the same id: the coordinator fences the older, and librdkafka makes that fatal.
inline constexpr ErrorCode fenced_instance = RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
}  // namespace errc

/// The code's name without its prefix, e.g. "_TIMED_OUT" (librdkafka's
/// rd_kafka_err2name: a leading underscore marks a client-side code).
std::string error_name(ErrorCode code);
/// What the code means, for a person, e.g. "Local: Timed out".
std::string describe(ErrorCode code);

enum class Severity { fatal, retriable, message };
std::string_view to_string(Severity severity);

/// Classifies a librdkafka error code once, here. `fatal_flag` is what
/// rd_kafka_error_is_fatal() or a fatal error callback said, when known.
Severity classify(ErrorCode err, bool fatal_flag = false);

/// A Kafka failure a person can act on: what() names the operation and
/// librdkafka's reason.
class KafkaError : public std::runtime_error {
 public:
  KafkaError(const std::string& what, ErrorCode code, Severity severity)
      : std::runtime_error(what), code_(code), severity_(severity) {}
  ErrorCode code() const { return code_; }
  Severity severity() const { return severity_; }

 private:
  ErrorCode code_;
  Severity severity_;
};

/// Producer::Record::partition: the partitioner chooses (by key).
inline constexpr std::int32_t kAnyPartition = RD_KAFKA_PARTITION_UA;
/// Offsets with a meaning of their own: a partition's first and next-to-be-written
/// offsets (where to start reading), and no offset at all (none committed).
inline constexpr std::int64_t kOffsetBeginning = RD_KAFKA_OFFSET_BEGINNING;
inline constexpr std::int64_t kOffsetEnd = RD_KAFKA_OFFSET_END;
inline constexpr std::int64_t kOffsetInvalid = RD_KAFKA_OFFSET_INVALID;

using Properties = std::map<std::string, std::string>;

/// Builds an rd_kafka_conf_t; throws KafkaError naming the bad property.
/// Every handle made from it writes librdkafka's log lines through neardup's
/// logger (base/log.h: the configured format and level), with the fields
/// `client` (e.g. "rdkafka#consumer-3") and `facility` (e.g. "FAIL"); how much
/// librdkafka says is still its `log_level` property.
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;
ConfPtr make_conf(const Properties& properties);

/// librdkafka's syslog levels (0 emerg .. 7 debug) as neardup's: 0-3 error,
/// 4 warn, 5-6 info, 7 debug.
base::LogLevel log_level_of(int syslog_level);

struct MessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
/// One consumed message (or consumer event carrying an error).
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using PartitionListPtr = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using HandlePtr = std::unique_ptr<rd_kafka_t, HandleDeleter>;

/// A consumed message, consumer event or delivery report, viewed: a pointer
/// wide, copied freely, valid while the message it views (a MessagePtr, or
/// the delivery report during the handler's call). Every accessor is O(1)
/// without allocating, but topic() (a strlen), error_message() (a string) and
/// the header lookups (which parse the headers on first use, as librdkafka does).
class Message {
 public:
  /// A polled message, viewed (implicit: `kafka::Message m = polled[i];`).
  Message(const MessagePtr& message) : m_(message.get()) {}  // NOLINT(google-explicit-constructor)

  /// errc::no_error for a record; otherwise a consumer event (e.g.
  /// errc::partition_eof) or a failed delivery.
  ErrorCode error() const { return m_->err; }
  /// librdkafka's text for error(): the broker's or client's reason when it
  /// gave one, describe(error()) otherwise.
  std::string error_message() const;

  /// "" for a consumer event without a topic.
  std::string_view topic() const { return m_->rkt ? rd_kafka_topic_name(m_->rkt) : ""; }
  std::int32_t partition() const { return m_->partition; }
  std::int64_t offset() const { return m_->offset; }
  /// The record's timestamp (ms since the epoch), -1 when it has none.
  std::int64_t timestamp() const { return rd_kafka_message_timestamp(m_, nullptr); }
  /// Whether the broker stamped the record on arrival (the topic's
  /// message.timestamp.type is LogAppendTime) rather than keeping the producer's time.
  bool log_append_time() const {
    rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    rd_kafka_message_timestamp(m_, &type);
    return type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME;
  }

  /// The value; "" for a null value (has_payload() tells the two apart).
  std::string_view payload() const {
    return {static_cast<const char*>(m_->payload), m_->payload ? m_->len : 0};
  }
  bool has_payload() const { return m_->payload != nullptr; }
  /// The key; "" for a null key (has_key() tells the two apart).
  std::string_view key() const {
    return {static_cast<const char*>(m_->key), m_->key ? m_->key_len : 0};
  }
  bool has_key() const { return m_->key != nullptr; }

  /// The value of the last header named `name`, if any.
  std::optional<std::string_view> header(const char* name) const;
  /// Calls `visit(name, value)` for every header, in order.
  void for_each_header(
      const std::function<void(std::string_view name, std::string_view value)>& visit) const;

  /// Delivery reports: the Record::opaque given to produce().
  void* opaque() const { return m_->_private; }

 private:
  friend class Producer;
  friend class Headers;
  explicit Message(const rd_kafka_message_t& message) : m_(&message) {}
  const rd_kafka_message_t* m_;
};

/// One entry of a TopicPartitions: `topic` is a view into the list.
struct TopicPartition {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = kOffsetInvalid;
  /// What the broker answered for this partition (a commit, committed()).
  ErrorCode error = errc::no_error;
};

/// An owning list of topic-partitions with an offset each: what is assigned,
/// committed, looked up or sought. It holds librdkafka's list itself, so the
/// clients take it as it is (no copy). Move-only; not thread-safe. add() is
/// amortized O(1); find() is O(size).
class TopicPartitions {
 public:
  explicit TopicPartitions(int capacity = 0);
  /// A copy of librdkafka's list (stream/kafka/ and its callbacks).
  explicit TopicPartitions(const rd_kafka_topic_partition_list_t& list);
  TopicPartitions(TopicPartitions&&) noexcept = default;
  TopicPartitions& operator=(TopicPartitions&&) noexcept = default;

  void add(const std::string& topic, std::int32_t partition, std::int64_t offset = kOffsetInvalid);
  std::size_t size() const { return static_cast<std::size_t>(list_->cnt); }
  bool empty() const { return list_->cnt == 0; }
  TopicPartition operator[](std::size_t i) const {
    const rd_kafka_topic_partition_t& e = list_->elems[i];
    return {e.topic, e.partition, e.offset, e.err};
  }
  /// The entry for (topic, partition), if any.
  std::optional<TopicPartition> find(std::string_view topic, std::int32_t partition) const;
  /// Whether some entry is a partition of `topic`.
  bool has_topic(std::string_view topic) const;

  class Iterator {
   public:
    using value_type = TopicPartition;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const TopicPartitions* list, std::size_t i) : list_(list), i_(i) {}
    TopicPartition operator*() const { return (*list_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++i_;
      return before;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    const TopicPartitions* list_ = nullptr;
    std::size_t i_ = 0;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  friend class Consumer;
  friend class ::neardup::stream::TransactionCycle;
  PartitionListPtr list_;
};

/// Headers of a record to produce, owned until produce() takes them. Move-only.
class Headers {
 public:
  Headers() = default;
  /// A copy of `message`'s headers (none: empty), to send them on.
  static Headers copy_of(Message message);
  /// Appends a header (a name may repeat; readers take the last).
  void add(std::string_view name, std::string_view value);
  bool empty() const { return !headers_; }
  /// The value of the last header named `name`, if any. O(headers).
  std::optional<std::string_view> find(const char* name) const;
  /// Calls `visit(name, value)` for every header, in order.
  void for_each(
      const std::function<void(std::string_view name, std::string_view value)>& visit) const;

 private:
  friend class Producer;
  struct Deleter {
    void operator()(rd_kafka_headers_t* h) const { rd_kafka_headers_destroy(h); }
  };
  std::unique_ptr<rd_kafka_headers_t, Deleter> headers_;
};

/// statistics.interval.ms of clients that feed a BrokerHealth, unless the
/// properties set it: how soon a broker's return is seen.
inline constexpr const char* kHealthStatisticsMs = "1000";

/// Number of partitions of `topic` as the cluster reports it; 0 if the topic
/// does not exist. Throws KafkaError when the metadata request fails.
/// (Producer::partition_count and Consumer::partition_count call it.)
int partition_count(rd_kafka_t* rk, const std::string& topic, std::chrono::milliseconds timeout);

/// A topic to create through the admin API.
struct NewTopic {
  std::string name;
  int partitions = 1;
  int replication_factor = -1;                 ///< -1: the cluster's default.replication.factor
  std::map<std::string, std::string> configs;  ///< topic configs, e.g. retention.ms
};

/// What the cluster answered for one topic of create_topics() or delete_topics().
struct TopicOutcome {
  std::string name;
  ErrorCode err = errc::no_error;  ///< errc::topic_already_exists is not an error
  std::string message;             ///< the broker's, when it gave one
};

/// Creates the topics with the admin API of a client made from `properties`
/// (bootstrap.servers, security), waiting up to `timeout`; one outcome per
/// topic, in order. Throws KafkaError when the request itself fails (no broker
/// answered, a property librdkafka rejects).
std::vector<TopicOutcome> create_topics(const Properties& properties,
                                        const std::vector<NewTopic>& topics,
                                        std::chrono::milliseconds timeout);
/// Deletes the topics (and their data); as create_topics().
std::vector<TopicOutcome> delete_topics(const Properties& properties,
                                        const std::vector<std::string>& topics,
                                        std::chrono::milliseconds timeout);

/// A producer. Delivery reports are served on the thread that calls poll() or
/// flush(), through the handler given at construction.
/// Not thread-safe except produce() (librdkafka's produce is thread-safe).
class Producer {
 public:
  /// Called once per produced record with its delivery report (error() tells
  /// whether it was delivered; opaque() is the Record's).
  using DeliveryHandler = std::function<void(Message report)>;

  /// Throws KafkaError when the client cannot be created (bad property).
  /// With `health` (not owned; must outlive the producer), the client's error
  /// events and statistics feed it; statistics.interval.ms defaults to
  /// kHealthStatisticsMs then. They are served on the thread calling poll().
  Producer(const Properties& properties, DeliveryHandler on_delivery,
           BrokerHealth* health = nullptr);
  /// Without delivery reports.
  Producer(const Properties& properties, std::nullptr_t, BrokerHealth* health = nullptr);
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  struct Record {
    std::string_view topic;
    std::int32_t partition = kAnyPartition;
    std::string_view key;  ///< empty with has_key=false -> null key
    bool has_key = false;
    std::string_view value;
    bool has_value = true;
    rd_kafka_headers_t* headers = nullptr;  ///< ownership passes to produce() (even on error)
    std::int64_t timestamp_ms = 0;          ///< 0 -> now
    void* opaque = nullptr;
  };

  /// Enqueues a copy of the record. On a full local queue it serves delivery
  /// reports and waits (backpressure) until there is room. Returns
  /// errc::no_error or a message-level error (e.g. errc::message_too_large);
  /// throws KafkaError for fatal errors.
  ErrorCode produce(const Record& record);
  /// The same with `headers` (record.headers must be null); they are
  /// produce()'s, even on error.
  ErrorCode produce(const Record& record, Headers headers);

  /// Serves delivery reports; returns how many were served.
  int poll(std::chrono::milliseconds timeout);
  /// Waits until every record was delivered or failed; false on timeout.
  bool flush(std::chrono::milliseconds timeout);
  /// Records enqueued but not yet reported.
  int in_flight() const;
  /// Set by librdkafka's fatal error callback (idempotence broken, auth failed...).
  bool fatal() const { return !fatal_reason_.empty(); }
  const std::string& fatal_reason() const { return fatal_reason_; }

  /// Drops every record not yet delivered, queued or in flight, without
  /// waiting: their delivery reports (served by the next poll()) say purged.
  /// For a crash simulation or an exit that gives up on them.
  void purge();

  /// Number of partitions of `topic` as the cluster reports it; 0 if the
  /// topic does not exist. Throws KafkaError when the metadata request fails.
  int partition_count(const std::string& topic, std::chrono::milliseconds timeout) const;

  /// librdkafka's handle, for stream/kafka/ itself (the transaction cycle).
  rd_kafka_t* handle() const { return rk_.get(); }

 private:
  rd_kafka_topic_t* topic(std::string_view name);
  static void on_delivery_cb(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque);
  static void on_error_cb(rd_kafka_t*, int err, const char* reason, void* opaque);
  static int on_statistics_cb(rd_kafka_t*, char* json, size_t size, void* opaque);

  void create(const Properties& properties);

  DeliveryHandler on_delivery_;
  BrokerHealth* health_;
  std::string fatal_reason_;
  HandlePtr rk_;
  std::map<std::string, rd_kafka_topic_t*, std::less<>> topics_;
};

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
  rd_kafka_t* handle() const { return rk_.get(); }

 private:
  void create(const Properties& properties);
  bool close_within(std::chrono::milliseconds budget);
  static void on_rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void on_error_cb(rd_kafka_t*, int err, const char* reason, void* opaque);
  static int on_statistics_cb(rd_kafka_t*, char* json, size_t size, void* opaque);
  static void on_commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* offsets, void* opaque);

  RebalanceHandler on_rebalance_;
  CommitHandler on_commit_;
  BrokerHealth* health_;
  std::string fatal_reason_;
  HandlePtr rk_;
  rd_kafka_queue_t* queue_ = nullptr;
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

/// The value of the last header named `name` in librdkafka's headers, if any
/// (Message::header and Headers::find).
std::optional<std::string_view> header(const rd_kafka_headers_t* headers, const char* name);

}  // namespace neardup::stream::kafka
