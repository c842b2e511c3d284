#pragma once
// The metrics listener's address, "host:port", parsed once for everyone who
// reads it: the configuration check (config/) and the HTTP server (metrics/),
// so that an address `neardup config check` accepts is one `neardup run` can
// try to bind, and the reason for a refusal reads the same in both.

#include <string>
#include <string_view>

namespace neardup::base {

/// "host:port" split: host is an IPv4 address or a host name, port 0..65535.
struct ListenAddress {
  std::string host;
  std::string port;
};

/// Parses `listen` into `out`. Returns "" on success, or why it is refused, in
/// words a person can act on, e.g. "port out of range: 99999 is not in
/// 0..65535 (0 picks a free port)". Refused: no ':', an empty host, a port
/// that is not a decimal number or above 65535, a host of digits and dots that
/// is not an IPv4 address (999.1.1.1), a host name with characters other than
/// letters, digits, '-', '_' and '.', and IPv6 addresses (bracketed or not):
/// the HTTP library neardup serves with is built without IPv6. A host name is
/// not resolved here. O(size).
std::string parse_listen_address(std::string_view listen, ListenAddress& out);

}  // namespace neardup::base
