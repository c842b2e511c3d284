// `neardup changelog`: every entry of the window changelog, one JSON line each
// (its records are binary since format version 3: docs/KAFKA.md).
#include <chrono>
#include <iostream>
#include <map>
#include <utility>

#include "app/cli.h"
#include "config/config.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/changelog_reader.h"
#include "stream/core/process.h"
#include "stream/kafka/client_properties.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup changelog [--config FILE] [--brokers HOST:PORT,...] [--topic T]\n"
    "                         [--timeout SECONDS]\n"
    "\n"
    "Reads every partition of the window changelog (kafka.changelog_topic) from its\n"
    "beginning to its end as of the start and prints each entry on stdout as one\n"
    "JSON object: the members of a version 1 record (\"fp\", \"t\", \"topic\",\n"
    "\"partition\", \"offset\", \"scope\" when not 0, \"instance\", \"schema\" (the\n"
    "writer's fingerprint schema id, absent when the writer recorded none),\n"
    "\"sketch\" when present; docs/KAFKA.md \"The window changelog\").\n"
    "At the end, stderr names each fingerprint schema read, with its options and\n"
    "its entry count. Records it cannot read are reported on stderr and counted;\n"
    "they do not stop it. Joins no consumer group and commits nothing.\n"
    "\n"
    "  --config FILE        YAML configuration (kafka.brokers, kafka.changelog_topic,\n"
    "                       kafka.consumer properties such as security settings)\n"
    "  --brokers LIST       bootstrap servers; overrides kafka.brokers\n"
    "  --topic T            the changelog topic; overrides kafka.changelog_topic\n"
    "  --timeout SECONDS    give up reading after this long (default 60; exit 1)\n"
    "\n"
    "example:\n"
    "  neardup changelog --brokers kafka-1:9092 | jq -c 'select(.scope == 7)'\n";

int run_changelog(std::span<const std::string> raw) {
  cli::Args args(raw, {"config", "brokers", "topic", "timeout"});
  args.expect_no_positionals();
  config::Config cfg = cli::kafka_command_config(args);
  if (!cfg.kafka.brokers)
    throw cli::UsageError("no brokers: give --brokers or kafka.brokers in --config");
  if (auto topic = args.get("topic")) cfg.kafka.changelog_topic = *topic;
  if (cfg.kafka.changelog_topic.empty())
    throw cli::UsageError("no changelog topic: kafka.changelog_topic is \"\" (give --topic)");
  const auto timeout = std::chrono::seconds(args.get_int("timeout", 1, 86400).value_or(60));
  stream::configure_logging(cfg.log);

  stream::ChangelogReader reader(stream::consumer_properties(*cfg.kafka.brokers, cfg.kafka),
                                 cfg.kafka.changelog_topic,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  std::uint64_t entries = 0, unreadable = 0;
  // schema id -> (its description, entries); 0: written before schemas existed
  std::map<std::uint32_t, std::pair<std::string, std::uint64_t>> schemas;
  auto visit = [&](const stream::ChangelogRecord& r) {
    std::cout << stream::encode_changelog_value(r) << '\n';
    ++entries;
    auto& seen = schemas[r.schema];
    if (seen.second++ == 0 && r.schema_description) seen.first = *r.schema_description;
  };
  auto corrupt = [&](std::int32_t partition, std::int64_t offset, const std::string& reason) {
    ++unreadable;
    std::cerr << "neardup changelog: " << cfg.kafka.changelog_topic << '/' << partition << '/'
              << offset << " skipped: " << reason << '\n';
  };
  const bool complete = reader.read_to_end(visit, corrupt, timeout);
  std::cout.flush();
  for (const auto& [id, seen] : schemas) {
    std::cerr << "neardup changelog: "
              << (id == 0 ? std::string("no schema (written before schemas existed)")
                          : "fingerprint schema " + dedup::schema_hex(id) + " (" + seen.first + ")")
              << ": " << seen.second << " entries\n";
  }
  if (schemas.size() > 1)
    std::cerr << "neardup changelog: more than one fingerprint schema: a reader uses only "
                 "the entries of its own (docs/KAFKA.md)\n";
  std::cerr << "neardup changelog: " << entries << " entries, " << unreadable
            << " unreadable records" << (complete ? "" : " (timed out before the end)") << '\n';
  return complete ? 0 : 1;
}

const cli::Registrar kChangelog{
    {"changelog", "print the window changelog's entries as JSON lines", kHelp, run_changelog}};

}  // namespace
}  // namespace neardup::app
