#include "base/listen_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace neardup::base {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_name_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
         c == '.';
}

}  // namespace

std::string parse_listen_address(std::string_view listen, ListenAddress& out) {
  const auto colon = listen.rfind(':');
  if (colon == std::string_view::npos) return "expected host:port like 127.0.0.1:9464";
  const std::string_view host = listen.substr(0, colon);
  const std::string_view port = listen.substr(colon + 1);
  if (host.find(':') != std::string_view::npos || host.starts_with('[')) {
    return "IPv6 addresses cannot be served: neardup's HTTP server (civetweb) is built without "
           "IPv6; listen on an IPv4 address like 0.0.0.0:9464 or 127.0.0.1:9464";
  }
  if (host.empty()) return "missing host; use 0.0.0.0:PORT to listen on every interface";
  if (port.empty() || !std::all_of(port.begin(), port.end(), is_digit)) {
    return "port must be a number in 0..65535 (0 picks a free port)";
  }
  unsigned long value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
    return "port out of range: " + std::string(port) + " is not in 0..65535 (0 picks a free port)";
  }
  const bool numeric =
      std::all_of(host.begin(), host.end(), [](char c) { return is_digit(c) || c == '.'; });
  if (numeric) {
    in_addr address{};
    if (::inet_pton(AF_INET, std::string(host).c_str(), &address) != 1) {
      return "expected an IPv4 address (four numbers in 0..255, like 127.0.0.1) as the host";
    }
  } else if (!std::all_of(host.begin(), host.end(), is_name_char)) {
    return "expected an IPv4 address or a host name (letters, digits, '-', '_', '.') as the host";
  }
  out.host.assign(host);
  out.port.assign(port);
  return "";
}

}  // namespace neardup::base
