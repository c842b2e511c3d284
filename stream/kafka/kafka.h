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
}

namespace neardup::stream::kafka {

enum class Severity { fatal, retriable, message };
std::string_view to_string(Severity severity);

/// Classifies a librdkafka error code once, here. `fatal_flag` is what
/// rd_kafka_error_is_fatal() or a fatal error callback said, when known.
Severity classify(rd_kafka_resp_err_t err, bool fatal_flag = false);

/// A Kafka failure a person can act on: what() names the operation and
/// librdkafka's reason.
class KafkaError : public std::runtime_error {
 public:
  KafkaError(const std::string& what, rd_kafka_resp_err_t code, Severity severity)
      : std::runtime_error(what), code_(code), severity_(severity) {}
  rd_kafka_resp_err_t code() const { return code_; }
  Severity severity() const { return severity_; }

 private:
  rd_kafka_resp_err_t code_;
  Severity severity_;
};

using Properties = std::map<std::string, std::string>;

/// Builds an rd_kafka_conf_t; throws KafkaError naming the bad property.
/// Every handle made from it writes librdkafka's log lines through neardup's
/// logger (metrics/log.h: the configured format and level), with the fields
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

/// statistics.interval.ms of clients that feed a BrokerHealth, unless the
/// properties set it: how soon a broker's return is seen.
inline constexpr const char* kHealthStatisticsMs = "1000";

/// Number of partitions of `topic` as the cluster reports it; 0 if the topic
/// does not exist. Throws KafkaError when the metadata request fails.
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
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  ///< TOPIC_ALREADY_EXISTS is not an error
  std::string message;                                   ///< the broker's, when it gave one
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
  /// Called once per produced record with librdkafka's delivery report; the
  /// message's _private field holds the opaque passed to produce().
  using DeliveryHandler = std::function<void(const rd_kafka_message_t&)>;

  /// Throws KafkaError when the client cannot be created (bad property).
  /// With `health` (not owned; must outlive the producer), the client's error
  /// events and statistics feed it; statistics.interval.ms defaults to
  /// kHealthStatisticsMs then. They are served on the thread calling poll().
  Producer(const Properties& properties, DeliveryHandler on_delivery,
           BrokerHealth* health = nullptr);
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  struct Record {
    std::string_view topic;
    std::int32_t partition = RD_KAFKA_PARTITION_UA;
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
  /// RD_KAFKA_RESP_ERR_NO_ERROR or a message-level error (e.g. message too
  /// large); throws KafkaError for fatal errors.
  rd_kafka_resp_err_t produce(const Record& record);

  /// Serves delivery reports; returns how many were served.
  int poll(std::chrono::milliseconds timeout);
  /// Waits until every record was delivered or failed; false on timeout.
  bool flush(std::chrono::milliseconds timeout);
  /// Records enqueued but not yet reported.
  int in_flight() const;
  /// Set by librdkafka's fatal error callback (idempotence broken, auth failed...).
  bool fatal() const { return !fatal_reason_.empty(); }
  const std::string& fatal_reason() const { return fatal_reason_; }

  rd_kafka_t* handle() const { return rk_.get(); }

 private:
  rd_kafka_topic_t* topic(std::string_view name);
  static void on_delivery_cb(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque);
  static void on_error_cb(rd_kafka_t*, int err, const char* reason, void* opaque);
  static int on_statistics_cb(rd_kafka_t*, char* json, size_t size, void* opaque);

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
  /// `assigned` true for an assignment, false for a revocation.
  using RebalanceHandler =
      std::function<void(bool assigned, const rd_kafka_topic_partition_list_t& partitions)>;

  /// Throws KafkaError when the client cannot be created. `health` as for
  /// Producer; served inside poll_batch().
  Consumer(const Properties& properties, RebalanceHandler on_rebalance,
           BrokerHealth* health = nullptr);
  ~Consumer();  ///< closes (leaves the group) and destroys
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  void subscribe(const std::vector<std::string>& topics);
  /// Up to `max` messages (or error events), appended to `out`: waits up to
  /// `timeout` for the first, then takes what is already fetched without
  /// waiting (librdkafka's batch call alone would wait for all `max`).
  void poll_batch(std::vector<MessagePtr>& out, std::size_t max, std::chrono::milliseconds timeout);
  /// Commits the given offsets (the next offset to read). Synchronous unless
  /// `async`. Throws KafkaError for fatal errors; returns the error otherwise.
  rd_kafka_resp_err_t commit(const rd_kafka_topic_partition_list_t& offsets, bool async);
  /// The outcome of every offset commit (`err` the request's; each partition
  /// may carry its own), served inside poll_batch() (or commit(), when synchronous).
  using CommitHandler =
      std::function<void(rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t* offsets)>;
  void on_commit(CommitHandler handler) { on_commit_ = std::move(handler); }
  /// Leaves the group (serving a final revocation through the handler). Idempotent.
  void close();
  bool fatal() const { return !fatal_reason_.empty(); }
  const std::string& fatal_reason() const { return fatal_reason_; }

  rd_kafka_t* handle() const { return rk_.get(); }

 private:
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
};

/// Header helpers: the value of the last header named `name`, if any.
std::optional<std::string_view> header(const rd_kafka_headers_t* headers, const char* name);

}  // namespace neardup::stream::kafka
