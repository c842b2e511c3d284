#pragma once
// The librdkafka properties neardup sets by default (tuned for throughput and
// at-least-once delivery). The user's kafka.consumer / kafka.producer maps
// override them; docs/KAFKA.md lists them.

#include <cstddef>
#include <map>
#include <string>

#include "config/config.h"
#include "stream/kafka/properties.h"

namespace neardup::stream {

std::map<std::string, std::string> default_consumer_properties(const std::string& brokers,
                                                               const std::string& group);
std::map<std::string, std::string> default_producer_properties(const std::string& brokers);

/// The input consumer's max.poll.interval.ms (its rebalance timeout) unless
/// kafka.consumer sets it, or sets a longer session.timeout.ms.
inline constexpr long long kDefaultMaxPollIntervalMs = 60000;
/// The defaults, then the user's kafka.consumer map over them, and
/// group.instance.id = kafka.instance_id when set (static membership). A
/// consumer of these properties that never joins a group (assign() only)
/// drops group.instance.id; one that joins another group derives its own from
/// it (judge_instance_id).
std::map<std::string, std::string> consumer_properties(const std::string& brokers,
                                                       const config::KafkaOptions& kafka);
/// fetch.wait.max.ms of a consumer whose records are waited for (the judge's
/// requests, the verdicts). 5 ms on a cluster that answers a fetch finding
/// nothing only when its wait ends (librdkafka's mock cluster, the embedded
/// broker), so that a record produced meanwhile waits at most that; 500 ms
/// (librdkafka's default) on one that answers as soon as data arrives (Kafka,
/// kfake: kafka::holds_empty_fetches), so that an idle consumer fetches
/// twice a second instead of 200 times.
inline std::string awaited_fetch_wait_ms(bool broker_holds_empty_fetches) {
  return broker_holds_empty_fetches ? "500" : "5";
}

/// The judge consumer's group.instance.id (group "<group_id>.judge") from the
/// input consumer's: "<id>-judge".
inline std::string judge_instance_id(const std::string& instance_id) {
  return instance_id + "-judge";
}

/// The input consumer's and the producer's properties of `neardup run`: the
/// defaults, the user's maps over them, and under exactly-once what
/// transactions need unless the user set it (transactional.id
/// `transactional_id`, transaction.timeout.ms 30 s, message.timeout.ms no
/// longer than it, isolation.level read_committed). `neardup config check`
/// probes the same.
struct ServiceClientProperties {
  std::map<std::string, std::string> consumer;
  std::map<std::string, std::string> producer;
};
ServiceClientProperties service_client_properties(const std::string& brokers,
                                                  const config::KafkaOptions& kafka,
                                                  bool exactly_once,
                                                  const std::string& transactional_id);

// How large a republished record may be: the producer's message.max.bytes,
// or the topics' max.message.bytes when the brokers say it is smaller. A
// broker refuses a whole batch over its topic's limit, the valid records in
// it along with the one too large, so both records and batches are sized to it.
/// Asks the brokers (at most 3 s; not librdkafka's mock cluster, which does
/// not answer) for the max.message.bytes of the topics that take republished
/// records (output, duplicates, dead letters). When the smallest is below the
/// producer's message.max.bytes, sets batch.size under it in
/// `producer_properties` (unless kafka.producer sets it) and says so in the
/// log. Returns the bytes a record may take (OutputRouter's limit).
std::size_t size_records_to_topics(const config::Config& cfg,
                                   kafka::Properties& producer_properties);

}  // namespace neardup::stream
