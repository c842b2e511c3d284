#include "stream/kafka/headers.h"

namespace neardup::stream::kafka {

Headers Headers::copy_of(Message message) {
  Headers copy;
  rd_kafka_headers_t* headers = nullptr;
  // (a delivery report's headers are reached through the same call)
  if (rd_kafka_message_headers(message.m_, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR && headers)
    copy.headers_.reset(rd_kafka_headers_copy(headers));
  return copy;
}

std::optional<std::string_view> Headers::find(const char* name) const {
  return kafka::header(headers_.get(), name);
}

void Headers::for_each(
    const std::function<void(std::string_view name, std::string_view value)>& visit) const {
  visit_headers(headers_.get(), visit);
}

void Headers::add(std::string_view name, std::string_view value) {
  if (!headers_) headers_.reset(rd_kafka_headers_new(4));
  rd_kafka_header_add(headers_.get(), name.data(), static_cast<ssize_t>(name.size()), value.data(),
                      static_cast<ssize_t>(value.size()));
}

void visit_headers(const rd_kafka_headers_t* headers,
                   const std::function<void(std::string_view, std::string_view)>& visit) {
  if (!headers) return;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
    visit(name, std::string_view(static_cast<const char*>(value), value ? size : 0));
}

std::optional<std::string_view> header(const rd_kafka_headers_t* headers, const char* name) {
  if (!headers) return std::nullopt;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return std::nullopt;
  return std::string_view(static_cast<const char*>(value), value ? size : 0);
}

}  // namespace neardup::stream::kafka
