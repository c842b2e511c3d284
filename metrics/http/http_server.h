#pragma once
// The HTTP/1.1 server behind neardup's three operational paths (/metrics,
// /healthz, /readyz), on civetweb (the library prometheus-cpp's own exposer is
// built on). prometheus::Exposer cannot answer 503 on a path of our choosing,
// so neardup serves all three itself and renders /metrics with
// prometheus::TextSerializer (see metrics/README.md).
//
// civetweb 1.15 gives each connection a worker thread of its own, all started
// with the server: a client that connects and sends nothing, or trickles its
// request head (slowloris), holds only its own worker, for at most
// kRequestTimeout, and probes keep being answered at once while fewer clients
// than workers stall. Beyond that, new connections wait in a queue of 64 and
// the kernel's listen backlog until a worker frees up. Every response is
// "Connection: close" (no keep-alive, no chunked bodies): scrapes and probes
// are rare and tiny.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/listen_address.h"

namespace neardup::metrics {

struct HttpRequest {
  std::string method;         ///< "GET", "HEAD", ...
  std::string path;           ///< without the query string
  std::string authorization;  ///< the Authorization header's value, "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::map<std::string, std::string> headers;  ///< extra headers
};

/// Parsed "host:port" (host: an IPv4 address or a host name).
using ListenAddress = base::ListenAddress;

/// base::parse_listen_address (the one parser config/ checks metrics.listen
/// with); throws std::runtime_error naming the input and the reason when refused.
ListenAddress parse_listen_address(const std::string& listen);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  /// How long a connection may take to send its request head, from the moment a
  /// worker takes it; also the limit on writing the response. Then it is closed.
  static constexpr std::chrono::milliseconds kRequestTimeout{2000};
  /// Worker threads: half of RLIMIT_NOFILE's soft limit less the queue (so
  /// stalled clients cannot take the descriptors the Kafka clients need), within
  /// these bounds: 1024 with neardup.service's LimitNOFILE=65536, 448 under a
  /// soft limit of 1024. Each has a 100 KiB stack; 1024 idle workers measured
  /// about 16 MB of resident memory.
  static constexpr int kMinWorkers = 64;
  static constexpr int kMaxWorkers = 1024;
  /// A request head (request line and headers) larger than this is refused with 431.
  static constexpr std::size_t kMaxRequestHead = 8192;

  /// Binds and listens on `listen`, then starts serving on civetweb's threads.
  /// `handler` runs concurrently on any worker thread, so it must be thread-safe;
  /// it should not throw (a throw becomes a 500). Requests that are not
  /// well-formed HTTP/1.x never reach it (400, 408, 431 or 505).
  /// Throws std::runtime_error ("metrics.listen '...': ...") when the address is
  /// malformed, cannot be resolved or cannot be bound, and for an IPv6 address
  /// when civetweb was built without IPv6 (Debian's 1.15 is).
  /// `max_workers` (1..kMaxWorkers) lowers the worker ceiling: `neardup demo`
  /// serves one person's browser, and starting and joining 1024 threads took
  /// about a second of its Ctrl-C under ASan.
  HttpServer(const std::string& listen, Handler handler, int max_workers = kMaxWorkers);
  /// Stops accepting, lets in-flight requests finish and joins every thread:
  /// returns within about kRequestTimeout.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The address actually bound, "127.0.0.1:9464" or "[::1]:9464".
  std::string address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::metrics
