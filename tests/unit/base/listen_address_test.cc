#include "base/listen_address.h"

#include <gtest/gtest.h>

#include <string>

namespace neardup::base {
namespace {

std::string error_of(const std::string& listen) {
  ListenAddress parsed;
  return parse_listen_address(listen, parsed);
}

TEST(ListenAddress, SplitsAnIpv4AddressOrAHostNameAndAPort) {
  const struct {
    const char* listen;
    const char* host;
    const char* port;
  } cases[] = {
      {"127.0.0.1:9464", "127.0.0.1", "9464"},
      {"0.0.0.0:0", "0.0.0.0", "0"},
      {"255.255.255.255:65535", "255.255.255.255", "65535"},
      {"localhost:9100", "localhost", "9100"},
      {"metrics-1.example_net:80", "metrics-1.example_net", "80"},
  };
  for (const auto& c : cases) {
    ListenAddress parsed;
    EXPECT_EQ(parse_listen_address(c.listen, parsed), "") << c.listen;
    EXPECT_EQ(parsed.host, c.host) << c.listen;
    EXPECT_EQ(parsed.port, c.port) << c.listen;
  }
}

TEST(ListenAddress, SaysWhyEachRefusedAddressIsRefused) {
  const std::string kIpv6 =
      "IPv6 addresses cannot be served: neardup's HTTP server (civetweb) is built without IPv6; "
      "listen on an IPv4 address like 0.0.0.0:9464 or 127.0.0.1:9464";
  const struct {
    const char* listen;
    std::string error;
  } cases[] = {
      {"127.0.0.1:99999", "port out of range: 99999 is not in 0..65535 (0 picks a free port)"},
      {"127.0.0.1:65536", "port out of range: 65536 is not in 0..65535 (0 picks a free port)"},
      {"h:99999999999999999999999",
       "port out of range: 99999999999999999999999 is not in 0..65535 (0 picks a free port)"},
      {"999.1.1.1:80",
       "expected an IPv4 address (four numbers in 0..255, like 127.0.0.1) as the host"},
      {"1.2.3:80", "expected an IPv4 address (four numbers in 0..255, like 127.0.0.1) as the host"},
      {"127.0.0.1.5:80",
       "expected an IPv4 address (four numbers in 0..255, like 127.0.0.1) as the host"},
      {"my host:80",
       "expected an IPv4 address or a host name (letters, digits, '-', '_', '.') as the host"},
      {"127.0.0.1:http", "port must be a number in 0..65535 (0 picks a free port)"},
      {"127.0.0.1:-1", "port must be a number in 0..65535 (0 picks a free port)"},
      {"127.0.0.1:", "port must be a number in 0..65535 (0 picks a free port)"},
      {"127.0.0.1", "expected host:port like 127.0.0.1:9464"},
      {"", "expected host:port like 127.0.0.1:9464"},
      {":9464", "missing host; use 0.0.0.0:PORT to listen on every interface"},
      {"[::1]:9464", kIpv6},
      {"[::]:0", kIpv6},
      {"::1:9464", kIpv6},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(c.listen), c.error) << c.listen;
}

TEST(ListenAddress, LeavesItsOutputAloneWhenItRefuses) {
  ListenAddress parsed{"kept", "1"};
  EXPECT_NE(parse_listen_address("999.1.1.1:80", parsed), "");
  EXPECT_EQ(parsed.host, "kept");
  EXPECT_EQ(parsed.port, "1");
}

}  // namespace
}  // namespace neardup::base
