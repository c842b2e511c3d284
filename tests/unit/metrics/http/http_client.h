#pragma once
// Test-only: one raw HTTP/1.1 exchange with a metrics endpoint, for the unit
// tests of metrics/ (no client library: the request is sent as written).
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <stdexcept>
#include <string>

#include "metrics/http/http_server.h"

namespace neardup::metrics::testing {

struct Reply {
  int status = 0;
  std::string head;
  std::string body;
};

/// One HTTP/1.1 exchange with `address` ("host:port"). Bounded: 5 s per poll.
inline Reply http(const std::string& address, const std::string& raw_request) {
  const ListenAddress parsed = parse_listen_address(address);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(parsed.host.c_str(), parsed.port.c_str(), &hints, &found) != 0)
    throw std::runtime_error("resolve " + address);
  const int fd = ::socket(found->ai_family, SOCK_STREAM, 0);
  const int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0) {
    ::close(fd);
    throw std::runtime_error("connect to " + address);
  }
  ::send(fd, raw_request.data(), raw_request.size(), MSG_NOSIGNAL);
  std::string all;
  std::array<char, 4096> buffer{};
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n <= 0) break;
    all.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  Reply reply;
  const auto split = all.find("\r\n\r\n");
  reply.head = all.substr(0, split);
  if (split != std::string::npos) reply.body = all.substr(split + 4);
  if (all.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::stoi(all.substr(9, 3));
  return reply;
}

}  // namespace neardup::metrics::testing
