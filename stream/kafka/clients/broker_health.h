#pragma once
// Whether neardup reaches its Kafka brokers, from what librdkafka tells the
// service's clients (its producer and consumer share one BrokerHealth):
//   - an outage begins when a client reports that all its brokers are down
//     (errc::all_brokers_down); the brokers named are those the clients'
//     recent connection errors (errc::transport, errc::resolve) were about;
//   - or when a client's statistics show that no broker answers it: some
//     connection UP with requests waiting and nothing received for
//     kStallAfter, none that received within it, and still so kStallConfirm
//     later (a hung or partitioned broker keeps its connections open, and
//     librdkafka reports nothing until request.timeout.ms or socket.timeout.ms);
//   - it ends when a client's statistics (statistics.interval.ms) show a broker
//     in state UP whose connection was made after the outage began: an older
//     connection that librdkafka had not yet seen fail is no evidence; or,
//     after a stall, when a client has received from every broker named since
//     the outage began.
// Each transition is logged once, in neardup's words (base/log.h):
//   warn "Kafka brokers unreachable: 127.0.0.1:39211 (Connect to ... failed: Connection refused)"
//   info "Kafka brokers reachable again after 10.2 s"
// and snapshot() gives the state to /readyz and Prometheus.
//
// Thread-safe: the callbacks come from whichever thread serves a client's
// queue; one mutex (mutex_, annotated for clang's -Wthread-safety), held for
// O(brokers) work and the one log line.
// The state machine itself is pure (time is a parameter), so it is tested
// without a broker.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_annotations.h"
#include "metrics/metrics.h"
#include "stream/kafka/errors.h"

namespace neardup::stream {

/// One broker as a client's statistics describe it.
struct BrokerObservation {
  std::string address;            ///< "host:port" (the statistics' nodename)
  std::string state;              ///< librdkafka's: "UP", "DOWN", "CONNECT", "INIT", ...
  std::int64_t state_age_us = 0;  ///< how long it has been in that state
  std::int64_t waiting = 0;       ///< requests sent and not answered yet (waitresp_cnt)
  std::int64_t rx_idle_us = -1;   ///< since the connection last received (rxidle; -1: never)
};

/// The brokers of one librdkafka statistics JSON document ("brokers" object),
/// configured and learned ones only (not the logical "GroupCoordinator" nor the
/// internal broker). Empty if the document cannot be read. O(document size).
std::vector<BrokerObservation> parse_broker_statistics(std::string_view json);

/// "127.0.0.1:9092" from a librdkafka error reason like
/// "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: ..." (also
/// ".../bootstrap: ..." and "ssl://host:9093/2: ..."); "" if the reason does
/// not start with a broker's name (e.g. "GroupCoordinator: ...").
std::string broker_of_reason(std::string_view reason);

class BrokerHealth {
 public:
  using Clock = std::chrono::steady_clock;
  /// A connection with requests waiting that received nothing for this long
  /// is a broker that stopped answering (fetches are answered within
  /// fetch.wait.max.ms, which neardup sets to 5-20 ms, even with nothing new).
  static constexpr std::chrono::seconds kStallAfter{10};
  /// ...and still so, with nothing received, in a report this much later.
  static constexpr std::chrono::seconds kStallConfirm{2};

  struct Snapshot {
    bool reachable = true;    ///< false during an outage
    Clock::time_point since;  ///< when `reachable` last changed (construction at first)
    std::vector<std::string> unreachable;  ///< during an outage: the brokers named when it began
    std::string reason;                    ///< during an outage: what librdkafka said
    std::uint64_t outages = 0;             ///< outages begun since construction
    /// Per broker address, from every client's latest statistics: up if any
    /// client has a connection to it. Brokers no client has tried yet are absent.
    std::map<std::string, bool> brokers;

    /// For /readyz: "Kafka brokers unreachable for 12.3 s: 127.0.0.1:9092 (reason)".
    std::string describe(Clock::time_point now) const;
  };

  /// `log_transitions` false: only the state changes (tests of the machine alone).
  explicit BrokerHealth(bool log_transitions = true, Clock::time_point now = Clock::now());
  BrokerHealth(const BrokerHealth&) = delete;
  BrokerHealth& operator=(const BrokerHealth&) = delete;

  /// A client's error callback: `client` is librdkafka's name for it (e.g.
  /// "rdkafka#producer-1"). Errors other than the connection errors above are ignored.
  void on_error(std::string_view client, kafka::ErrorCode err, std::string_view reason,
                Clock::time_point now = Clock::now()) EXCLUDES(mutex_);
  /// A client's statistics callback (statistics.interval.ms), parsed.
  void on_statistics(std::string_view client, std::string_view json,
                     Clock::time_point now = Clock::now());
  /// The same with the brokers already read (tests).
  void on_brokers(std::string_view client, const std::vector<BrokerObservation>& brokers,
                  Clock::time_point now = Clock::now()) EXCLUDES(mutex_);

  Snapshot snapshot() const EXCLUDES(mutex_);

 private:
  struct LastError {
    std::string reason;
    Clock::time_point at;
  };

  void begin_outage(std::string_view client, std::string_view reason, Clock::time_point now)
      REQUIRES(mutex_);
  void start_outage(std::string_view client, std::vector<std::string> named, std::string reason,
                    std::string_view headline, Clock::time_point now) REQUIRES(mutex_);
  void end_outage(std::string_view client, const std::vector<std::string>& brokers,
                  Clock::time_point at) REQUIRES(mutex_);

  const bool log_;
  mutable base::Mutex mutex_;
  Snapshot state_ GUARDED_BY(mutex_);
  /// Per broker address, since the last transition.
  std::map<std::string, LastError, std::less<>> errors_ GUARDED_BY(mutex_);
  /// Client -> address -> up.
  std::map<std::string, std::map<std::string, bool>, std::less<>> clients_ GUARDED_BY(mutex_);
  struct StallSeen {
    Clock::time_point at;
    std::int64_t least_idle_us = 0;
  };
  /// Client -> when its statistics first showed a stall (none answering, some waiting).
  std::map<std::string, StallSeen, std::less<>> stall_seen_ GUARDED_BY(mutex_);
  bool stall_outage_ GUARDED_BY(mutex_) = false;  ///< the current outage began as a stall
};

/// Copies the broker connection state into the Prometheus snapshot
/// (neardup_kafka_brokers_up, neardup_kafka_broker_up, neardup_kafka_broker_outages_total).
void add_to_metrics(const BrokerHealth::Snapshot& health, metrics::ServiceStats& stats);

/// What else /readyz looks at besides the brokers.
struct Readiness {
  bool assigned = false;             ///< input partitions held
  bool window_ready = false;         ///< the window rebuilt from the changelog
  double judge_waiting_seconds = 0;  ///< the oldest request without a verdict (group judge)
  std::uint64_t judge_awaiting = 0;  ///< messages waiting for verdicts
};

/// A request unanswered this long means nobody judges for the group (a judge
/// takeover takes the session timeout, 6 s by default, plus the window's rebuild).
inline constexpr double kJudgeStalledSeconds = 30;

/// /readyz's answer: ready when the service holds partitions, its window is
/// rebuilt, the brokers are reachable and the group's judge answers; else the
/// reason, brokers first (an outage also explains missing partitions and
/// silent judges). "" when ready.
std::string not_ready_reason(const BrokerHealth::Snapshot& health, const Readiness& service,
                             BrokerHealth::Clock::time_point now = BrokerHealth::Clock::now());

}  // namespace neardup::stream
