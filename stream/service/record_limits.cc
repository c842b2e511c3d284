#include "stream/service/record_limits.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "stream/kafka/clients/admin.h"
#include "stream/kafka/errors.h"
#include "stream/service/output_router.h"

namespace neardup::stream {

using kafka::KafkaError;

namespace {

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
          std::to_string(std::max(topics_limit / 2, topics_limit - kRecordFraming));
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
