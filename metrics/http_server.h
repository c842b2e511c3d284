#pragma once
// A deliberately small HTTP/1.1 server for neardup's three operational paths
// (/metrics, /healthz, /readyz). prometheus::Exposer cannot answer 503 on a
// path of our choosing, so neardup serves all three itself and renders
// /metrics with prometheus::TextSerializer (see metrics/README.md).
//
// One background thread accepts and answers connections one at a time
// ("Connection: close", no keep-alive, no chunked bodies): scrapes and probes
// are rare and tiny. A client that stalls is dropped after kIoTimeout, so it
// delays other probes by at most that long.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace neardup::metrics {

struct HttpRequest {
  std::string method;  ///< "GET", "HEAD", ...
  std::string path;    ///< without the query string
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::map<std::string, std::string> headers;  ///< extra headers
};

/// Parsed "host:port" (host may be a name, an IPv4 address or "[IPv6]").
struct ListenAddress {
  std::string host;
  std::string port;
};

/// Splits "host:port". Throws std::runtime_error naming the input when malformed
/// (missing port, port not a number in 0..65535, empty host).
ListenAddress parse_listen_address(const std::string& listen);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  static constexpr std::chrono::milliseconds kIoTimeout{2000};

  /// Binds and listens on `listen`, then starts serving on a background thread.
  /// `handler` runs on that thread and must not throw (a throw becomes a 500).
  /// Throws std::runtime_error ("metrics.listen '...': ...") when the address is
  /// malformed, cannot be resolved or cannot be bound.
  HttpServer(const std::string& listen, Handler handler);
  /// Stops the thread and closes the socket; in-flight requests finish first.
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
