#include "metrics/http/page_access.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>

#include "metrics/http/digest.h"

namespace neardup::metrics {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// Equal contents, in time that depends on the lengths only.
bool same_bytes(std::string_view a, std::string_view b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    differ |= static_cast<unsigned char>(x ^ y);
  }
  return differ == 0;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (iequals(host, "localhost")) return true;
  const std::string text(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool page_served(const PageAccess& access, bool loopback) {
  switch (access.mode) {
    case PageMode::on:
      return true;
    case PageMode::off:
      return false;
    case PageMode::automatic:
      break;
  }
  return loopback || !access.user.empty();
}

std::string page_off_reason(const PageAccess& access) {
  if (access.mode == PageMode::off) return "the page is off (metrics.page: off)";
  return "the page shows message texts and is off on a listener other hosts can reach: set "
         "metrics.page_user and metrics.page_password_file, or metrics.page: on, to serve it";
}

std::string page_exposure_warning(const PageAccess& access, std::string_view listen,
                                  bool loopback) {
  if (loopback || !page_served(access, loopback) || !access.user.empty() || access.redact_texts)
    return "";
  return "metrics.page: on serves message texts on " + std::string(listen) +
         " to anyone who reaches it; set metrics.page_user and metrics.page_password_file, or "
         "metrics.redact_texts: true";
}

bool page_authorized(const PageAccess& access, std::string_view authorization) {
  if (access.user.empty()) return true;
  // "Basic" (any case), one or more spaces, base64("user:password").
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos || !iequals(authorization.substr(0, space), "Basic"))
    return false;
  std::string_view encoded = authorization.substr(space);
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  while (!encoded.empty() && encoded.back() == ' ') encoded.remove_suffix(1);
  const std::optional<std::string> decoded = base64_decode(encoded);
  if (!decoded) return false;
  const std::string expected = access.user + ":" + access.password;
  return same_bytes(*decoded, expected);
}

}  // namespace neardup::metrics
