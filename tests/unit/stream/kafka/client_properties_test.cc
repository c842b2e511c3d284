// The librdkafka properties neardup's clients start from (stream/kafka/client_properties.h).
#include "stream/kafka/client_properties.h"

#include <gtest/gtest.h>

#include "stream/kafka/clients/transaction.h"
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

TEST(ConsumerProperties, TheInstanceIdIsTheGroupInstanceId) {
  config::KafkaOptions kafka;
  EXPECT_EQ(consumer_properties("127.0.0.1:9092", kafka).count("group.instance.id"), 0U);
  kafka.instance_id = "neardup-0";
  const auto props = consumer_properties("127.0.0.1:9092", kafka);
  EXPECT_EQ(props.at("group.instance.id"), "neardup-0");
  EXPECT_NO_THROW(kafka::make_conf(props));
  EXPECT_EQ(service_client_properties("127.0.0.1:9092", kafka, true, "tx")
                .consumer.at("group.instance.id"),
            "neardup-0");
  EXPECT_EQ(judge_instance_id("neardup-0"), "neardup-0-judge");
}

TEST(TransactionalId, FollowsTheInstanceIdWhenOneIsSet) {
  config::KafkaOptions kafka;
  kafka.group_id = "news";
  EXPECT_TRUE(default_transactional_id(kafka).starts_with("neardup-news-"));  // + the host name
  kafka.instance_id = "neardup-1";
  EXPECT_EQ(default_transactional_id(kafka), "neardup-news-neardup-1");
}

TEST(ServiceClientProperties, ExactlyOnceAddsWhatTransactionsNeedUnlessTheUserSetIt) {
  config::KafkaOptions kafka;
  kafka.producer["linger.ms"] = "7";
  const auto alo = service_client_properties("127.0.0.1:9092", kafka, false, "unused");
  EXPECT_EQ(alo.producer.at("linger.ms"), "7");
  EXPECT_EQ(alo.producer.count("transactional.id"), 0U);
  EXPECT_EQ(alo.consumer.count("isolation.level"), 0U);

  const auto eos = service_client_properties("127.0.0.1:9092", kafka, true, "tx-1");
  EXPECT_EQ(eos.producer.at("transactional.id"), "tx-1");
  EXPECT_EQ(eos.producer.at("transaction.timeout.ms"), "30000");
  EXPECT_EQ(eos.producer.at("message.timeout.ms"), "30000");
  EXPECT_EQ(eos.producer.at("linger.ms"), "7");
  EXPECT_EQ(eos.consumer.at("isolation.level"), "read_committed");
  EXPECT_NO_THROW(kafka::make_conf(eos.producer));

  kafka.producer["transaction.timeout.ms"] = "20000";
  kafka.consumer["isolation.level"] = "read_uncommitted";
  const auto mine = service_client_properties("127.0.0.1:9092", kafka, true, "tx-1");
  EXPECT_EQ(mine.producer.at("transaction.timeout.ms"), "20000");
  EXPECT_EQ(mine.producer.at("message.timeout.ms"), "20000");
  EXPECT_EQ(mine.consumer.at("isolation.level"), "read_uncommitted");
}

}  // namespace
}  // namespace neardup::stream
