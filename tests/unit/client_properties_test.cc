// The librdkafka properties neardup's clients start from (stream/kafka/client_properties.h).
#include "stream/kafka/client_properties.h"

#include <gtest/gtest.h>

#include "stream/kafka/kafka.h"

namespace neardup::stream {
namespace {

TEST(ConsumerProperties, BoundsTheRebalanceTimeoutByDefault) {
  config::KafkaOptions kafka;
  const auto props = consumer_properties("127.0.0.1:9092", kafka);
  EXPECT_EQ(props.at("max.poll.interval.ms"), "60000");
  EXPECT_NO_THROW(kafka::make_conf(props));
}

TEST(ConsumerProperties, ALongerSessionLengthensTheRebalanceTimeout) {
  // librdkafka refuses max.poll.interval.ms < session.timeout.ms.
  config::KafkaOptions kafka;
  kafka.consumer["session.timeout.ms"] = "90000";
  const auto props = consumer_properties("127.0.0.1:9092", kafka);
  EXPECT_EQ(props.at("max.poll.interval.ms"), "90000");
  EXPECT_NO_THROW(kafka::make_conf(props));
  kafka.consumer["session.timeout.ms"] = "45000";
  EXPECT_EQ(consumer_properties("127.0.0.1:9092", kafka).at("max.poll.interval.ms"), "60000");
}

TEST(ConsumerProperties, TheOperatorsRebalanceTimeoutWins) {
  config::KafkaOptions kafka;
  kafka.consumer["max.poll.interval.ms"] = "300000";
  kafka.consumer["session.timeout.ms"] = "90000";
  EXPECT_EQ(consumer_properties("127.0.0.1:9092", kafka).at("max.poll.interval.ms"), "300000");
}

}  // namespace
}  // namespace neardup::stream
