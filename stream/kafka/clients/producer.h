#pragma once
// A producer: records out, delivery reports back.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "stream/kafka/errors.h"
#include "stream/kafka/handle.h"
#include "stream/kafka/headers.h"
#include "stream/kafka/message.h"
#include "stream/kafka/properties.h"

namespace neardup::stream {
class BrokerHealth;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// Producer::Record::partition: the partitioner chooses (by key). (librdkafka's
/// number: producer.cc checks it.)
inline constexpr std::int32_t kAnyPartition = -1;

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
    HeadersHandle* headers = nullptr;  ///< ownership passes to produce() (even on error)
    std::int64_t timestamp_ms = 0;     ///< 0 -> now
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
  /// Whether the client hit a fatal error (idempotence broken, fenced, auth
  /// failed...), from librdkafka's callback or asked of librdkafka directly.
  bool fatal() const;
  /// "ERR_NAME: text" of the fatal error, also before its callback was served.
  std::string fatal_reason() const;

  /// Drops every record not yet delivered, queued or in flight, without
  /// waiting: their delivery reports (served by the next poll()) say purged.
  /// For a crash simulation or an exit that gives up on them.
  void purge();

  /// Number of partitions of `topic` as the cluster reports it; 0 if the
  /// topic does not exist. Throws KafkaError when the metadata request fails.
  int partition_count(const std::string& topic, std::chrono::milliseconds timeout) const;
  /// kafka::holds_empty_fetches of this producer's cluster (after partition_count).
  bool cluster_holds_empty_fetches() const;

  /// librdkafka's handle, for stream/kafka/ itself (the transaction cycle).
  ClientHandle* handle() const { return rk_.get(); }

 private:
  /// librdkafka's topic handle, opaque; kept in topics_ until destruction.
  struct TopicHandle;
  /// What librdkafka's callbacks reach (producer.cc).
  struct Callbacks;
  TopicHandle* topic(std::string_view name);
  void create(const Properties& properties);

  DeliveryHandler on_delivery_;
  BrokerHealth* health_;
  std::string fatal_reason_;
  HandlePtr rk_;
  std::map<std::string, TopicHandle*, std::less<>> topics_;
};

}  // namespace neardup::stream::kafka
