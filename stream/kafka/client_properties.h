#pragma once
// The librdkafka properties neardup sets by default (tuned for throughput and
// at-least-once delivery). The user's kafka.consumer / kafka.producer maps
// override them; docs/KAFKA.md lists them.

#include <map>
#include <string>

#include "config/config.h"

namespace neardup::stream {

std::map<std::string, std::string> default_consumer_properties(const std::string& brokers,
                                                               const std::string& group);
std::map<std::string, std::string> default_producer_properties(const std::string& brokers);

/// The input consumer's max.poll.interval.ms (its rebalance timeout) unless
/// kafka.consumer sets it, or sets a longer session.timeout.ms.
inline constexpr long long kDefaultMaxPollIntervalMs = 60000;
/// The defaults, then the user's kafka.consumer map over them.
std::map<std::string, std::string> consumer_properties(const std::string& brokers,
                                                       const config::KafkaOptions& kafka);

}  // namespace neardup::stream
