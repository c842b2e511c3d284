#include "stream/kafka/client_properties.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace neardup::stream {

std::map<std::string, std::string> default_consumer_properties(const std::string& brokers,
                                                               const std::string& group) {
  return {
      {"bootstrap.servers", brokers},
      {"group.id", group},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"enable.partition.eof", "false"},
      // Also the rebalance timeout: how long a coordinator may wait for a
      // member that died during a rebalance (librdkafka's default is 300 s,
      // during which the group's partitions stay unassigned). The service
      // polls continuously; a revoke's drain runs inside the poll, which
      // librdkafka does not count.
      {"max.poll.interval.ms", std::to_string(kDefaultMaxPollIntervalMs)},
      // Throughput: large prefetch queue, fetches answered quickly.
      {"queued.min.messages", "200000"},
      {"fetch.wait.max.ms", "20"},
      {"fetch.max.bytes", "52428800"},
      {"max.partition.fetch.bytes", "4194304"},
      {"log_level", "3"},
  };
}

std::map<std::string, std::string> default_producer_properties(const std::string& brokers) {
  return {
      {"bootstrap.servers", brokers},
      {"enable.idempotence", "true"},  // retries without duplicates or reordering; acks=all
      {"linger.ms", "5"},
      {"batch.num.messages", "10000"},
      {"batch.size", "4194304"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
      {"message.timeout.ms", "300000"},
      // Room for an input of input.max_bytes plus its key and headers
      // (config check refuses an input.max_bytes that leaves less).
      {"message.max.bytes", std::to_string(config::kDefaultProducerMessageMaxBytes)},
      {"log_level", "3"},
  };
}

std::map<std::string, std::string> consumer_properties(const std::string& brokers,
                                                       const config::KafkaOptions& kafka) {
  auto props = default_consumer_properties(brokers, kafka.group_id);
  for (const auto& [k, v] : kafka.consumer) props[k] = v;
  // (config check refuses both this and kafka.consumer's group.instance.id)
  if (!kafka.instance_id.empty()) props["group.instance.id"] = kafka.instance_id;
  // librdkafka requires max.poll.interval.ms >= session.timeout.ms: a session
  // longer than the default rebalance timeout lengthens that too.
  if (!kafka.consumer.count("max.poll.interval.ms")) {
    if (auto it = kafka.consumer.find("session.timeout.ms"); it != kafka.consumer.end())
      props["max.poll.interval.ms"] = std::to_string(
          std::max(kDefaultMaxPollIntervalMs, std::strtoll(it->second.c_str(), nullptr, 10)));
  }
  return props;
}

ServiceClientProperties service_client_properties(const std::string& brokers,
                                                  const config::KafkaOptions& kafka,
                                                  bool exactly_once,
                                                  const std::string& transactional_id) {
  ServiceClientProperties out;
  out.consumer = consumer_properties(brokers, kafka);
  out.producer = default_producer_properties(brokers);
  for (const auto& [name, value] : kafka.producer) out.producer[name] = value;
  if (!exactly_once) return out;
  out.producer["transactional.id"] = transactional_id;
  // A crashed instance's open transaction holds read_committed consumers
  // back until it times out (or the instance restarts with its id).
  if (!kafka.producer.contains("transaction.timeout.ms"))
    out.producer["transaction.timeout.ms"] = "30000";
  // (librdkafka requires message.timeout.ms <= transaction.timeout.ms)
  if (!kafka.producer.contains("message.timeout.ms"))
    out.producer["message.timeout.ms"] = out.producer["transaction.timeout.ms"];
  // Inputs and the changelog: only what committed.
  if (!kafka.consumer.contains("isolation.level"))
    out.consumer["isolation.level"] = "read_committed";
  return out;
}

}  // namespace neardup::stream
