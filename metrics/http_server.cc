#include "metrics/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

namespace neardup::metrics {
namespace {

constexpr std::size_t kMaxRequestHead = 8192;
using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::runtime_error listen_error(const std::string& listen, const std::string& what) {
  return std::runtime_error("metrics.listen '" + listen + "': " + what);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

std::string_view reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

/// Reads until the end of the request head, the size cap, EOF or the deadline.
/// Returns the head, or "" if the client sent nothing usable in time.
std::string read_head(int fd, Clock::time_point deadline, bool& too_large) {
  std::string head;
  std::array<char, 2048> buffer;
  too_large = false;
  while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
    if (head.size() >= kMaxRequestHead) {
      too_large = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    head.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return head;
}

void write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) > 0) continue;
    }
    return;  // peer gone or too slow: nothing more to do for it
  }
}

std::string format_address(const sockaddr_storage& address) {
  std::array<char, INET6_ADDRSTRLEN> host{};
  if (address.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &a.sin6_addr, host.data(), host.size());
    std::string out(1, '[');
    out.append(host.data()).append("]:").append(std::to_string(ntohs(a.sin6_port)));
    return out;
  }
  const auto& a = reinterpret_cast<const sockaddr_in&>(address);
  ::inet_ntop(AF_INET, &a.sin_addr, host.data(), host.size());
  return std::string(host.data()) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

ListenAddress parse_listen_address(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw listen_error(listen, "expected host:port like 127.0.0.1:9464");
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw listen_error(listen, "an IPv6 host must be in brackets, like [::1]:9464");
  }
  if (host.empty()) throw listen_error(listen, "missing host; use 0.0.0.0:PORT to listen on every interface");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
    throw listen_error(listen, "port must be a number in 0..65535 (0 picks a free port), got '" + port + "'");
  }
  return {host, port};
}

struct HttpServer::Impl {
  Fd listener;
  Fd wake_read, wake_write;
  Handler handler;
  std::string bound;
  std::thread thread;

  void serve() {
    for (;;) {
      std::array<pollfd, 2> fds{{{listener.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}}};
      const int ready = ::poll(fds.data(), fds.size(), -1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0 || (fds[1].revents & (POLLIN | POLLHUP)) != 0) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      Fd client(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (client.get() < 0) continue;  // EAGAIN, ECONNABORTED, EMFILE: try again on the next event
      answer(client.get());
    }
  }

  void answer(int fd) const {
    const auto deadline = Clock::now() + kIoTimeout;
    bool too_large = false;
    const std::string head = read_head(fd, deadline, too_large);
    HttpResponse response;
    bool is_head = false;
    if (too_large) {
      response = {431, "text/plain; charset=utf-8", "request head too large\n", {}};
    } else {
      const auto line_end = head.find_first_of("\r\n");
      const std::string_view line = std::string_view(head).substr(0, line_end);
      const auto sp1 = line.find(' ');
      const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (head.empty()) return;  // nothing sent in time: just hang up
      if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) {
        response = {400, "text/plain; charset=utf-8", "bad request\n", {}};
      } else {
        HttpRequest request;
        request.method = std::string(line.substr(0, sp1));
        std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        target = target.substr(0, target.find('?'));
        request.path = std::string(target);
        is_head = request.method == "HEAD";
        try {
          response = handler(request);
        } catch (const std::exception& e) {
          response = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
        }
      }
    }
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + std::string(reason(response.status)) +
                      "\r\nContent-Type: " + response.content_type +
                      "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\nConnection: close\r\n";
    for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
    out += "\r\n";
    if (!is_head) out += response.body;
    write_all(fd, out, deadline);
    ::shutdown(fd, SHUT_WR);
    drain(fd);
  }

  /// Reads what the client still sends (bounded) so that closing does not
  /// reset the connection and destroy the response before the client read it.
  static void drain(int fd) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(250);
    std::array<char, 4096> buffer;
    for (std::size_t total = 0; total < 65536;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return;
      const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
      if (n <= 0) return;
      total += static_cast<std::size_t>(n);
    }
  }
};

HttpServer::HttpServer(const std::string& listen, Handler handler) : impl_(std::make_unique<Impl>()) {
  const ListenAddress parsed = parse_listen_address(listen);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(parsed.host.c_str(), parsed.port.c_str(), &hints, &found); rc != 0) {
    throw listen_error(listen, std::string("cannot resolve host '") + parsed.host + "': " + ::gai_strerror(rc));
  }
  std::string last_error = "no usable address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) {
      last_error = std::string("cannot create socket: ") + std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      last_error = std::string("cannot bind: ") + std::strerror(errno);
      continue;
    }
    if (::listen(fd.get(), 64) != 0) {
      last_error = std::string("cannot listen: ") + std::strerror(errno);
      continue;
    }
    impl_->listener = std::move(fd);
    break;
  }
  ::freeaddrinfo(found);
  if (impl_->listener.get() < 0) throw listen_error(listen, last_error);

  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(impl_->listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  impl_->bound = format_address(bound);

  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC) != 0) {
    throw listen_error(listen, std::string("cannot create wake-up pipe: ") + std::strerror(errno));
  }
  impl_->wake_read = Fd(pipe_fds[0]);
  impl_->wake_write = Fd(pipe_fds[1]);
  impl_->handler = std::move(handler);
  impl_->thread = std::thread([impl = impl_.get()] { impl->serve(); });
}

HttpServer::~HttpServer() {
  impl_->wake_write.reset();  // POLLHUP on the read end stops serve()
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string HttpServer::address() const { return impl_->bound; }

}  // namespace neardup::metrics
