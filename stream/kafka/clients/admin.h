#pragma once
// Creating and deleting topics through the admin API.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stream/kafka/errors.h"
#include "stream/kafka/properties.h"

namespace neardup::stream::kafka {

/// A topic to create through the admin API.
struct NewTopic {
  std::string name;
  int partitions = 1;
  int replication_factor = -1;                 ///< -1: the cluster's default.replication.factor
  std::map<std::string, std::string> configs;  ///< topic configs, e.g. retention.ms
};

/// What the cluster answered for one topic of create_topics() or delete_topics().
struct TopicOutcome {
  std::string name;
  ErrorCode err = errc::no_error;  ///< errc::topic_already_exists is not an error
  std::string message;             ///< the broker's, when it gave one
};

/// Creates the topics with the admin API of a client made from `properties`
/// (bootstrap.servers, security), waiting up to `timeout`; one outcome per
/// topic, in order. Throws KafkaError when the request itself fails (no broker
/// answered, a property librdkafka rejects).
std::vector<TopicOutcome> create_topics(const Properties& properties,
                                        const std::vector<NewTopic>& topics,
                                        std::chrono::milliseconds timeout);
/// What the cluster answered for one topic of describe_record_limits().
struct TopicRecordLimit {
  std::string name;
  ErrorCode err = errc::no_error;
  std::string message;                  ///< the broker's, when it gave one
  std::int64_t max_message_bytes = -1;  ///< -1: not in the answer
};
/// Each topic's max.message.bytes (the largest record batch its brokers take,
/// a topic's own or the brokers' default) through DescribeConfigs; one outcome
/// per topic, in order; none from librdkafka's mock cluster, which does not
/// answer it. Throws KafkaError as create_topics().
std::vector<TopicRecordLimit> describe_record_limits(const Properties& properties,
                                                     const std::vector<std::string>& topics,
                                                     std::chrono::milliseconds timeout);
/// Deletes the topics (and their data); as create_topics().
std::vector<TopicOutcome> delete_topics(const Properties& properties,
                                        const std::vector<std::string>& topics,
                                        std::chrono::milliseconds timeout);

}  // namespace neardup::stream::kafka
