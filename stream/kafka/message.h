#pragma once
// A consumed message, consumer event or delivery report, viewed.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stream/kafka/errors.h"

namespace neardup::stream::kafka {

/// librdkafka's message, opaque (message.cc and the clients convert it).
struct MessageHandle;
struct MessageDeleter {
  void operator()(MessageHandle* message) const;
};
/// One consumed message (or consumer event carrying an error).
using MessagePtr = std::unique_ptr<MessageHandle, MessageDeleter>;

/// A consumed message, consumer event or delivery report, viewed: a pointer
/// wide, copied freely, valid while the message it views (a MessagePtr, or
/// the delivery report during the handler's call). Every accessor is an
/// out-of-line call, O(1) without allocating, but topic() (a strlen),
/// error_message() (a string) and the header lookups (which parse the headers
/// on first use, as librdkafka does).
class Message {
 public:
  /// A polled message, viewed (implicit: `kafka::Message m = polled[i];`).
  Message(const MessagePtr& message) : m_(message.get()) {}  // NOLINT(google-explicit-constructor)

  /// errc::no_error for a record; otherwise a consumer event (e.g.
  /// errc::partition_eof) or a failed delivery.
  ErrorCode error() const;
  /// librdkafka's text for error(): the broker's or client's reason when it
  /// gave one, describe(error()) otherwise.
  std::string error_message() const;

  /// "" for a consumer event without a topic.
  std::string_view topic() const;
  std::int32_t partition() const;
  std::int64_t offset() const;
  /// The record's timestamp (ms since the epoch), -1 when it has none.
  std::int64_t timestamp() const;
  /// Whether the broker stamped the record on arrival (the topic's
  /// message.timestamp.type is LogAppendTime) rather than keeping the producer's time.
  bool log_append_time() const;

  /// The value; "" for a null value (has_payload() tells the two apart).
  std::string_view payload() const;
  bool has_payload() const;
  /// The key; "" for a null key (has_key() tells the two apart).
  std::string_view key() const;
  bool has_key() const;

  /// The value of the last header named `name`, if any.
  std::optional<std::string_view> header(const char* name) const;
  /// Calls `visit(name, value)` for every header, in order.
  void for_each_header(
      const std::function<void(std::string_view name, std::string_view value)>& visit) const;

  /// Delivery reports: the Record::opaque given to produce().
  void* opaque() const;

 private:
  friend class Producer;
  friend class Headers;
  explicit Message(const MessageHandle* message) : m_(message) {}
  const MessageHandle* m_;
};

}  // namespace neardup::stream::kafka
