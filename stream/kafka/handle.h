#pragma once
// librdkafka's client handle, owned, and what the clients (Producer,
// Consumer, the admin calls) share: the configuration with BrokerHealth's
// callbacks, the fatal error's reason, the partition count of a topic.

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "stream/kafka/properties.h"

namespace neardup::stream {
class BrokerHealth;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using HandlePtr = std::unique_ptr<rd_kafka_t, HandleDeleter>;

/// statistics.interval.ms of clients that feed a BrokerHealth, unless the
/// properties set it: how soon a broker's return is seen.
inline constexpr const char* kHealthStatisticsMs = "1000";

/// Number of partitions of `topic` as the cluster reports it; 0 if the topic
/// does not exist. Throws KafkaError when the metadata request fails.
/// (Producer::partition_count and Consumer::partition_count call it.)
int partition_count(rd_kafka_t* rk, const std::string& topic, std::chrono::milliseconds timeout);

/// make_conf() with `opaque` for the callbacks and, with `health`, the
/// statistics callback `on_statistics` (statistics.interval.ms defaults to
/// kHealthStatisticsMs then). For stream/kafka/'s clients.
ConfPtr make_client_conf(const Properties& properties, void* opaque, BrokerHealth* health,
                         int (*on_statistics)(rd_kafka_t*, char*, size_t, void*));

/// The fatal error's reason as "ERR_NAME: text", for fatal_reason().
std::string fatal_reason_of(rd_kafka_t* rk);

}  // namespace neardup::stream::kafka
