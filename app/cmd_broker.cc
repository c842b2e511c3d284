// `neardup broker`: only the embedded Kafka-protocol broker, until SIGTERM.
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "app/cli.h"
#include "config/config.h"
#include "config/values.h"
#include "stream/core/process.h"
#include "stream/kafka/clients/embedded_broker.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup broker [--port N] [--partitions N] [--topics a,b,...] [--groups g,...]\n"
    "                      [--bootstrap-file F]\n"
    "\n"
    "Runs librdkafka's in-process Kafka-protocol mock cluster on 127.0.0.1 until\n"
    "SIGTERM/SIGINT and prints its bootstrap address on stdout, so kcat or a\n"
    "second `neardup run --brokers ADDR` can use it. For tests and demos only: it\n"
    "keeps just a few MB per partition and silently trims older records.\n"
    "\n"
    "  --port N             listen on 127.0.0.1:N (default: a free port). A broker stopped\n"
    "                       and started again on the same port is found again by running\n"
    "                       clients; it starts empty (topics recreated, offsets from 0)\n"
    "  --partitions N       partitions per topic (default 8)\n"
    "  --topics a,b         topics to create (default input,output,duplicates,dead-letters:\n"
    "                       the service's topics)\n"
    "  --groups g,h         also create the own topics of these kafka.group_id values, as\n"
    "                       for the default group neardup, whose topics are always created:\n"
    "                       <group>-window, and <group>-judge and <group>-verdicts with\n"
    "                       one partition each\n"
    "  --bootstrap-file F   also write the address to F (written atomically)\n"
    "\n"
    "A topic that a client asks about before it exists is created then, with 4\n"
    "partitions; one named like a group's judge or verdict topic (<group>-judge,\n"
    "<group>-verdicts) with one partition, as a judge topic needs.\n"
    "\n"
    "example:\n"
    "  neardup broker --partitions 4 --bootstrap-file /tmp/bootstrap &\n"
    "  kcat -b $(cat /tmp/bootstrap) -L\n";

int run_broker(std::span<const std::string> raw) {
  cli::Args args(raw, {"port", "partitions", "topics", "groups", "bootstrap-file"});
  args.expect_no_positionals();
  const int port = static_cast<int>(args.get_int("port", 1, 65535).value_or(0));
  const int partitions = static_cast<int>(args.get_int("partitions", 1, 1000).value_or(8));
  // Each group's own topics: the default group's, then those of --groups.
  std::vector<config::KafkaOptions> groups(1);
  if (auto list = args.get("groups")) {
    std::stringstream in(*list);
    for (std::string g; std::getline(in, g, ',');) {
      if (g.empty()) continue;
      config::KafkaOptions& own = groups.emplace_back();
      own.group_id = g;
      config::derive_group_topics(own);
      for (const std::string* t : {&own.changelog_topic, &own.judge_topic, &own.verdict_topic})
        if (!config::is_topic_name(*t))
          throw cli::UsageError("--groups: '" + g +
                                "' makes no topic name (a group id of [a-zA-Z0-9._-])");
    }
    if (groups.size() == 1)
      throw cli::UsageError("--groups: expected a comma-separated list of group ids");
  }
  std::vector<std::string> topics;
  if (auto list = args.get("topics")) {
    std::stringstream in(*list);
    for (std::string t; std::getline(in, t, ',');) {
      if (!t.empty()) topics.push_back(t);
    }
    if (topics.empty())
      throw cli::UsageError("--topics: expected a comma-separated list of topic names");
  } else {
    topics = stream::service_topics(config::KafkaOptions{});
  }
  stream::install_stop_signal_handlers();
  stream::EmbeddedBroker broker(1, port);  // through the forwarder, on a free port for 0
  // The groups' own first: a topic also in --topics keeps their partition count.
  for (const config::KafkaOptions& own : groups) {
    broker.create_topic(own.changelog_topic, partitions);
    for (const auto& t : stream::judge_topics(own)) broker.create_topic(t, 1);
  }
  for (const auto& t : topics) broker.create_topic(t, partitions);
  const std::string address = broker.bootstrap();
  if (auto file = args.get("bootstrap-file")) stream::write_bootstrap_file(*file, address);
  std::cout << address << std::endl;
  stream::log(config::LogLevel::info, "embedded broker at " + address);
  while (!stream::stop_signalled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stream::log(config::LogLevel::info, "embedded broker stopping");
  return 0;
}

const cli::Registrar kBroker{
    {"broker", "run only the embedded Kafka-protocol broker (tests, demos)", kHelp, run_broker}};

}  // namespace
}  // namespace neardup::app
