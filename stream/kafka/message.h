#pragma once
// A consumed message, consumer event or delivery report, viewed.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stream/kafka/errors.h"

namespace neardup::stream::kafka {

struct MessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
/// One consumed message (or consumer event carrying an error).
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

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

}  // namespace neardup::stream::kafka
