#include "metrics/http/http_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"

namespace neardup::metrics {
namespace {

using Clock = std::chrono::steady_clock;

/// Accepted sockets waiting for a free worker; beyond it the kernel's listen
/// backlog holds new connections until the master thread can queue them.
constexpr int kConnectionQueue = 64;
constexpr int kListenBacklog = 256;

std::runtime_error listen_error(const std::string& listen, const std::string& what) {
  return std::runtime_error("metrics.listen '" + listen + "': " + what);
}

std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

/// civetweb 1.15 runs one worker thread per connection, so the worker count is
/// how many clients can stall at once without delaying a probe. Each holds a
/// socket: stay within half the descriptors this process may open, so a flood
/// of idle clients cannot take the Kafka clients' sockets.
int worker_threads(int max_workers) {
  rlimit limit{};
  rlim_t open_files = 1024;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
    open_files = limit.rlim_cur;  // RLIM_INFINITY is the largest value
  const rlim_t budget = open_files / 2 > kConnectionQueue ? open_files / 2 - kConnectionQueue : 0;
  const auto most = static_cast<rlim_t>(std::clamp(max_workers, 1, HttpServer::kMaxWorkers));
  return static_cast<int>(
      std::clamp<rlim_t>(budget, std::min<rlim_t>(HttpServer::kMinWorkers, most), most));
}

/// "127.0.0.1" or "::1" for a resolved address; "" when it has no numeric form.
std::string numeric_host(const sockaddr* address, socklen_t length) {
  std::array<char, NI_MAXHOST> host{};
  if (::getnameinfo(address, length, host.data(), host.size(), nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return host.data();
}

/// Writes a complete response with "Connection: close" and "X-Content-Type-Options:
/// nosniff" (no browser takes a body for another type than it says); the body
/// is left out for HEAD.
void send_response(mg_connection* connection, const HttpResponse& response, bool is_head) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason(response.status)) +
                    "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    "\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : response.headers) {
    if (name != "X-Content-Type-Options") out += name + ": " + value + "\r\n";
  }
  out += "\r\n";
  if (!is_head) out += response.body;
  mg_write(connection, out.data(), out.size());  // a peer gone or too slow is simply dropped
}

}  // namespace

ListenAddress parse_listen_address(const std::string& listen) {
  ListenAddress parsed;
  if (std::string why = base::parse_listen_address(listen, parsed); !why.empty())
    throw listen_error(listen, why);
  return parsed;
}

struct HttpServer::Impl {
  /// When this worker thread took its current connection (civetweb serves a
  /// connection on one thread from start to close).
  static thread_local Clock::time_point taken_at;

  Handler handler;
  int max_workers = HttpServer::kMaxWorkers;
  mg_context* context = nullptr;
  std::string host;  ///< numeric, without brackets
  int port = 0;
  std::string bound;
  base::Mutex log_mutex;
  /// civetweb's messages while starting (from its threads): why a bind failed.
  std::string startup_log GUARDED_BY(log_mutex);
  std::atomic<bool> started{false};

  static Impl& of(const mg_connection* connection) {
    return *static_cast<Impl*>(mg_get_user_data(mg_get_context(connection)));
  }

  /// civetweb's begin_request: every well-formed request ends here. Returns the
  /// status, which tells civetweb the response was sent.
  static int answer(mg_connection* connection) {
    const mg_request_info* info = mg_get_request_info(connection);
    HttpRequest request;
    request.method = info->request_method != nullptr ? info->request_method : "";
    const char* path = info->local_uri != nullptr ? info->local_uri : info->request_uri;
    request.path = path != nullptr ? path : "";
    const char* authorization = mg_get_header(connection, "Authorization");
    request.authorization = authorization != nullptr ? authorization : "";
    HttpResponse response;
    try {
      response = of(connection).handler(request);
    } catch (const std::exception& e) {
      response = {
          500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
    }
    send_response(connection, response, request.method == "HEAD");
    return response.status;
  }

  /// civetweb's init_connection, on the worker thread that will serve the connection.
  static int take(const mg_connection*, void**) {
    taken_at = Clock::now();
    return 0;
  }

  /// civetweb's http_error: requests it refuses before begin_request (malformed,
  /// over-large head, bad version) get the same plain-text form as ours.
  static int refuse(mg_connection* connection, int status, const char* message) {
    HttpResponse response{status, "text/plain; charset=utf-8", "", {}};
    const std::string_view text = message != nullptr ? message : "";
    if (status == 400 && text == "Malformed message") {
      // civetweb 1.15 says this whenever the head did not end: 8 KiB read
      // without a blank line, the timeout, or the client stopping mid-head.
      if (Clock::now() - taken_at >= kRequestTimeout) {
        response.status = 408;
        response.body = "request head not received in time\n";
      } else {
        response.status = 431;
        response.body = "request head too large\n";
      }
    } else if (status == 400) {
      response.body = "bad request\n";
    } else {
      response.body = std::string(message != nullptr ? message : reason(status)) + "\n";
    }
    send_response(connection, response, false);
    return 0;  // handled: civetweb sends nothing of its own
  }

  /// civetweb's log_message. Keeps the first message while starting (e.g.
  /// "cannot bind to 127.0.0.1:9464: 98 (Address already in use)"); later ones
  /// (a failed accept, a client gone) are dropped: they concern one client.
  static int log(const mg_connection* connection, const char* message) {
    auto* impl = static_cast<Impl*>(mg_get_user_data(mg_get_context(connection)));
    if (impl != nullptr && message != nullptr && !impl->started.load(std::memory_order_acquire)) {
      base::MutexLock lock(impl->log_mutex);
      if (impl->startup_log.empty()) impl->startup_log = message;
    }
    return 1;  // handled: civetweb writes nothing itself
  }

  /// Starts civetweb on one numeric address; "" on success, else why not.
  std::string start(const std::string& numeric, const std::string& port_text) {
    const bool v6 = numeric.find(':') != std::string::npos;
    const std::string ports = (v6 ? "[" + numeric + "]" : numeric) + ":" + port_text;
    const std::string threads = std::to_string(worker_threads(max_workers));
    const std::string timeout = std::to_string(kRequestTimeout.count());
    const std::string head = std::to_string(HttpServer::kMaxRequestHead);
    const std::string queue = std::to_string(kConnectionQueue);
    const std::string backlog = std::to_string(kListenBacklog);
    std::array<const char*, 19> options{"listening_ports",
                                        ports.c_str(),
                                        "num_threads",
                                        threads.c_str(),
                                        "request_timeout_ms",
                                        timeout.c_str(),
                                        "max_request_size",
                                        head.c_str(),
                                        "connection_queue",
                                        queue.c_str(),
                                        "listen_backlog",
                                        backlog.c_str(),
                                        "enable_keep_alive",
                                        "no",
                                        "decode_url",
                                        "no",
                                        "enable_directory_listing",
                                        "no",
                                        nullptr};
    mg_callbacks callbacks{};
    callbacks.init_connection = &Impl::take;
    callbacks.begin_request = &Impl::answer;
    callbacks.http_error = &Impl::refuse;
    callbacks.log_message = &Impl::log;
    mg_init_data init{};
    init.callbacks = &callbacks;
    init.user_data = this;
    init.configuration_options = options.data();
    std::array<char, 256> text{};
    unsigned code = 0;
    mg_error_data error{};
    error.code = &code;
    error.text = text.data();
    error.text_buffer_size = text.size();
    {
      base::MutexLock lock(log_mutex);
      startup_log.clear();
    }
    context = mg_start2(&init, &error);
    if (context != nullptr) return "";
    base::MutexLock lock(log_mutex);
    return startup_log.empty() ? std::string(text.data()) : startup_log;
  }

  /// mg_stop() notices the stop flag only when the master thread's poll on the
  /// listening socket returns, up to 2 s later; a loopback connection wakes it.
  void stop() {
    std::atomic<bool> stopped{false};
    std::thread waker([this, &stopped] {
      for (int attempt = 0; attempt < 100 && !stopped.load(); ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        poke();
      }
    });
    mg_stop(context);
    stopped.store(true);
    waker.join();
  }

  void poke() const {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    std::string target = host;
    if (target == "0.0.0.0") target = "127.0.0.1";
    if (target == "::") target = "::1";
    addrinfo* found = nullptr;
    if (::getaddrinfo(target.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
    const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
      if (::connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);  // an established connection is what makes the listener readable
      }
      ::close(fd);
    }
    ::freeaddrinfo(found);
  }
};

thread_local Clock::time_point HttpServer::Impl::taken_at;

HttpServer::HttpServer(const std::string& listen, Handler handler, int max_workers)
    : impl_(std::make_unique<Impl>()) {
  impl_->max_workers = max_workers;
  static const unsigned initialised = mg_init_library(0);  // once per process, before any mg_start
  (void)initialised;
  const ListenAddress parsed = parse_listen_address(listen);
  impl_->handler = std::move(handler);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(parsed.host.c_str(), parsed.port.c_str(), &hints, &found);
      rc != 0) {
    throw listen_error(
        listen, std::string("cannot resolve host '") + parsed.host + "': " + ::gai_strerror(rc));
  }
  std::vector<std::string> candidates;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    std::string numeric = numeric_host(a->ai_addr, a->ai_addrlen);
    if (!numeric.empty() &&
        std::find(candidates.begin(), candidates.end(), numeric) == candidates.end()) {
      candidates.push_back(std::move(numeric));
    }
  }
  ::freeaddrinfo(found);
  std::string last_error = "no usable address";
  const bool has_ipv6 = mg_check_feature(MG_FEATURES_IPV6) != 0;
  for (const std::string& numeric : candidates) {
    if (!has_ipv6 && numeric.find(':') != std::string::npos) {
      last_error = "cannot bind to IPv6 address " + numeric +
                   ": the civetweb library in use was built without IPv6 (Debian's is); "
                   "listen on an IPv4 address such as 0.0.0.0:9464";
      continue;
    }
    const std::string why = impl_->start(numeric, parsed.port);
    if (impl_->context == nullptr) {
      last_error = why.find("cannot bind") != std::string::npos ? why : "cannot bind: " + why;
      continue;
    }
    impl_->host = numeric;
    break;
  }
  if (impl_->context == nullptr) throw listen_error(listen, last_error);
  impl_->started.store(true, std::memory_order_release);

  std::array<mg_server_port, 4> ports{};
  if (mg_get_server_ports(impl_->context, static_cast<int>(ports.size()), ports.data()) < 1) {
    impl_->stop();
    throw listen_error(listen, "the server started but reports no listening port");
  }
  impl_->port = ports[0].port;
  const bool v6 = impl_->host.find(':') != std::string::npos;
  impl_->bound = (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" + std::to_string(impl_->port);
}

HttpServer::~HttpServer() { impl_->stop(); }

std::string HttpServer::address() const { return impl_->bound; }

}  // namespace neardup::metrics
