#include "stream/kafka/client_properties.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "stream/kafka/clients/admin.h"
#include "stream/kafka/errors.h"

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

namespace {

using kafka::KafkaError;

/// A batch.size this far under a topic's max.message.bytes: the request's
/// framing, which a broker may count with the batch.
constexpr std::size_t kBatchFraming = 512;

/// The smallest max.message.bytes, as the brokers answer, of the topics that
/// take republished records (output, duplicates, dead letters), and its topic;
/// 0 when no answer says (logged). Up to 3 s when no broker answers.
std::pair<std::size_t, std::string> topics_record_limit(const config::Config& cfg,
                                                        const kafka::Properties& properties) {
  std::vector<std::string> topics;
  for (const std::string* t :
       {&cfg.kafka.output_topic, &cfg.kafka.duplicates_topic, &cfg.kafka.dead_letter_topic})
    if (!t->empty() && std::find(topics.begin(), topics.end(), *t) == topics.end())
      topics.push_back(*t);
  if (topics.empty()) return {0, ""};
  const std::string unknown =
      ": records are sized by the producer's message.max.bytes alone, and a broker limit below "
      "it refuses whole batches";
  std::vector<kafka::TopicRecordLimit> limits;
  try {
    limits = kafka::describe_record_limits(properties, topics, std::chrono::seconds(3));
  } catch (const KafkaError& e) {
    log(config::LogLevel::info,
        std::string("the topics' max.message.bytes are unknown (") + e.what() + ")" + unknown);
    return {0, ""};
  }
  if (limits.empty()) return {0, ""};  // (the mock cluster: no limit but the producer's)
  std::pair<std::size_t, std::string> smallest{0, ""};
  for (const kafka::TopicRecordLimit& l : limits) {
    if (l.err || l.max_message_bytes <= 0) {
      log(config::LogLevel::info,
          "topic '" + l.name + "': max.message.bytes unknown (" +
              (l.err ? kafka::describe(l.err) + (l.message.empty() ? "" : ": " + l.message)
                     : std::string("not in the answer")) +
              ")" + unknown);
      continue;
    }
    const auto bytes = static_cast<std::size_t>(l.max_message_bytes);
    if (smallest.first == 0 || bytes < smallest.first) smallest = {bytes, l.name};
  }
  return smallest;
}

}  // namespace

std::size_t size_records_to_topics(const config::Config& cfg,
                                   kafka::Properties& producer_properties) {
  std::size_t record_limit = config::producer_message_max_bytes(cfg.kafka);
  if (const auto [topics_limit, topic] = topics_record_limit(cfg, producer_properties);
      topics_limit > 0 && topics_limit < record_limit) {
    record_limit = topics_limit;
    const bool batch_set = cfg.kafka.producer.contains("batch.size");
    // (less the request's framing, which a broker may count with the batch)
    if (!batch_set)
      producer_properties["batch.size"] =
          std::to_string(std::max(topics_limit / 2, topics_limit - kBatchFraming));
    log(config::LogLevel::info,
        "topic '" + topic + "' takes records of at most " + std::to_string(topics_limit) +
            " bytes (max.message.bytes), less than the producer's message.max.bytes (" +
            std::to_string(config::producer_message_max_bytes(cfg.kafka)) +
            "): a larger record goes to the dead letters, cut to fit" +
            (batch_set ? std::string(", and kafka.producer batch.size must stay under it")
                       : ", and batches are that size at most (batch.size)"));
    if (cfg.input.max_bytes + config::kRecordHeadroomBytes > topics_limit)
      log(config::LogLevel::warn,
          "input.max_bytes (" + std::to_string(cfg.input.max_bytes) + ") leaves less than " +
              std::to_string(config::kRecordHeadroomBytes / 1024) + " KiB under topic '" + topic +
              "''s max.message.bytes (" + std::to_string(topics_limit) +
              "): valid messages near input.max_bytes go to the dead letters instead of being "
              "republished; lower input.max_bytes or raise the topic's max.message.bytes");
  }
  return record_limit;
}

}  // namespace neardup::stream
