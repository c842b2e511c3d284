#include "stream/kafka/clients/embedded_broker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace neardup::stream {

// ------------------------------------------------------------------ forwarder

namespace {

std::uint16_t be16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint16_t>((u[0] << 8) | u[1]);
}

std::uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         u[3];
}

constexpr std::int16_t kApiMetadata = 3;
constexpr std::int16_t kApiFindCoordinator = 10;
constexpr std::size_t kMaxHeldFrame = 4 << 20;  // a Metadata request or response is a few KB

rd_kafka_mock_cluster_t* raw(kafka::MockClusterHandle* cluster) {
  return reinterpret_cast<rd_kafka_mock_cluster_t*>(cluster);
}

}  // namespace

/// Relays every connection accepted on 127.0.0.1:`port` (0: a free port) to
/// the mock broker at 127.0.0.1:`target`, so that clients only ever know
/// 127.0.0.1:port(): in Metadata and FindCoordinator responses the mock's own
/// address (host "127.0.0.1" then the int32 port `target`, in every version of
/// both) is rewritten to port(). Without that, clients would connect to the
/// mock's ephemeral port directly, and after a restart (a new port) librdkafka
/// 2.0.2 re-points the broker but not its group coordinator handle, whose id
/// stays the same: a consumer could never rejoin its group. Before a Metadata
/// request reaches the mock, `asked` is called (on the forwarder's thread) with
/// each topic it names: the mock creates a missing topic it is asked about.
///
/// One thread polls every socket. Requests pass through as they come (their
/// headers are read to know which responses to rewrite), except Metadata
/// requests, held whole until `asked` has seen their topics; responses pass
/// through too, except the few to rewrite, held whole. A held frame is at most
/// kMaxHeldFrame.
/// Reads from a side stop while kBufferBytes wait to be written to the other,
/// so memory stays bounded (kMaxLinks connections, more are refused). When one
/// side ends its output the other side's is ended too (shutdown); a link is
/// closed on both sides once both directions are done or either side fails.
/// The destructor wakes the thread, joins it and closes every socket.
class EmbeddedBroker::Forwarder {
 public:
  static constexpr std::size_t kMaxLinks = 256;
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  using TopicAsked = std::function<void(const std::string& topic)>;

  Forwarder(int port, int target, TopicAsked asked)
      : port_(port), target_(target), asked_(std::move(asked)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail("socket", port);
    const int on = 1;
    // A restarted broker must get its port back while old connections sit in TIME_WAIT.
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address = loopback(port);
    socklen_t length = sizeof address;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        ::listen(listen_fd_, 64) != 0 || !set_nonblocking(listen_fd_) ||
        ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      const int error = errno;
      close_all();
      errno = error;
      fail("bind", port);
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }

  ~Forwarder() {
    const char byte = 0;
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
    close_all();
  }

  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  /// The port clients connect to (the one picked when constructed with 0).
  int port() const { return port_; }

 private:
  /// One direction of a link: the Kafka frames (int32 size, then the body) read
  /// from one side and the bytes waiting to be written to the other.
  struct Direction {
    std::string out;  // to write; out[sent..] still pending
    std::size_t sent = 0;
    std::string head;             // the start of a frame being read (size and header)
    std::uint32_t remaining = 0;  // body bytes of the current frame still to come (after head)
    bool holding = false;         // the current frame (to read or rewrite first) is kept in `held`
    std::string held;
    bool eof = false;   // the side read from ended its output
    bool shut = false;  // ... and the other side's output was ended too
    bool pending() const { return sent < out.size(); }
    bool full() const { return out.size() - sent >= kBufferBytes; }
  };
  struct Link {
    std::array<int, 2> fd{-1, -1};       // [0] the client, [1] the mock broker
    std::array<Direction, 2> dir;        // dir[i]: read from fd[i], written to fd[1 - i]
    std::vector<std::uint32_t> rewrite;  // correlation ids of requests whose responses name brokers
    bool failed = false;
  };

  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    return address;
  }
  static bool set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
  }
  [[noreturn]] static void fail(const char* what, int port) {
    throw kafka::KafkaError("embedded broker: cannot listen on 127.0.0.1:" + std::to_string(port) +
                                " (" + what + ": " + std::strerror(errno) + ")",
                            kafka::errc::fail, kafka::Severity::fatal);
  }

  /// Client -> broker: requests pass, except Metadata requests, held whole
  /// until `asked_` has seen their topics; a request's header (size, api key,
  /// version, correlation id) says whether its response is to be rewritten.
  void feed_requests(Link& link, std::string_view data) const {
    Direction& d = link.dir[0];
    while (!data.empty() && !link.failed) {
      if (d.remaining == 0 && !d.holding) {
        const std::size_t take = std::min<std::size_t>(12 - d.head.size(), data.size());
        d.head.append(data.substr(0, take));
        data.remove_prefix(take);
        if (d.head.size() < 12) return;
        const std::uint32_t size = be32(d.head.data());
        const auto api_key = static_cast<std::int16_t>((be32(d.head.data() + 4) >> 16) & 0xFFFF);
        if (size < 8) {
          link.failed = true;  // not Kafka
          return;
        }
        if (api_key == kApiMetadata || api_key == kApiFindCoordinator)
          link.rewrite.push_back(be32(d.head.data() + 8));
        d.remaining = size - 8;
        if (api_key == kApiMetadata) {
          if (d.remaining > kMaxHeldFrame) {
            link.failed = true;
            return;
          }
          d.holding = true;
          d.held = std::move(d.head);
        } else {
          d.out += d.head;
        }
        d.head.clear();
      } else {
        const std::size_t take = std::min<std::size_t>(d.remaining, data.size());
        (d.holding ? d.held : d.out).append(data.substr(0, take));
        d.remaining -= static_cast<std::uint32_t>(take);
        data.remove_prefix(take);
      }
      if (d.holding && d.remaining == 0) {
        announce_topics(d.held);
        d.out += d.held;
        d.held.clear();
        d.holding = false;
      }
    }
  }

  /// Calls asked_ with each topic a whole Metadata request frame names.
  /// Versions 0-8 (the mock answers 0-2) share the layout read here: request
  /// header v1 (size, api key, version, correlation id, nullable client id),
  /// then an int32 count (-1: every topic) of int16-length topic names.
  void announce_topics(std::string_view frame) const {
    if (frame.size() < 12 || be16(frame.data() + 6) > 8) return;
    std::size_t at = 12;
    // An int16 length (-1: null) and that many bytes; false when the frame ends first.
    const auto string_at = [&](std::string_view& value) {
      if (frame.size() - at < 2) return false;
      const auto length = static_cast<std::int16_t>(be16(frame.data() + at));
      at += 2;
      const std::size_t n = length < 0 ? 0 : static_cast<std::size_t>(length);
      if (frame.size() - at < n) return false;
      value = frame.substr(at, n);
      at += n;
      return true;
    };
    std::string_view text;
    if (!string_at(text) || frame.size() - at < 4) return;  // the client id
    const auto count = static_cast<std::int32_t>(be32(frame.data() + at));
    at += 4;
    for (std::int32_t i = 0; i < count && string_at(text); ++i) asked_(std::string(text));
  }

  /// Broker -> client: responses pass, except those named in link.rewrite,
  /// held whole and rewritten.
  void feed_responses(Link& link, std::string_view data) const {
    Direction& d = link.dir[1];
    while (!data.empty() && !link.failed) {
      if (d.remaining == 0 && !d.holding) {
        const std::size_t take = std::min<std::size_t>(8 - d.head.size(), data.size());
        d.head.append(data.substr(0, take));
        data.remove_prefix(take);
        if (d.head.size() < 8) return;
        const std::uint32_t size = be32(d.head.data());
        const std::uint32_t correlation = be32(d.head.data() + 4);
        if (size < 4) {
          link.failed = true;
          return;
        }
        d.remaining = size - 4;
        const auto it = std::find(link.rewrite.begin(), link.rewrite.end(), correlation);
        if (it != link.rewrite.end()) {
          link.rewrite.erase(it);
          if (d.remaining > kMaxHeldFrame) {
            link.failed = true;
            return;
          }
          d.holding = true;
          d.held = std::move(d.head);
        } else {
          d.out += d.head;
        }
        d.head.clear();
      } else {
        const std::size_t take = std::min<std::size_t>(d.remaining, data.size());
        (d.holding ? d.held : d.out).append(data.substr(0, take));
        d.remaining -= static_cast<std::uint32_t>(take);
        data.remove_prefix(take);
      }
      if (d.holding && d.remaining == 0) {
        rewrite_address(d.held);
        d.out += d.held;
        d.held.clear();
        d.holding = false;
      }
    }
  }

  /// "127.0.0.1" followed by the int32 mock port -> the same with our port.
  void rewrite_address(std::string& frame) const {
    std::string from = "127.0.0.1", to = "127.0.0.1";
    for (int shift = 24; shift >= 0; shift -= 8) {
      from.push_back(static_cast<char>((static_cast<std::uint32_t>(target_) >> shift) & 0xFF));
      to.push_back(static_cast<char>((static_cast<std::uint32_t>(port_) >> shift) & 0xFF));
    }
    for (std::size_t at = frame.find(from); at != std::string::npos;
         at = frame.find(from, at + to.size())) {
      frame.replace(at, from.size(), to);
    }
  }

  void close_all() {
    for (Link& link : links_) close_link(link);
    links_.clear();
    for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }
  static void close_link(Link& link) {
    for (int& fd : link.fd) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

  void accept_one() {
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;  // EAGAIN, or the client gave up already
    if (links_.size() >= kMaxLinks) {
      ::close(client);
      return;
    }
    // Loopback connect to a listening socket completes at once (or is refused:
    // then the client sees its connection closed, as if the broker were down).
    const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = loopback(target_);
    if (upstream < 0 ||
        ::connect(upstream, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      if (upstream >= 0) ::close(upstream);
      ::close(client);
      return;
    }
    const int on = 1;
    Link& link = links_.emplace_back();
    link.fd = {client, upstream};
    for (int i = 0; i < 2; ++i) {
      ::setsockopt(link.fd[i], IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      if (!set_nonblocking(link.fd[i])) link.failed = true;
    }
  }

  /// Moves what it can for one link after poll() reported `revents` for its two sockets.
  void serve(Link& link, const std::array<short, 2>& revents, char* buffer) const {
    for (int i = 0; i < 2 && !link.failed; ++i) {
      Direction& d = link.dir[i];
      if ((revents[i] & (POLLIN | POLLHUP | POLLERR)) && !d.eof && !d.full()) {
        const ssize_t n = ::recv(link.fd[i], buffer, kBufferBytes, 0);
        if (n > 0) {
          const std::string_view data(buffer, static_cast<std::size_t>(n));
          if (i == 0)
            feed_requests(link, data);
          else
            feed_responses(link, data);
        } else if (n == 0) {
          d.eof = true;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          link.failed = true;
        }
      }
    }
    for (int i = 0; i < 2 && !link.failed; ++i) {
      Direction& d = link.dir[i];
      const int to = link.fd[1 - i];
      if (d.pending()) {
        // Try at once: a fresh read usually fits in the socket buffer.
        const ssize_t n = ::send(to, d.out.data() + d.sent, d.out.size() - d.sent, MSG_NOSIGNAL);
        if (n > 0)
          d.sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          link.failed = true;
        if (d.sent == d.out.size()) d.out.clear(), d.sent = 0;
      }
      if (d.eof && !d.pending() && !d.shut) {
        ::shutdown(to, SHUT_WR);
        d.shut = true;
      }
    }
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<Link*> order;
    const auto buffer = std::make_unique<char[]>(kBufferBytes);
    for (;;) {
      fds.clear();
      order.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (Link& link : links_) {
        order.push_back(&link);
        for (int i = 0; i < 2; ++i) {
          short events = 0;
          if (!link.dir[i].eof && !link.dir[i].full()) events |= POLLIN;
          if (link.dir[1 - i].pending()) events |= POLLOUT;
          // Nothing wanted: ignore the socket (-1), or a hang-up would wake poll() again and again.
          fds.push_back({events ? link.fd[i] : -1, events, 0});
        }
      }
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;  // woken by the destructor
      if (fds[1].revents & POLLIN) accept_one();
      for (std::size_t k = 0; k < order.size(); ++k) {
        Link& link = *order[k];
        const std::array<short, 2> revents{fds[2 + 2 * k].revents, fds[3 + 2 * k].revents};
        if (revents[0] || revents[1]) serve(link, revents, buffer.get());
      }
      links_.remove_if([](Link& link) {
        const bool done = link.failed || (link.dir[0].shut && link.dir[1].shut);
        if (done) close_link(link);
        return done;
      });
    }
  }

  int port_;
  int target_;
  TopicAsked asked_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::list<Link> links_;  // only the thread touches it while it runs
  std::thread thread_;     // last: starts after everything it uses
};

// ------------------------------------------------------------------ broker

EmbeddedBroker::EmbeddedBroker(int brokers, std::optional<int> forward_port) {
  if (forward_port && brokers != 1) {
    throw kafka::KafkaError(
        "embedded broker: the forwarder (a fixed port) needs exactly one broker",
        kafka::errc::invalid_arg, kafka::Severity::fatal);
  }
  // The mock cluster lives inside a librdkafka handle; a bare producer that
  // never produces is the lightest host.
  kafka::ConfPtr conf = kafka::make_conf({{"log_level", "3"}});
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, reinterpret_cast<rd_kafka_conf_t*>(conf.get()),
                                errstr, sizeof errstr);
  if (!rk) {
    throw kafka::KafkaError(std::string("embedded broker: cannot create host client: ") + errstr,
                            kafka::errc::fail, kafka::Severity::fatal);
  }
  conf.release();
  host_.reset(reinterpret_cast<kafka::ClientHandle*>(rk));
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (!cluster) {
    throw kafka::KafkaError(
        "embedded broker: cannot start the mock cluster (no free loopback port?)",
        kafka::errc::fail, kafka::Severity::fatal);
  }
  cluster_ = reinterpret_cast<kafka::MockClusterHandle*>(cluster);
  if (forward_port) {
    try {
      const std::string own = rd_kafka_mock_cluster_bootstraps(cluster);  // "127.0.0.1:port"
      // A judge topic must have one partition (the mock would give it 4). Errors
      // are left to the Metadata answer (an existing topic is kept as it is).
      auto asked = [cluster](const std::string& topic) {
        if (has_judge_topic_name(topic)) rd_kafka_mock_topic_create(cluster, topic.c_str(), 1, 1);
      };
      forwarder_ = std::make_unique<Forwarder>(
          *forward_port, std::stoi(own.substr(own.rfind(':') + 1)), std::move(asked));
    } catch (...) {
      rd_kafka_mock_cluster_destroy(cluster);
      throw;
    }
    fixed_bootstrap_ = "127.0.0.1:" + std::to_string(forwarder_->port());
  }
}

EmbeddedBroker::~EmbeddedBroker() {
  forwarder_.reset();  // its connections first, while the mock broker still answers
  if (cluster_) rd_kafka_mock_cluster_destroy(raw(cluster_));
}

std::string EmbeddedBroker::bootstrap() const {
  return fixed_bootstrap_.empty() ? rd_kafka_mock_cluster_bootstraps(raw(cluster_))
                                  : fixed_bootstrap_;
}

void EmbeddedBroker::create_topic(const std::string& topic, int partitions) {
  const kafka::ErrorCode err(
      rd_kafka_mock_topic_create(raw(cluster_), topic.c_str(), partitions, 1));
  if (err && err != kafka::errc::topic_already_exists) {
    throw kafka::KafkaError(
        "embedded broker: create topic '" + topic + "': " + kafka::describe(err), err,
        kafka::Severity::fatal);
  }
}

void EmbeddedBroker::set_down(int id) { rd_kafka_mock_broker_set_down(raw(cluster_), id); }
void EmbeddedBroker::set_up(int id) { rd_kafka_mock_broker_set_up(raw(cluster_), id); }

void EmbeddedBroker::push_request_errors(int api_key, const std::vector<kafka::ErrorCode>& errors) {
  std::vector<rd_kafka_resp_err_t> codes;
  for (const kafka::ErrorCode err : errors)
    codes.push_back(static_cast<rd_kafka_resp_err_t>(err.value()));
  rd_kafka_mock_push_request_errors_array(raw(cluster_), static_cast<std::int16_t>(api_key),
                                          codes.size(), codes.data());
}

void EmbeddedBroker::push_broker_request_errors(int id, int api_key,
                                                const std::vector<kafka::ErrorCode>& errors) {
  // One at a time (the call takes them as varargs): each is appended to the
  // broker's queue for that request type, so they come in order.
  for (const kafka::ErrorCode err : errors) {
    rd_kafka_mock_broker_push_request_error_rtts(raw(cluster_), id,
                                                 static_cast<std::int16_t>(api_key), 1,
                                                 static_cast<rd_kafka_resp_err_t>(err.value()), 0);
  }
}

kafka::ErrorCode EmbeddedBroker::set_leader(const std::string& topic, std::int32_t partition,
                                            int id) {
  return kafka::ErrorCode(
      rd_kafka_mock_partition_set_leader(raw(cluster_), topic.c_str(), partition, id));
}

kafka::ErrorCode EmbeddedBroker::set_group_coordinator(const std::string& group, int id) {
  return kafka::ErrorCode(rd_kafka_mock_coordinator_set(raw(cluster_), "group", group.c_str(), id));
}

std::vector<std::string> service_topics(const config::KafkaOptions& kafka) {
  std::vector<std::string> topics = kafka.input_topics;
  for (const auto* t : {&kafka.output_topic, &kafka.duplicates_topic, &kafka.dead_letter_topic,
                        &kafka.changelog_topic, &kafka.summary_topic}) {
    if (!t->empty() && std::find(topics.begin(), topics.end(), *t) == topics.end())
      topics.push_back(*t);
  }
  return topics;
}

std::vector<std::string> judge_topics(const config::KafkaOptions& kafka) {
  if (kafka.judge_topic.empty()) return {};
  return {kafka.judge_topic, kafka.verdict_topic};
}

bool has_judge_topic_name(std::string_view topic) {
  static const std::vector<std::string> suffixes = [] {
    config::KafkaOptions own;  // a group's own names with an empty group id: "-judge", ...
    own.group_id.clear();
    config::derive_group_topics(own);
    return judge_topics(own);
  }();
  for (const std::string& suffix : suffixes) {
    if (topic.size() > suffix.size() && topic.ends_with(suffix)) return true;
  }
  return false;
}

void write_bootstrap_file(const std::string& path, const std::string& bootstrap) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << bootstrap << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write bootstrap file '" + temp + "'");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot write bootstrap file '" + path + "'");
  }
}

}  // namespace neardup::stream
