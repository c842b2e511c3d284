// metrics/http_server: probes stay fast while many clients stall. Loopback
// only (127.0.0.1:0); every loop is bounded in count and time.

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "metrics/http/http_server.h"
#include "metrics/metrics.h"

namespace neardup::metrics {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Tests that hold no more clients than the pool's floor start only that many
// workers: starting and joining a thousand threads takes seconds of CPU under
// the sanitizers.
constexpr int kWorkers = HttpServer::kMinWorkers;
constexpr int kIdleClients = 500;
constexpr int kSlowClients = 20;
constexpr auto kDripInterval = milliseconds(500);

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

/// A blocking TCP connection to `address` ("127.0.0.1:port"). Throws if it is
/// not established within 3 s (a server that stopped accepting).
Socket connect_to(const std::string& address) {
  const ListenAddress parsed = parse_listen_address(address);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(parsed.host.c_str(), parsed.port.c_str(), &hints, &found) != 0) {
    throw std::runtime_error("resolve " + address);
  }
  Socket socket(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int rc = socket.get() < 0 ? -1 : ::connect(socket.get(), found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{socket.get(), POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof error;
    rc = ::poll(&p, 1, 3000) == 1 &&
                 ::getsockopt(socket.get(), SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
                 error == 0
             ? 0
             : -1;
  }
  if (rc != 0) throw std::runtime_error("no connection to " + address + " within 3 s");
  ::fcntl(socket.get(), F_SETFL, ::fcntl(socket.get(), F_GETFL) & ~O_NONBLOCK);
  return socket;
}

struct Probe {
  int status = 0;
  milliseconds took{0};
};

/// Sends `raw` and reads until the server closes; gives up after 10 s.
Probe round_trip(const std::string& address, const std::string& raw) {
  const auto start = Clock::now();
  const Socket socket = connect_to(address);
  ::send(socket.get(), raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[4096];
  while (Clock::now() - start < std::chrono::seconds(10)) {
    pollfd p{socket.get(), POLLIN, 0};
    if (::poll(&p, 1, 1000) < 0) break;
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t n = ::recv(socket.get(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  Probe result;
  result.took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  if (reply.rfind("HTTP/1.1 ", 0) == 0) result.status = std::stoi(reply.substr(9, 3));
  return result;
}

HttpResponse ok(const HttpRequest&) { return {200, "text/plain", "ok\n", {}}; }

Probe probe(const std::string& address, const std::string& path) {
  return round_trip(address, "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n");
}

/// True once the server has closed `socket` (EOF or reset), without blocking.
/// Reads what the server sent first: a slowloris client gets a 400 before the close.
bool closed_by_server(const Socket& socket) {
  char buffer[1024];
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t n = ::recv(socket.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
  return false;
}

/// Raises the soft RLIMIT_NOFILE towards the hard limit so that this process can
/// hold both ends of every connection. Returns the soft limit now in force.
rlim_t raise_open_files_limit(rlim_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min(wanted, limit.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

/// Slowloris clients: each sends a request head one byte per kDripInterval and
/// never finishes it. Stops when destroyed; at most 40 rounds.
class SlowClients {
 public:
  SlowClients(const std::string& address, int count) {
    for (int i = 0; i < count; ++i) sockets_.push_back(connect_to(address));
    thread_ = std::thread([this] {
      const std::string head =
          "GET /metrics HTTP/1.1\r\nHost: test\r\nX-Slow: 0123456789012345678901234567890123";
      for (std::size_t i = 0; i < 40 && !stop_.load(); ++i) {
        for (const Socket& s : sockets_) ::send(s.get(), &head[i], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        ++bytes_sent_;
        for (auto waited = milliseconds(0); waited < kDripInterval && !stop_.load();
             waited += milliseconds(50)) {
          std::this_thread::sleep_for(milliseconds(50));
        }
      }
    });
  }
  ~SlowClients() {
    stop_.store(true);
    thread_.join();
  }
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  const std::vector<Socket>& sockets() const { return sockets_; }
  int bytes_sent() const { return bytes_sent_.load(); }

 private:
  std::vector<Socket> sockets_;
  std::atomic<bool> stop_{false};
  std::atomic<int> bytes_sent_{0};
  std::thread thread_;
};

}  // namespace

TEST(HttpServer, AnswersProbesWithinOneSecondWhile500IdleAnd20SlowlorisClientsHoldConnections) {
  // Both ends of 520 connections live in this process, and the server sizes its
  // worker pool from the same limit (half of it).
  if (raise_open_files_limit(4096) < 2048) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below 2048";

  Exporter exporter("127.0.0.1:0", {"1.2.3", {}});
  exporter.set_ready(true);
  const std::string address = exporter.address();
  ASSERT_EQ(probe(address, "/readyz").status, 200);

  // A server that takes connections one at a time would need minutes here.
  const auto connect_deadline = Clock::now() + std::chrono::seconds(10);
  std::vector<Socket> idle;
  for (int i = 0; i < kIdleClients; ++i) {
    ASSERT_LT(Clock::now(), connect_deadline)
        << "only " << i << " idle connections established in 10 s";
    idle.push_back(connect_to(address));
  }
  const SlowClients slow(address, kSlowClients);
  const auto loaded = Clock::now();
  std::this_thread::sleep_for(milliseconds(200));  // the server has taken every connection by now

  for (int round = 0; round < 3; ++round) {
    const Probe ready = probe(address, "/readyz");
    EXPECT_EQ(ready.status, 200);
    EXPECT_LT(ready.took, milliseconds(1000)) << "round " << round;
    const Probe metrics = probe(address, "/metrics");
    EXPECT_EQ(metrics.status, 200);
    EXPECT_LT(metrics.took, milliseconds(1000)) << "round " << round;
  }
  // The load was really there while we probed: nobody had been dropped yet.
  if (Clock::now() - loaded < HttpServer::kRequestTimeout) {
    EXPECT_EQ(std::count_if(idle.begin(), idle.end(), closed_by_server), 0);
    EXPECT_EQ(std::count_if(slow.sockets().begin(), slow.sockets().end(), closed_by_server), 0);
  }
  EXPECT_GE(slow.bytes_sent(), 1);
}

TEST(HttpServer, ClosesIdleAndSlowlorisClientsAfterTheRequestTimeout) {
  if (raise_open_files_limit(1024) < 512) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below 512";
  HttpServer server("127.0.0.1:0", ok);
  std::vector<Socket> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(connect_to(server.address()));
  const SlowClients slow(server.address(), 5);

  const auto deadline = Clock::now() + HttpServer::kRequestTimeout + std::chrono::seconds(3);
  auto all_closed = [&] {
    return std::all_of(idle.begin(), idle.end(), closed_by_server) &&
           std::all_of(slow.sockets().begin(), slow.sockets().end(), closed_by_server);
  };
  while (!all_closed() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(all_closed());
}

TEST(HttpServer, RefusesAnUnfinishedHeadWith408AfterTheTimeoutAndAnOverLargeOneWith431) {
  HttpServer server("127.0.0.1:0", ok, kWorkers);
  const Probe unfinished = round_trip(server.address(), "GET /metrics HTTP/1.1\r\nHost: te");
  EXPECT_EQ(unfinished.status, 408);
  EXPECT_GE(unfinished.took, HttpServer::kRequestTimeout - milliseconds(100));
  const Probe large =
      round_trip(server.address(), "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'x'));
  EXPECT_EQ(large.status, 431);
  EXPECT_LT(large.took, HttpServer::kRequestTimeout);
}

TEST(HttpServer, ReportsTheEphemeralPortActuallyBound) {
  HttpServer server("127.0.0.1:0", ok, kWorkers);
  const std::string address = server.address();
  EXPECT_THAT(address, ::testing::StartsWith("127.0.0.1:"));
  EXPECT_NE(address, "127.0.0.1:0");
  EXPECT_EQ(probe(address, "/anything").status, 200);
}

// The server refuses what `neardup config check` refuses, for the same reason
// (base::parse_listen_address), before it binds anything.
TEST(HttpServer, RefusesTheAddressesTheConfigurationRefusesSayingWhy) {
  const struct {
    const char* listen;
    const char* error;
  } cases[] = {
      {"[::1]:0", "metrics.listen '[::1]:0': IPv6 addresses cannot be served"},
      {"999.1.1.1:80",
       "metrics.listen '999.1.1.1:80': expected an IPv4 address (four numbers in "
       "0..255, like 127.0.0.1) as the host"},
      {"127.0.0.1:99999",
       "metrics.listen '127.0.0.1:99999': port out of range: 99999 is not in "
       "0..65535 (0 picks a free port)"},
      {"127.0.0.1", "metrics.listen '127.0.0.1': expected host:port like 127.0.0.1:9464"},
  };
  for (const auto& c : cases) {
    try {
      HttpServer server(c.listen, ok, kWorkers);
      ADD_FAILURE() << c.listen << " was served at " << server.address();
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith(c.error)) << c.listen;
    }
  }
}

TEST(HttpServer, PassesMethodAndPathWithoutQueryToTheHandler) {
  std::mutex mutex;
  std::vector<std::string> seen;
  HttpServer server(
      "127.0.0.1:0",
      [&](const HttpRequest& request) {
        std::lock_guard lock(mutex);
        seen.push_back(request.method + " " + request.path);
        return HttpResponse{200, "text/plain", "x\n", {}};
      },
      kWorkers);
  EXPECT_EQ(probe(server.address(), "/metrics?x=1").status, 200);
  EXPECT_EQ(probe(server.address(), "/a/b").status, 200);
  std::lock_guard lock(mutex);
  EXPECT_THAT(seen, ::testing::ElementsAre("GET /metrics", "GET /a/b"));
}

TEST(HttpServer, StopsPromptlyWhenNoClientIsConnected) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under ThreadSanitizer 1024 worker threads stop too slowly for this bound (it "
                  "ran 2.2 s once)";
#endif
  auto server = std::make_unique<HttpServer>("127.0.0.1:0", ok);
  EXPECT_EQ(probe(server->address(), "/").status, 200);
  const auto start = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - start, milliseconds(1500));  // civetweb alone takes up to 2 s
}

}  // namespace neardup::metrics
