#pragma once
// librdkafka's client handle, owned, and what the clients (Producer,
// Consumer, the admin calls) share: the configuration with BrokerHealth's
// statistics, the fatal error's reason, the partition count of a topic.

#include <chrono>
#include <memory>
#include <string>

#include "stream/kafka/properties.h"

namespace neardup::stream {
class BrokerHealth;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// librdkafka's client handle, opaque (stream/kafka/'s .cc files convert it).
struct ClientHandle;
struct HandleDeleter {
  void operator()(ClientHandle* client) const;
};
using HandlePtr = std::unique_ptr<ClientHandle, HandleDeleter>;

/// statistics.interval.ms of clients that feed a BrokerHealth, unless the
/// properties set it: how soon a broker's return is seen.
inline constexpr const char* kHealthStatisticsMs = "1000";

/// Number of partitions of `topic` as the cluster reports it; 0 if the topic
/// does not exist. Throws KafkaError when the metadata request fails.
/// (Producer::partition_count and Consumer::partition_count call it.)
int partition_count(ClientHandle* client, const std::string& topic,
                    std::chrono::milliseconds timeout);

/// Whether the cluster `client` is connected to holds a fetch that finds
/// nothing until data arrives or the fetch's wait ends, as Kafka and kfake do,
/// so a consumer's fetch.wait.max.ms costs it no latency. librdkafka's mock
/// cluster (the embedded broker) answers such a fetch only when the wait ends.
/// Known once the client has had metadata (partition_count); false until then.
bool holds_empty_fetches(ClientHandle* client);

/// make_conf() with `opaque` for the callbacks and, with `health`,
/// statistics.interval.ms kHealthStatisticsMs unless the properties set it
/// (the client then sets its statistics callback). For stream/kafka/'s clients.
ConfPtr make_client_conf(const Properties& properties, void* opaque, BrokerHealth* health);

/// The fatal error's reason as "ERR_NAME: text", for fatal_reason().
std::string fatal_reason_of(ClientHandle* client);

}  // namespace neardup::stream::kafka
