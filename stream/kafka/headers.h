#pragma once
// Headers of a record to produce, and reading a message's headers.

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "stream/kafka/message.h"

namespace neardup::stream::kafka {

/// librdkafka's header list, opaque (headers.cc and the clients convert it).
struct HeadersHandle;

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
    void operator()(HeadersHandle* headers) const;
  };
  std::unique_ptr<HeadersHandle, Deleter> headers_;
};

/// The value of the last header named `name` in librdkafka's headers (null:
/// none), if any (Message::header and Headers::find).
std::optional<std::string_view> header(const HeadersHandle* headers, const char* name);
/// Calls `visit(name, value)` for every header of `headers` (null: none), in order.
void visit_headers(const HeadersHandle* headers,
                   const std::function<void(std::string_view, std::string_view)>& visit);

}  // namespace neardup::stream::kafka
