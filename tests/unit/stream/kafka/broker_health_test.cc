// stream/broker_health: the broker connection state machine, fed the events
// librdkafka would send (no broker needed; time is a parameter).

#include "stream/kafka/clients/broker_health.h"

#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = BrokerHealth::Clock;
using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point{} + 1000s;

constexpr const char* kRefused =
    "127.0.0.1:39211/bootstrap: Connect to ipv4#127.0.0.1:39211 failed: Connection refused (after "
    "0ms in state "
    "CONNECT)";
constexpr const char* kDisconnected = "127.0.0.1:40123/1: Disconnected (after 5032ms in state UP)";

BrokerObservation up(const char* address, std::chrono::microseconds age) {
  return {address, "UP", age.count()};
}

/// Drops an outage on `health` at `at`: both brokers fail, then every broker is down.
void lose_brokers(BrokerHealth& health, Clock::time_point at,
                  const char* client = "rdkafka#consumer-2") {
  health.on_error(client, kafka::errc::transport, kDisconnected, at - 2ms);
  health.on_error(client, kafka::errc::transport, kRefused, at - 1ms);
  health.on_error(client, kafka::errc::all_brokers_down, "2/2 brokers are down", at);
}

TEST(BrokerOfReason, ReadsTheBrokerNameLibrdkafkaPutsFirst) {
  EXPECT_EQ(broker_of_reason(kRefused), "127.0.0.1:39211");
  EXPECT_EQ(broker_of_reason(kDisconnected), "127.0.0.1:40123");
  EXPECT_EQ(broker_of_reason("ssl://kafka-0.example:9093/2: SSL handshake failed"),
            "kafka-0.example:9093");
  EXPECT_EQ(broker_of_reason("[::1]:9092/bootstrap: Connect to ipv6#[::1]:9092 failed"),
            "[::1]:9092");
  EXPECT_EQ(broker_of_reason(
                "kafka:9092/bootstrap: Failed to resolve 'kafka:9092': Name or service not known"),
            "kafka:9092");
  EXPECT_EQ(broker_of_reason("GroupCoordinator: 127.0.0.1:40123: Connect failed"),
            "");  // logical broker
  EXPECT_EQ(broker_of_reason("2/2 brokers are down"), "");
  EXPECT_EQ(broker_of_reason(""), "");
}

TEST(ParseBrokerStatistics, KeepsConfiguredAndLearnedBrokers) {
  const std::string json = R"({"name":"rdkafka#consumer-2","type":"consumer","brokers":{
    "127.0.0.1:39211/bootstrap":{"name":"127.0.0.1:39211/bootstrap","nodeid":-1,"nodename":"127.0.0.1:39211",
                                 "source":"configured","state":"UP","stateage":1500000},
    "127.0.0.1:40123/1":{"name":"127.0.0.1:40123/1","nodeid":1,"nodename":"127.0.0.1:40123",
                         "source":"learned","state":"DOWN","stateage":250},
    "GroupCoordinator":{"name":"GroupCoordinator","nodeid":1,"nodename":"127.0.0.1:40123",
                        "source":"logical","state":"UP","stateage":9},
    ":0/internal":{"name":":0/internal","nodeid":-1,"nodename":"","source":"internal","state":"UP","stateage":9}},
    "topics":{}})";
  const auto brokers = parse_broker_statistics(json);
  ASSERT_EQ(brokers.size(), 2u);
  EXPECT_EQ(brokers[0].address, "127.0.0.1:39211");
  EXPECT_EQ(brokers[0].state, "UP");
  EXPECT_EQ(brokers[0].state_age_us, 1500000);
  EXPECT_EQ(brokers[1].address, "127.0.0.1:40123");
  EXPECT_EQ(brokers[1].state, "DOWN");
  EXPECT_TRUE(parse_broker_statistics("not json").empty());
  EXPECT_TRUE(parse_broker_statistics(R"({"brokers":[]})").empty());
  EXPECT_TRUE(parse_broker_statistics("").empty());
}

TEST(BrokerHealth, StartsReachableWithNoOutage) {
  BrokerHealth health(false, t0);
  const auto s = health.snapshot();
  EXPECT_TRUE(s.reachable);
  EXPECT_EQ(s.since, t0);
  EXPECT_EQ(s.outages, 0u);
  EXPECT_TRUE(s.brokers.empty());
  EXPECT_EQ(s.describe(t0 + 1s), "Kafka brokers reachable");
}

TEST(BrokerHealth, ConnectionErrorsAloneAreNoOutage) {
  BrokerHealth health(false, t0);
  // An idle connection closed by the broker: librdkafka reconnects on demand.
  health.on_error("rdkafka#producer-1", kafka::errc::transport, kDisconnected, t0 + 1s);
  health.on_error("rdkafka#producer-1", kafka::errc::message_timed_out, "message timed out",
                  t0 + 2s);
  EXPECT_TRUE(health.snapshot().reachable);
  EXPECT_EQ(health.snapshot().outages, 0u);
}

TEST(BrokerHealth, AllBrokersDownBeginsAnOutageNamingTheFailedBrokers) {
  BrokerHealth health(false, t0);
  lose_brokers(health, t0 + 5s);
  const auto s = health.snapshot();
  EXPECT_FALSE(s.reachable);
  EXPECT_EQ(s.since, t0 + 5s);
  EXPECT_THAT(s.unreachable, ElementsAre("127.0.0.1:39211", "127.0.0.1:40123"));
  EXPECT_EQ(s.reason,
            "Connect to ipv4#127.0.0.1:39211 failed: Connection refused");  // the latest error
  EXPECT_EQ(s.outages, 1u);
  EXPECT_EQ(s.describe(t0 + 7500ms),
            "Kafka brokers unreachable for 2.5 s: 127.0.0.1:39211, 127.0.0.1:40123 (Connect to "
            "ipv4#127.0.0.1:39211 failed: Connection refused)");
}

TEST(BrokerHealth, EveryClientLosingItsBrokersIsStillOneOutage) {
  BrokerHealth health(false, t0);
  lose_brokers(health, t0 + 5s, "rdkafka#consumer-2");
  lose_brokers(health, t0 + 5s + 3ms, "rdkafka#producer-1");
  lose_brokers(health, t0 + 20s, "rdkafka#consumer-3");
  EXPECT_EQ(health.snapshot().outages, 1u);
  EXPECT_EQ(health.snapshot().since, t0 + 5s);
}

TEST(BrokerHealth, WithoutConnectionErrorsTheOutageNamesTheClientsBrokers) {
  BrokerHealth health(false, t0);
  health.on_brokers("c", {{"kafka-0:9092", "DOWN", 10}, {"kafka-1:9092", "CONNECT", 10}}, t0 + 1s);
  // An error seen long ago is about something else.
  health.on_error("c", kafka::errc::transport, kDisconnected, t0 + 2s);
  health.on_error("c", kafka::errc::all_brokers_down, "2/2 brokers are down", t0 + 200s);
  const auto s = health.snapshot();
  EXPECT_THAT(s.unreachable, ElementsAre("kafka-0:9092", "kafka-1:9092"));
  EXPECT_EQ(s.reason, "2/2 brokers are down");
}

TEST(BrokerHealth, AConnectionOlderThanTheOutageDoesNotEndIt) {
  BrokerHealth health(false, t0);
  lose_brokers(health, t0 + 5s, "rdkafka#consumer-2");
  // The producer's statistics, written before librdkafka noticed its connection fail.
  health.on_brokers("rdkafka#producer-1", {up("127.0.0.1:40123", 4s)}, t0 + 5s + 200ms);
  EXPECT_FALSE(health.snapshot().reachable);
  // Still down, still trying.
  health.on_brokers("rdkafka#consumer-2", {{"127.0.0.1:40123", "CONNECT", 100}}, t0 + 6s);
  EXPECT_FALSE(health.snapshot().reachable);
}

TEST(BrokerHealth, ANewConnectionEndsTheOutageWithItsLength) {
  BrokerHealth health(false, t0);
  lose_brokers(health, t0 + 5s);
  // Connected 10.2 s after the outage began, seen in statistics 0.6 s later.
  health.on_brokers("rdkafka#consumer-2",
                    {{"127.0.0.1:40123", "DOWN", 20}, up("127.0.0.1:39211", 600ms)},
                    t0 + 15s + 800ms);
  const auto s = health.snapshot();
  EXPECT_TRUE(s.reachable);
  EXPECT_EQ(s.since, t0 + 15s + 200ms);
  EXPECT_TRUE(s.unreachable.empty());
  EXPECT_TRUE(s.reason.empty());
  EXPECT_EQ(s.outages, 1u);
  // A second client reconnecting later changes nothing.
  health.on_brokers("rdkafka#producer-1", {up("127.0.0.1:39211", 10ms)}, t0 + 17s);
  EXPECT_EQ(health.snapshot().since, t0 + 15s + 200ms);
}

BrokerObservation waiting(const char* address, std::int64_t requests,
                          std::chrono::microseconds idle) {
  return {address, "UP", 60'000'000, requests, idle.count()};
}

TEST(ParseBrokerStatistics, ReadsRequestsWaitingAndReceiveIdleness) {
  const auto brokers = parse_broker_statistics(R"({"brokers":{
    "127.0.0.1:40123/1":{"nodename":"127.0.0.1:40123","source":"learned","state":"UP",
                         "stateage":9,"waitresp_cnt":3,"rxidle":12000000},
    "127.0.0.1:40124/2":{"nodename":"127.0.0.1:40124","source":"learned","state":"UP","stateage":9}}})");
  ASSERT_EQ(brokers.size(), 2u);
  EXPECT_EQ(brokers[0].waiting, 3);
  EXPECT_EQ(brokers[0].rx_idle_us, 12'000'000);
  EXPECT_EQ(brokers[1].waiting, 0);  // (older librdkafka: absent)
  EXPECT_EQ(brokers[1].rx_idle_us, -1);
}

TEST(BrokerHealth, ABrokerThatStopsAnsweringIsAnOutageUntilAClientReceivesFromItAgain) {
  BrokerHealth health(false, t0);
  // Idle (nothing waiting) or answering within kStallAfter: no outage.
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 0, 50s)}, t0 + 1s);
  health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 4, 9s)}, t0 + 2s);
  EXPECT_TRUE(health.snapshot().reachable);
  // Requests waiting, nothing received for 10.5 s: a hung broker (SIGSTOP, a
  // partition), once a later report still shows it with nothing received.
  health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 4, 10500ms)}, t0 + 3s);
  EXPECT_TRUE(health.snapshot().reachable);
  health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 5, 12500ms)}, t0 + 5s);
  auto s = health.snapshot();
  EXPECT_FALSE(s.reachable);
  EXPECT_EQ(s.since, t0 + 5s - 12500ms);  // its last answer
  EXPECT_THAT(s.unreachable, ElementsAre("127.0.0.1:40123"));
  EXPECT_EQ(s.reason, "5 request(s) unanswered, nothing received for 12.5 s");
  EXPECT_EQ(s.outages, 1u);
  EXPECT_EQ(s.brokers.at("127.0.0.1:40123"), false);  // connected, but not answering
  EXPECT_EQ(not_ready_reason(s, {.assigned = true, .window_ready = true}, t0 + 6s),
            "Kafka brokers unreachable for 13.5 s: 127.0.0.1:40123 (5 request(s) unanswered, "
            "nothing received for 12.5 s)");
  // A client idle towards it is no evidence; nor is the stalled one still waiting.
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 0, 30s)}, t0 + 6s);
  health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 5, 14s)}, t0 + 7s);
  EXPECT_FALSE(health.snapshot().reachable);
  // The broker answers again (SIGCONT): any client that received from it since.
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 1, 20ms)}, t0 + 21s);
  s = health.snapshot();
  EXPECT_TRUE(s.reachable);
  EXPECT_EQ(s.since, t0 + 21s);
  EXPECT_EQ(s.outages, 1u);
  // A later outage of the usual kind still begins and ends as before.
  lose_brokers(health, t0 + 30s);
  EXPECT_FALSE(health.snapshot().reachable);
  health.on_brokers("rdkafka#consumer-2", {up("127.0.0.1:40123", 1s)}, t0 + 40s);
  EXPECT_TRUE(health.snapshot().reachable);
  EXPECT_EQ(health.snapshot().outages, 2u);
}

TEST(BrokerHealth, ARequestOnALongIdleConnectionOrOneBrokerOfSeveralHangingIsNoOutage) {
  BrokerHealth health(false, t0);
  // A metadata refresh on a connection idle for 5 minutes, caught in flight,
  // answered by the next report.
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 1, 300s)}, t0 + 1s);
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 0, 800ms)}, t0 + 2s);
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 0, 1800ms)}, t0 + 4s);
  EXPECT_TRUE(health.snapshot().reachable);
  // Another request on it later, answered in between two reports that both catch one in flight.
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 1, 60s)}, t0 + 60s);
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 1, 61s)}, t0 + 61s);
  health.on_brokers("rdkafka#producer-1", {waiting("127.0.0.1:40123", 1, 500ms)}, t0 + 63s);
  EXPECT_TRUE(health.snapshot().reachable);
  // One broker of two hangs while the other answers: as one refused broker, no outage.
  for (int i = 0; i < 5; ++i) {
    health.on_brokers("rdkafka#consumer-2",
                      {waiting("127.0.0.1:40123", 3, 11s + std::chrono::seconds(i)),
                       waiting("127.0.0.1:40124", 1, 15ms)},
                      t0 + 100s + std::chrono::seconds(i));
  }
  EXPECT_TRUE(health.snapshot().reachable);
  EXPECT_EQ(health.snapshot().outages, 0u);
}

TEST(BrokerHealth, CountsEachOutage) {
  BrokerHealth health(false, t0);
  for (int i = 0; i < 3; ++i) {
    const auto at = t0 + std::chrono::seconds(100 * (i + 1));
    lose_brokers(health, at);
    health.on_brokers("c", {up("127.0.0.1:39211", 1s)}, at + 30s);
    EXPECT_TRUE(health.snapshot().reachable);
  }
  EXPECT_EQ(health.snapshot().outages, 3u);
}

TEST(BrokerHealth, BrokerIsUpIfAnyClientIsConnectedToIt) {
  BrokerHealth health(false, t0);
  health.on_brokers("producer", {{"b:1", "DOWN", 5}, {"b:2", "INIT", 5}, up("b:3", 1s)}, t0 + 1s);
  health.on_brokers("consumer", {up("b:1", 1s), {"b:3", "CONNECT", 5}}, t0 + 1s);
  auto s = health.snapshot();
  EXPECT_EQ(s.brokers.size(), 2u);  // b:2 was never tried (sparse connections)
  EXPECT_TRUE(s.brokers.at("b:1"));
  EXPECT_TRUE(s.brokers.at("b:3"));
  // The consumer's next statistics no longer list b:1 (its address changed): only the producer's
  // view remains.
  health.on_brokers("consumer", {{"b:3", "CONNECT", 5}}, t0 + 2s);
  s = health.snapshot();
  EXPECT_FALSE(s.brokers.at("b:1"));
  // A bootstrap and a learned broker at one address: up if either is.
  health.on_brokers("producer", {{"b:9", "DOWN", 5}, up("b:9", 1s)}, t0 + 3s);
  EXPECT_TRUE(health.snapshot().brokers.at("b:9"));
}

/// The JSON log lines written while `act` runs.
std::vector<std::string> logged(const std::function<void()>& act) {
  std::FILE* sink = std::tmpfile();
  if (sink == nullptr) return {"(no temporary file)"};
  base::configure_logging(base::LogFormat::json, base::LogLevel::info, sink);
  act();
  base::configure_logging(base::LogFormat::text, base::LogLevel::info, stderr);
  std::rewind(sink);
  std::vector<std::string> lines;
  std::string line;
  for (int c; (c = std::fgetc(sink)) != EOF;) {
    if (c == '\n')
      lines.push_back(std::exchange(line, {}));
    else
      line += static_cast<char>(c);
  }
  std::fclose(sink);
  return lines;
}

TEST(BrokerHealth, LogsTheOutageAndTheReturnOnceEachInNeardupsWords) {
  const std::vector<std::string> lines = logged([] {
    BrokerHealth health(true, t0);
    lose_brokers(health, t0 + 5s, "rdkafka#consumer-2");
    lose_brokers(health, t0 + 5s, "rdkafka#producer-1");
    health.on_brokers("rdkafka#consumer-2", {up("127.0.0.1:39211", 100ms)}, t0 + 15s + 300ms);
    health.on_brokers("rdkafka#producer-1", {up("127.0.0.1:39211", 100ms)}, t0 + 16s);
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(
      lines[0],
      HasSubstr(
          R"("level":"warn","msg":"Kafka brokers unreachable: 127.0.0.1:39211, 127.0.0.1:40123 (Connect to ipv4#127.0.0.1:39211 failed: Connection refused); waiting for them to return")"));
  EXPECT_THAT(
      lines[0],
      HasSubstr(R"("brokers":"127.0.0.1:39211, 127.0.0.1:40123","client":"rdkafka#consumer-2")"));
  EXPECT_THAT(lines[1],
              HasSubstr(R"("level":"info","msg":"Kafka brokers reachable again after 10.2 s")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("outage_seconds":10.2)"));
}

TEST(BrokerHealth, LogsAStallAndItsEndNamingTheBroker) {
  const std::vector<std::string> lines = logged([] {
    BrokerHealth health(true, t0);
    health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 1, 10s)}, t0 + 10s);
    health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 1, 12s)}, t0 + 12s);
    health.on_brokers("rdkafka#consumer-2", {waiting("127.0.0.1:40123", 0, 5ms)}, t0 + 20s);
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(
      lines[0],
      HasSubstr(
          R"("level":"warn","msg":"Kafka brokers not answering: 127.0.0.1:40123 (1 request(s) unanswered, nothing received for 12.0 s); waiting for them to return")"));
  EXPECT_THAT(lines[1],
              HasSubstr(R"("level":"info","msg":"Kafka brokers reachable again after 20.0 s")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("brokers":"127.0.0.1:40123")"));
}

TEST(BrokerHealth, ReadinessNamesTheOutageFirst) {
  BrokerHealth health(false, t0);
  EXPECT_EQ(not_ready_reason(health.snapshot(), {.assigned = true, .window_ready = true}, t0), "");
  EXPECT_EQ(not_ready_reason(health.snapshot(), {.assigned = false, .window_ready = true}, t0),
            "no input partitions assigned");
  EXPECT_EQ(not_ready_reason(health.snapshot(), {.assigned = true, .window_ready = false}, t0),
            "rebuilding the window from the changelog");
  // The group judge: a request waits, but not yet for kJudgeStalledSeconds.
  Readiness waiting{.assigned = true, .window_ready = true, .judge_awaiting = 2000};
  waiting.judge_waiting_seconds = kJudgeStalledSeconds - 0.5;
  EXPECT_EQ(not_ready_reason(health.snapshot(), waiting, t0), "");
  waiting.judge_waiting_seconds = kJudgeStalledSeconds;
  EXPECT_EQ(not_ready_reason(health.snapshot(), waiting, t0),
            "no verdict from the group's judge for 30 s (2000 messages wait): is an instance of "
            "the group judging? (neardup_judge_active)");
  lose_brokers(health, t0 + 5s);
  EXPECT_THAT(
      not_ready_reason(health.snapshot(), {.assigned = false, .window_ready = true}, t0 + 8s),
      ::testing::StartsWith(
          "Kafka brokers unreachable for 3.0 s: 127.0.0.1:39211, 127.0.0.1:40123 ("));
  metrics::ServiceStats stats;
  health.on_brokers("c", {{"127.0.0.1:39211", "DOWN", 5}}, t0 + 8s);
  add_to_metrics(health.snapshot(), stats);
  EXPECT_FALSE(stats.kafka_brokers_up);
  EXPECT_EQ(stats.kafka_broker_outages, 1u);
  EXPECT_EQ(stats.kafka_broker_up, (std::map<std::string, bool>{{"127.0.0.1:39211", false}}));
}

TEST(BrokerHealth, CallbacksFromManyThreadsAtOnce) {
  BrokerHealth health(false, t0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&health, t] {
      const std::string client = "client-" + std::to_string(t);
      for (int i = 0; i < 500; ++i) {
        const auto at = t0 + std::chrono::milliseconds(i);
        health.on_error(client, kafka::errc::transport, kRefused, at);
        health.on_error(client, kafka::errc::all_brokers_down, "1/1 brokers are down", at);
        health.on_brokers(client, {up("127.0.0.1:39211", 0us)}, at + 1ms);
        (void)health.snapshot();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto s = health.snapshot();
  EXPECT_GE(s.outages, 1u);
  EXPECT_TRUE(s.brokers.at("127.0.0.1:39211"));
}

}  // namespace
}  // namespace neardup::stream
