#include "stream/kafka/message.h"

#include <librdkafka/rdkafka.h>

#include "stream/kafka/headers.h"

namespace neardup::stream::kafka {

namespace {

const rd_kafka_message_t* raw(const MessageHandle* message) {
  return reinterpret_cast<const rd_kafka_message_t*>(message);
}

/// The message's headers (null: none), parsed by librdkafka on first use.
const HeadersHandle* headers_of(const MessageHandle* message) {
  rd_kafka_headers_t* headers = nullptr;
  // (a delivery report's headers are reached through the same call)
  if (rd_kafka_message_headers(raw(message), &headers) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return nullptr;
  return reinterpret_cast<const HeadersHandle*>(headers);
}

}  // namespace

void MessageDeleter::operator()(MessageHandle* message) const {
  rd_kafka_message_destroy(reinterpret_cast<rd_kafka_message_t*>(message));
}

ErrorCode Message::error() const { return ErrorCode(raw(m_)->err); }

std::string Message::error_message() const { return rd_kafka_message_errstr(raw(m_)); }

std::string_view Message::topic() const {
  const rd_kafka_message_t* m = raw(m_);
  return m->rkt ? rd_kafka_topic_name(m->rkt) : "";
}

std::int32_t Message::partition() const { return raw(m_)->partition; }

std::int64_t Message::offset() const { return raw(m_)->offset; }

std::int64_t Message::timestamp() const { return rd_kafka_message_timestamp(raw(m_), nullptr); }

bool Message::log_append_time() const {
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  rd_kafka_message_timestamp(raw(m_), &type);
  return type == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME;
}

std::string_view Message::payload() const {
  const rd_kafka_message_t* m = raw(m_);
  return {static_cast<const char*>(m->payload), m->payload ? m->len : 0};
}

bool Message::has_payload() const { return raw(m_)->payload != nullptr; }

std::string_view Message::key() const {
  const rd_kafka_message_t* m = raw(m_);
  return {static_cast<const char*>(m->key), m->key ? m->key_len : 0};
}

bool Message::has_key() const { return raw(m_)->key != nullptr; }

void* Message::opaque() const { return raw(m_)->_private; }

std::optional<std::string_view> Message::header(const char* name) const {
  return kafka::header(headers_of(m_), name);
}

void Message::for_each_header(
    const std::function<void(std::string_view name, std::string_view value)>& visit) const {
  visit_headers(headers_of(m_), visit);
}

}  // namespace neardup::stream::kafka
