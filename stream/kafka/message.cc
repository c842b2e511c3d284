#include "stream/kafka/message.h"

#include "stream/kafka/headers.h"

namespace neardup::stream::kafka {

std::string Message::error_message() const { return rd_kafka_message_errstr(m_); }

std::optional<std::string_view> Message::header(const char* name) const {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m_, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  return kafka::header(headers, name);
}

void Message::for_each_header(
    const std::function<void(std::string_view name, std::string_view value)>& visit) const {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m_, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  visit_headers(headers, visit);
}

}  // namespace neardup::stream::kafka
