#include "stream/kafka/headers.h"

#include <librdkafka/rdkafka.h>

namespace neardup::stream::kafka {

namespace {

rd_kafka_headers_t* raw(HeadersHandle* headers) {
  return reinterpret_cast<rd_kafka_headers_t*>(headers);
}
const rd_kafka_headers_t* raw(const HeadersHandle* headers) {
  return reinterpret_cast<const rd_kafka_headers_t*>(headers);
}
HeadersHandle* ours(rd_kafka_headers_t* headers) {
  return reinterpret_cast<HeadersHandle*>(headers);
}

}  // namespace

void Headers::Deleter::operator()(HeadersHandle* headers) const {
  rd_kafka_headers_destroy(raw(headers));
}

Headers Headers::copy_of(Message message) {
  Headers copy;
  rd_kafka_headers_t* headers = nullptr;
  // (a delivery report's headers are reached through the same call)
  if (rd_kafka_message_headers(reinterpret_cast<const rd_kafka_message_t*>(message.m_), &headers) ==
          RD_KAFKA_RESP_ERR_NO_ERROR &&
      headers)
    copy.headers_.reset(ours(rd_kafka_headers_copy(headers)));
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
  if (!headers_) headers_.reset(ours(rd_kafka_headers_new(4)));
  rd_kafka_header_add(raw(headers_.get()), name.data(), static_cast<ssize_t>(name.size()),
                      value.data(), static_cast<ssize_t>(value.size()));
}

void visit_headers(const HeadersHandle* headers,
                   const std::function<void(std::string_view, std::string_view)>& visit) {
  if (!headers) return;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0;
       rd_kafka_header_get_all(raw(headers), i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i)
    visit(name, std::string_view(static_cast<const char*>(value), value ? size : 0));
}

std::optional<std::string_view> header(const HeadersHandle* headers, const char* name) {
  if (!headers) return std::nullopt;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_header_get_last(raw(headers), name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return std::nullopt;
  return std::string_view(static_cast<const char*>(value), value ? size : 0);
}

}  // namespace neardup::stream::kafka
