#pragma once
// An in-process Kafka-protocol broker: librdkafka's mock cluster (rdkafka_mock.h)
// listening on loopback. Real clients (kcat, another neardup) can connect to
// bootstrap(). It is for demos, tests and benchmarks, not for keeping data: the
// mock keeps only a few MB per partition and silently trims older records.
//
// `neardup broker` puts a small loopback TCP forwarder in front of the mock:
// it listens on a port of its own (`--port N`, or a free one), relays each
// connection to the mock broker and writes its own port for the mock's in the
// broker addresses of Metadata and FindCoordinator responses, so clients only
// ever know 127.0.0.1:N. librdkafka 2.0.2's mock brokers always listen on
// ephemeral ports (there is no API to choose one), and a client that learned
// one would not find a restarted broker's group coordinator again (librdkafka
// keeps its old address while its id stays).
//
// The mock creates a topic that a client asks about (Metadata) before it
// exists, with 4 partitions; it has no setting for that. A judge or verdict
// topic must have one (stream/judge/judge.h), and a `neardup run` of a group whose
// topics were not created first would leave them behind with 4. So the
// forwarder also reads the topic names of Metadata requests, and a missing
// topic named like a group's judge or verdict topic (`<group>-judge`,
// `<group>-verdicts`) is created with one partition before the mock sees the
// request.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {

namespace kafka {
/// librdkafka's mock cluster, opaque (embedded_broker.cc converts it).
struct MockClusterHandle;
}  // namespace kafka

/// Owns the mock cluster and the librdkafka handle that hosts it. Thread-safe
/// as the mock cluster is (its own thread serves clients); the control calls
/// below may be made from any thread.
class EmbeddedBroker {
 public:
  /// Starts `brokers` mock brokers on 127.0.0.1 (ephemeral ports). With
  /// `forward_port` (one broker only), clients reach the cluster only through
  /// the forwarder on 127.0.0.1:`*forward_port` (0: a free port), which is then
  /// what bootstrap() returns, and a judge or verdict topic a client asks about
  /// before it exists is created with one partition. Throws kafka::KafkaError
  /// when the cluster cannot start or the port cannot be bound (in use, or 1 <
  /// brokers).
  explicit EmbeddedBroker(int brokers = 1, std::optional<int> forward_port = std::nullopt);
  ~EmbeddedBroker();
  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;

  /// "127.0.0.1:port[,...]": the bootstrap.servers for clients (the forwarder's port with one).
  std::string bootstrap() const;

  /// Creates a topic (an existing one is left as it is). Throws kafka::KafkaError.
  void create_topic(const std::string& topic, int partitions);

  /// Kafka protocol API keys for push_request_errors().
  static constexpr int kApiProduce = 0;
  static constexpr int kApiFetch = 1;
  static constexpr int kApiOffsetCommit = 8;

  /// Failure injection (tests): take broker `id` (1-based) down or up; make the
  /// next `errors.size()` requests of `api_key` (e.g. kApiProduce) fail.
  void set_down(int id);
  void set_up(int id);
  void push_request_errors(int api_key, const std::vector<kafka::ErrorCode>& errors);
  /// The same, for the requests broker `id` receives only.
  void push_broker_request_errors(int id, int api_key, const std::vector<kafka::ErrorCode>& errors);
  /// Makes broker `id` the leader of the partition (-1: none, so that requests
  /// to it fail until a leader is set again). Returns the error, if any.
  kafka::ErrorCode set_leader(const std::string& topic, std::int32_t partition, int id);
  /// Makes broker `id` the coordinator of consumer group `group`.
  kafka::ErrorCode set_group_coordinator(const std::string& group, int id);

 private:
  class Forwarder;
  kafka::HandlePtr host_;
  kafka::MockClusterHandle* cluster_ = nullptr;
  std::unique_ptr<Forwarder> forwarder_;  // with forward_port; stopped before the cluster
  std::string fixed_bootstrap_;           // "127.0.0.1:port" with the forwarder
};

/// The topics `neardup run` uses: inputs, output, duplicates, dead letters and
/// the window changelog and the story summaries (each when not "").
std::vector<std::string> service_topics(const config::KafkaOptions& kafka);
/// The one-partition topics of the judge (kafka.judge_topic and
/// kafka.verdict_topic; none when kafka.judge_topic is "").
std::vector<std::string> judge_topics(const config::KafkaOptions& kafka);
/// Whether `topic` is named like some group's judge or verdict topic by the
/// names kafka.group_id derives (`<group>-judge`, `<group>-verdicts`).
bool has_judge_topic_name(std::string_view topic);

/// Writes "host:port[,...]\n" to `path` atomically (temp file + rename), so a
/// reader polling for the file never sees half an address. Throws std::runtime_error.
void write_bootstrap_file(const std::string& path, const std::string& bootstrap);

}  // namespace neardup::stream
