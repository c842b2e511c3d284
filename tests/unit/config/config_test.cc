// config/: defaults, every section, error positions, suggestions, value
// parsers, environment overrides and the to_yaml round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "config/values.h"

namespace neardup::config {
namespace {

using namespace std::chrono_literals;

// The error message parse_config gives for `yaml`, or "" when it parses.
std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

EnvLookup env(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string env_error(Config& config, std::map<std::string, std::string> values) {
  try {
    apply_env_overrides(config, env(std::move(values)));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A configuration where every key differs from its default.
constexpr const char* kFull = R"(kafka:
  brokers: "kafka-1:9092,kafka-2:9093"
  group_id: dedup-news
  input_topics: [news, feeds]
  output_topic: news-unique
  duplicates_topic: news-dups
  dead_letter_topic: news-dlq
  changelog_topic: ""
  embedded_partitions: 3
  instance_id: news-1
  consumer:
    security.protocol: SASL_SSL
    fetch.max.bytes: 1048576
    enable.auto.commit: false
  producer:
    linger.ms: 5
input:
  format: json
  text_fields: [/title, /body/text]
  id_field: /meta/id
  max_bytes: 64KiB
action: route
dedup:
  max_distance: 5
  blocks: 8
  normalize: false
  cjk_ngram: 3
  word_shingle: 2
  weighting: tf_idf
  idf_source: file
  idf_file: /var/lib/neardup/idf.tsv
window:
  duration: 1h30m
  max_entries: 5000
metrics:
  listen: "localhost:9100"
log:
  format: json
  level: debug
)";

TEST(Config, EmptyTextGivesAllDefaults) {
  Config config = parse_config("", "t.yaml");
  EXPECT_FALSE(config.kafka.brokers.has_value());
  EXPECT_EQ(config.kafka.group_id, "neardup");
  EXPECT_EQ(config.kafka.input_topics, std::vector<std::string>{"input"});
  EXPECT_EQ(config.kafka.output_topic, "output");
  EXPECT_EQ(config.kafka.dead_letter_topic, "dead-letters");
  EXPECT_EQ(config.input.format, InputFormat::automatic);
  EXPECT_EQ(config.input.text_fields, std::vector<std::string>{"/text"});
  EXPECT_EQ(config.input.max_bytes, 1000000u);
  EXPECT_EQ(config.action, Action::drop);
  EXPECT_EQ(config.dedup.index.max_distance, 3);
  EXPECT_EQ(config.dedup.index.blocks, 0);
  EXPECT_EQ(config.dedup.window.duration, 24h);
  EXPECT_EQ(config.dedup.window.max_entries, 10'000'000u);
  EXPECT_EQ(config.metrics.listen, "127.0.0.1:9464");
  EXPECT_EQ(config.log.level, LogLevel::info);
  EXPECT_EQ(to_yaml(config), to_yaml(Config{}));
}

TEST(Config, CommentsAndEmptySectionsKeepDefaults) {
  Config config = parse_config("# nothing but a comment\ndedup:\nwindow: {}\n", "t.yaml");
  EXPECT_EQ(to_yaml(config), to_yaml(Config{}));
}

TEST(Config, EverySectionParses) {
  Config config = parse_config(kFull, "t.yaml");
  EXPECT_EQ(config.kafka.brokers, "kafka-1:9092,kafka-2:9093");
  EXPECT_EQ(config.kafka.group_id, "dedup-news");
  EXPECT_EQ(config.kafka.input_topics, (std::vector<std::string>{"news", "feeds"}));
  EXPECT_EQ(config.kafka.output_topic, "news-unique");
  EXPECT_EQ(config.kafka.duplicates_topic, "news-dups");
  EXPECT_EQ(config.kafka.dead_letter_topic, "news-dlq");
  EXPECT_EQ(config.kafka.changelog_topic, "");
  EXPECT_EQ(config.kafka.embedded_partitions, 3);
  EXPECT_EQ(config.kafka.instance_id, "news-1");
  EXPECT_EQ(config.kafka.consumer,
            (std::map<std::string, std::string>{{"security.protocol", "SASL_SSL"},
                                                {"fetch.max.bytes", "1048576"},
                                                {"enable.auto.commit", "false"}}));
  EXPECT_EQ(config.kafka.producer, (std::map<std::string, std::string>{{"linger.ms", "5"}}));
  EXPECT_EQ(config.input.format, InputFormat::json);
  EXPECT_EQ(config.input.text_fields, (std::vector<std::string>{"/title", "/body/text"}));
  EXPECT_EQ(config.input.id_field, "/meta/id");
  EXPECT_EQ(config.input.max_bytes, 65536u);
  EXPECT_EQ(config.action, Action::route);
  EXPECT_EQ(config.dedup.index.max_distance, 5);
  EXPECT_EQ(config.dedup.index.blocks, 8);
  EXPECT_FALSE(config.dedup.text.normalize);
  EXPECT_EQ(config.dedup.text.cjk_ngram, 3u);
  EXPECT_EQ(config.dedup.text.word_shingle, 2u);
  EXPECT_EQ(config.dedup.text.weighting, dedup::Weighting::tf_idf);
  EXPECT_EQ(config.dedup.text.idf_source, dedup::IdfSource::file);
  EXPECT_EQ(config.dedup.text.idf_file, "/var/lib/neardup/idf.tsv");
  EXPECT_EQ(config.dedup.window.duration, 90min);
  EXPECT_EQ(config.dedup.window.max_entries, 5000u);
  EXPECT_EQ(config.metrics.listen, "localhost:9100");
  EXPECT_EQ(config.log.format, LogFormat::json);
  EXPECT_EQ(config.log.level, LogLevel::debug);
}

TEST(Config, NullOrEmptyBrokersMeanEmbedded) {
  EXPECT_FALSE(parse_config("kafka:\n  brokers:\n", "t.yaml").kafka.brokers.has_value());
  EXPECT_FALSE(parse_config("kafka:\n  brokers: ~\n", "t.yaml").kafka.brokers.has_value());
  EXPECT_FALSE(parse_config("kafka:\n  brokers: \"\"\n", "t.yaml").kafka.brokers.has_value());
  EXPECT_EQ(
      parse_config("kafka: {brokers: 'SASL_SSL://b-1.example.com:9096'}", "t.yaml").kafka.brokers,
      "SASL_SSL://b-1.example.com:9096");
}

TEST(Config, WindowMaxFutureIsADurationFromZeroAndAMinuteByDefault) {
  EXPECT_EQ(parse_config("", "t.yaml").dedup.window.max_future, 1min);
  EXPECT_EQ(parse_config("window: {max_future: 0s}", "t.yaml").dedup.window.max_future, 0s);
  EXPECT_EQ(parse_config("window: {max_future: 2h}", "t.yaml").dedup.window.max_future, 2h);
  EXPECT_EQ(error_of("window: {max_future: soon}"),
            "t.yaml:1:22: window.max_future: expected a duration like 1m, 90s or 0s (at most "
            "365d), got 'soon'");
}

TEST(Config, WindowRebuildMemoryIsASizeFrom64KiBTo1024GiBAnd64MiBByDefault) {
  EXPECT_EQ(parse_config("", "t.yaml").dedup.window.rebuild_memory, std::size_t{64} << 20);
  EXPECT_EQ(parse_config("window: {rebuild_memory: 64KiB}", "t.yaml").dedup.window.rebuild_memory,
            std::size_t{64} << 10);
  EXPECT_EQ(parse_config("window: {rebuild_memory: 1024GiB}", "t.yaml").dedup.window.rebuild_memory,
            std::size_t{1} << 40);
  for (const char* bad : {"1KiB", "1025GiB", "0", "lots"}) {
    EXPECT_EQ(
        error_of(std::string("window: {rebuild_memory: ") + bad + "}"),
        std::string("t.yaml:1:26: window.rebuild_memory: expected a size in 64KiB..1024GiB like "
                    "64MiB or 1GiB, got '") +
            bad + "'");
  }
}

TEST(Config, WindowMaxMemoryIsASizeAndUnsetByDefault) {
  EXPECT_EQ(parse_config("", "t.yaml").dedup.window.max_memory, 0U);
  EXPECT_EQ(parse_config("window: {max_memory: ~}", "t.yaml").dedup.window.max_memory, 0U);
  EXPECT_EQ(parse_config("window: {max_memory: 12MiB}", "t.yaml").dedup.window.max_memory,
            std::size_t{12} << 20);
  EXPECT_EQ(parse_config("window: {max_memory: 2GiB}", "t.yaml").dedup.window.max_memory,
            std::size_t{2} << 30);
  EXPECT_EQ(parse_config("window: {max_memory: 500MB}", "t.yaml").dedup.window.max_memory,
            std::size_t{500'000'000});
  for (const char* bad : {"0", "lots", "12 MiBs", "-1MiB"}) {
    EXPECT_EQ(error_of(std::string("window: {max_memory: ") + bad + "}"),
              std::string("t.yaml:1:22: window.max_memory: expected a size like 2GiB, 512MiB or "
                          "12MiB (absent or ~ = no bound in bytes), got '") +
                  bad + "'");
  }
}

TEST(Config, WindowMaxMemoryWrittenBackReadsTheSame) {
  const Config config = parse_config("window: {max_memory: 12MiB}", "t.yaml");
  EXPECT_EQ(parse_config(to_yaml(config), "again.yaml").dedup.window.max_memory,
            std::size_t{12} << 20);
  EXPECT_EQ(parse_config(to_yaml(Config{}), "again.yaml").dedup.window.max_memory, 0U);
}

TEST(ConfigErrors, WindowMaxMemoryTooSmallForAMinimalWindowSaysWhatItNeeds) {
  // 64 KiB holds fewer than 1,024 window entries, whatever the recent-text cache keeps.
  const std::string error = error_of("window: {max_memory: 64KiB}");
  EXPECT_TRUE(starts_with(error,
                          "t.yaml:1:22: window.max_memory: window.max_memory 65536 bytes holds "
                          "fewer than 1024 window entries: they need "))
      << error;
  EXPECT_NE(error.find("raise window.max_memory"), std::string::npos) << error;
  // A small bound cuts the recent-text cache to a sixteenth of it instead.
  EXPECT_EQ(error_of("window: {max_memory: 1MiB}"), "");
  EXPECT_EQ(error_of("dedup: {sketch: {recent: 1000000}}\nwindow: {max_memory: 64MiB}"), "");
}

TEST(ConfigErrors, BareNumberDurationIsRefusedNamingTheKey) {
  // "duration: 24" would be 24 seconds to parse_duration: a unit is required.
  EXPECT_EQ(error_of("window:\n  duration: 24\n"),
            "t.yaml:2:13: window.duration: expected a duration like 24h, 10m, 90s or 500ms (at "
            "most 365d), got '24', a number without a unit (write 24s, 24m or 24h)");
  EXPECT_EQ(error_of("window: {max_future: 0}"),
            "t.yaml:1:22: window.max_future: expected a duration like 1m, 90s or 0s (at most "
            "365d), got '0', a number without a unit (write 0s, 0m or 0h)");
  Config config;
  try {
    apply_env_overrides(config, env({{"NEARDUP_WINDOW_DURATION", "90"}}));
    ADD_FAILURE() << "NEARDUP_WINDOW_DURATION=90 accepted";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(starts_with(e.what(), "environment NEARDUP_WINDOW_DURATION: expected a duration"))
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got '90', a number without a unit"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse_config("window: {duration: 90s}", "t.yaml").dedup.window.duration, 90s);
}

// ---- error positions: "t.yaml:LINE:COLUMN: KEY: ..." with 1-based positions.

TEST(ConfigErrors, OutOfRangeValuePointsAtTheValue) {
  // line 2 is "  max_distance: 9": the 9 is the 17th character.
  EXPECT_EQ(error_of("dedup:\n  max_distance: 9\n"),
            "t.yaml:2:17: dedup.max_distance: expected an integer in 0..8, got '9'");
}

TEST(ConfigErrors, BadDurationNamesTheExpectedForm) {
  // line 3 is "  duration: ten": 'ten' starts at column 13.
  EXPECT_EQ(error_of("# window\nwindow:\n  duration: ten\n"),
            "t.yaml:3:13: window.duration: expected a duration like 24h, 10m, 90s or 500ms (at "
            "most 365d), got "
            "'ten'");
}

TEST(ConfigErrors, UnknownKeySuggestsTheNearestOne) {
  // line 3 is "  max_distnce: 3": the key starts at column 3.
  EXPECT_EQ(error_of("action: tag\ndedup:\n  max_distnce: 3\n"),
            "t.yaml:3:3: dedup.max_distnce: unknown key (did you mean 'max_distance'?)");
  EXPECT_EQ(error_of("windw:\n  duration: 1h\n"),
            "t.yaml:1:1: windw: unknown key (did you mean 'window'?)");
  EXPECT_EQ(error_of("kafka:\n  brokrs: a:1\n"),
            "t.yaml:2:3: kafka.brokrs: unknown key (did you mean 'brokers'?)");
}

TEST(ConfigErrors, UnknownKeyFarFromAnyListsTheValidOnes) {
  EXPECT_EQ(error_of("log:\n  colour: red\n"),
            "t.yaml:2:3: log.colour: unknown key (valid keys under log: format, level)");
}

TEST(ConfigErrors, MappingWhereAScalarIsExpected) {
  // "  level: {a: 1}": the flow mapping starts at column 10.
  EXPECT_EQ(error_of("log:\n  level: {a: 1}\n"),
            "t.yaml:2:10: log.level: expected one of debug|info|warn|error, got a mapping");
}

TEST(ConfigErrors, ScalarWhereASectionIsExpected) {
  EXPECT_EQ(
      error_of("window: 5\n"),
      "t.yaml:1:9: window: expected a mapping with keys duration, max_entries, "
      "max_memory, max_future, summary_interval, refresh_on_duplicate, rebuild_memory, got '5'");
}

TEST(ConfigErrors, ListItemErrorPointsAtTheItem) {
  // "  input_topics: [good, 'bad topic']": the quoted item starts at column 24.
  EXPECT_EQ(error_of("kafka:\n  input_topics: [good, 'bad topic']\n"),
            "t.yaml:2:24: kafka.input_topics[1]: expected a Kafka topic name ([a-zA-Z0-9._-], at "
            "most 249), got "
            "'bad topic'");
}

TEST(ConfigErrors, EmptyListIsRejected) {
  EXPECT_EQ(error_of("kafka:\n  input_topics: []\n"),
            "t.yaml:2:17: kafka.input_topics: expected a non-empty list of topic names like "
            "[input], got an empty "
            "list");
  EXPECT_EQ(error_of("input:\n  text_fields: /text\n"),
            "t.yaml:2:16: input.text_fields: expected a non-empty list of JSON pointers like "
            "[/text], got '/text'");
}

TEST(ConfigErrors, MissingValuePointsAtTheKey) {
  EXPECT_EQ(error_of("kafka:\n  group_id:\n"),
            "t.yaml:2:3: kafka.group_id: expected a non-empty consumer group id, got nothing");
}

TEST(ConfigErrors, DuplicateKeyIsRejected) {
  EXPECT_EQ(error_of("action: drop\naction: tag\n"),
            "t.yaml:2:1: action: duplicate key (first set at t.yaml:1:1)");
}

TEST(ConfigErrors, RootMustBeAMapping) {
  EXPECT_TRUE(starts_with(error_of("- kafka\n"), "t.yaml:1:1: expected a mapping of sections"))
      << error_of("- kafka\n");
  EXPECT_TRUE(starts_with(error_of("just text\n"), "t.yaml:1:1: expected a mapping of sections"));
}

TEST(ConfigErrors, OnlyOneDocument) {
  // The second document starts at its "---" marker, line 2.
  EXPECT_EQ(error_of("action: drop\n---\naction: tag\n"),
            "t.yaml:2:1: expected one YAML document, got more");
}

TEST(ConfigErrors, YamlSyntaxErrorsCarryAPosition) {
  // An unclosed flow list: "window" on line 3 is read as a third item, and the
  // ':' after it (column 7) cannot continue a flow list.
  std::string error = error_of("kafka:\n  input_topics: [a, b\nwindow: {}\n");
  EXPECT_EQ(error, "t.yaml:3:7: invalid YAML: end of sequence flow not found");
  // A tab where indentation is expected.
  error = error_of("dedup:\n\tmax_distance: 3\n");
  EXPECT_TRUE(starts_with(error, "t.yaml:2:")) << error;
}

TEST(ConfigErrors, InputThatStallsYamlCppIsAnErrorNotAHang) {
  // Found by the fuzzer: yaml-cpp 0.7 yields endless empty documents here.
  std::string error = error_of(",\"\"\"\"dedup:\n  m\"\"\"\"");
  EXPECT_TRUE(starts_with(error, "t.yaml:1:1: invalid YAML: ")) << error;
}

TEST(ConfigErrors, BlocksMustExceedMaxDistance) {
  // "  blocks: 3": the 3 is at column 11.
  EXPECT_EQ(error_of("dedup:\n  max_distance: 4\n  blocks: 3\n"),
            "t.yaml:3:11: dedup.blocks: expected 0 (automatic) or an integer in 5..16 (at least "
            "dedup.max_distance "
            "+ 1), got '3'");
  EXPECT_EQ(error_of("dedup:\n  blocks: 17\n"),
            "t.yaml:2:11: dedup.blocks: expected 0 (automatic) or an integer in "
            "max_distance+1..16, got '17'");
  EXPECT_EQ(error_of("dedup: {max_distance: 0, blocks: 1}"), "");
}

TEST(ConfigErrors, IdfFileRequiredForTfIdfFromFile) {
  // Nothing names idf_file, so the error points at idf_source (line 3, column 15).
  EXPECT_EQ(error_of("dedup:\n  weighting: tf_idf\n  idf_source: file\n"),
            "t.yaml:3:15: dedup.idf_source: expected dedup.idf_file to be set (idf_source file "
            "with weighting tf_idf "
            "reads it), got 'file'");
  EXPECT_EQ(error_of("dedup:\n  weighting: tf\n  idf_source: file\n"), "");
}

TEST(ConfigErrors, OutputTopicMustNotBeAnInputTopic) {
  EXPECT_EQ(error_of("kafka:\n  input_topics: [a, b]\n  output_topic: b\n"),
            "t.yaml:3:17: kafka.output_topic: expected a topic that is not one of "
            "kafka.input_topics (it would "
            "loop), got 'b'");
}

TEST(ConfigErrors, PropertyValuesMustBeScalars) {
  EXPECT_EQ(error_of("kafka:\n  consumer:\n    sasl.mechanism: [PLAIN]\n"),
            "t.yaml:3:21: kafka.consumer.sasl.mechanism: expected a scalar property value (passed "
            "to librdkafka as "
            "text), got a list");
}

TEST(ConfigErrors, OtherValidators) {
  EXPECT_TRUE(starts_with(error_of("kafka: {brokers: 'localhost'}"),
                          "t.yaml:1:18: kafka.brokers: expected"));
  EXPECT_TRUE(starts_with(error_of("kafka: {brokers: 'a:1,,b:2'}"),
                          "t.yaml:1:18: kafka.brokers: expected"));
  EXPECT_TRUE(starts_with(error_of("kafka: {embedded_partitions: 65}"),
                          "t.yaml:1:30: kafka.embedded_partitions"));
  EXPECT_TRUE(starts_with(error_of("input: {id_field: id}"),
                          "t.yaml:1:19: input.id_field: expected a JSON pointer"));
  EXPECT_TRUE(
      starts_with(error_of("input: {text_fields: ['/a~2']}"), "t.yaml:1:23: input.text_fields[0]"));
  EXPECT_TRUE(starts_with(error_of("input: {max_bytes: 65MiB}"),
                          "t.yaml:1:20: input.max_bytes: expected a size"));
  EXPECT_TRUE(starts_with(error_of("input: {max_bytes: 0}"), "t.yaml:1:20: input.max_bytes"));
  EXPECT_TRUE(starts_with(error_of("dedup: {normalize: maybe}"),
                          "t.yaml:1:20: dedup.normalize: expected true or"));
  EXPECT_TRUE(starts_with(error_of("dedup: {cjk_ngram: 5}"), "t.yaml:1:20: dedup.cjk_ngram"));
  EXPECT_TRUE(starts_with(error_of("window: {max_entries: 1073741825}"),
                          "t.yaml:1:23: window.max_entries"));
  EXPECT_TRUE(starts_with(error_of("window: {duration: 0s}"), "t.yaml:1:20: window.duration"));
  EXPECT_TRUE(
      starts_with(error_of("metrics: {listen: 'localhost'}"), "t.yaml:1:19: metrics.listen"));
  EXPECT_EQ(error_of("metrics: {listen: ''}"), "");
  EXPECT_EQ(error_of("window: {max_entries: 1073741824}"), "");  // 2^30: the window's own limit
}

TEST(ConfigErrors, LayoutsTheWindowCannotBuildAreRefusedWithTheKey) {
  // 560 tables for 10M entries: refused by `config check`, not when a command starts.
  const std::string error = error_of("dedup:\n  blocks: 16\n");
  EXPECT_TRUE(
      starts_with(error, "t.yaml:2:11: dedup.blocks: index layout blocks 16 with max_distance 3"))
      << error;
  // The same layout over a small window is fine.
  EXPECT_EQ(error_of("dedup: {blocks: 16}\nwindow: {max_entries: 1000}\n"), "");
}

TEST(ConfigErrors, TheChangelogHasATopicOfItsOwn) {
  // Its readers would skip the output's messages as corrupt window records, and the output would
  // carry window records.
  EXPECT_EQ(error_of("kafka:\n  changelog_topic: output\n"),
            "t.yaml:2:20: kafka.changelog_topic: expected a topic other than kafka.output_topic "
            "(kafka.changelog_topic needs a topic of its own), got 'output'");
  EXPECT_TRUE(starts_with(error_of("kafka: {dead_letter_topic: neardup-window}"),
                          "t.yaml:1:28: kafka.dead_letter_topic"));
  EXPECT_EQ(error_of("kafka: {changelog_topic: '', output_topic: out}"), "");
}

TEST(ConfigErrors, TheScopeIsGlobalKeyOrAJsonFieldOfAJsonInput) {
  EXPECT_EQ(error_of("dedup:\n  scope: user\n"),
            "t.yaml:2:10: dedup.scope: expected global, key, or a JSON pointer like /user_id, got "
            "'user'");
  EXPECT_EQ(error_of("dedup: {scope: /user_id}\ninput: {format: text}\n"),
            "t.yaml:1:16: dedup.scope: expected global or key, or input.format auto or json "
            "(/user_id is a field of a JSON record), got '/user_id'");
  // The format in the file, the scope from the environment.
  Config text_file = parse_config("input: {format: text}\n", "t.yaml");
  EXPECT_EQ(env_error(text_file, {{"NEARDUP_DEDUP_SCOPE", "/user_id"}}),
            "environment NEARDUP_DEDUP_SCOPE: expected global or key, or input.format auto or json "
            "(/user_id is a field of a JSON record), got '/user_id'");
  // (auto, the default, and json read the field)
  EXPECT_EQ(error_of("dedup:\n  scope: /user_id\n"), "");
  EXPECT_EQ(error_of("input: {format: auto}\ndedup: {scope: /user_id}\n"), "");
  EXPECT_EQ(error_of("input: {format: json}\ndedup: {scope: /user_id}\n"), "");
  for (const char* format : {"auto", "json"}) {
    for (const char* scope : {"global", "key", "/channel"}) {
      const config::Config c = config::parse_config(
          std::string("input: {format: ") + format + "}\ndedup: {scope: '" + scope + "'}\n",
          "t.yaml");
      EXPECT_EQ(c.scope, scope);
      EXPECT_EQ(c.dedup.window.scoped, std::string(scope) != "global");
    }
  }
  const config::Config refresh =
      config::parse_config("window: {refresh_on_duplicate: true}\n", "t.yaml");
  EXPECT_TRUE(refresh.dedup.window.refresh_on_duplicate);
  EXPECT_FALSE(config::Config{}.dedup.window.refresh_on_duplicate);
}

TEST(ConfigErrors, TheJudgeAndVerdictTopicsHaveTopicsOfTheirOwn) {
  EXPECT_EQ(error_of("kafka:\n  judge_topic: neardup-window\n"),
            "t.yaml:2:16: kafka.judge_topic: expected a topic other than kafka.changelog_topic "
            "(kafka.changelog_topic needs a topic of its own), got 'neardup-window'");
  EXPECT_EQ(error_of("kafka:\n  verdict_topic: neardup-judge\n"),
            "t.yaml:2:18: kafka.verdict_topic: expected a topic other than kafka.judge_topic "
            "(kafka.judge_topic needs a topic of its own), got 'neardup-judge'");
  EXPECT_EQ(error_of("kafka:\n  input_topics: [neardup-verdicts]\n"),
            "t.yaml:2:17: kafka.input_topics: expected input topics other than "
            "kafka.verdict_topic (it would loop), got 'neardup-verdicts'");
  // Without a judge, the verdict topic is unused: any name.
  EXPECT_EQ(error_of("kafka: {judge_topic: '', verdict_topic: output}"), "");
  EXPECT_EQ(error_of("kafka: {judge_topic: '', output_topic: out}"), "");
}

TEST(ConfigErrors, InputMaxBytesMustFitUnderTheProducersRecordLimit) {
  // The defaults fit: 1000000 + 16 KiB <= 1 MiB.
  EXPECT_EQ(config::producer_message_max_bytes(Config{}.kafka), 1048576u);
  EXPECT_EQ(error_of("input: {max_bytes: 1032192}\n"), "");  // exactly 1 MiB - 16 KiB
  const std::string error = error_of("input:\n  max_bytes: 1MiB\n");
  EXPECT_TRUE(starts_with(
      error,
      "t.yaml:2:14: input.max_bytes: input.max_bytes (1048576) + 16384 bytes for key and "
      "headers exceeds the producer's message.max.bytes (1048576)"))
      << error;
  // A raised producer limit makes room; a lowered one is blamed when it was set.
  EXPECT_EQ(
      error_of("input: {max_bytes: 8MiB}\nkafka: {producer: {message.max.bytes: '9000000'}}\n"),
      "");
  EXPECT_TRUE(starts_with(error_of("kafka:\n  producer: {message.max.bytes: '500000'}\n"),
                          "t.yaml:2:13: kafka.producer: input.max_bytes (1000000)"))
      << error_of("kafka:\n  producer: {message.max.bytes: '500000'}\n");
}

TEST(ConfigErrors, AKeySetInDottedAndNestedFormIsADuplicate) {
  EXPECT_EQ(error_of("dedup.max_distance: 2\ndedup:\n  max_distance: 5\n"),
            "t.yaml:3:3: dedup.max_distance: duplicate key (first set at t.yaml:1:1)");
  EXPECT_EQ(error_of("dedup: {sketch.bits: 4, sketch: {bits: 8}}"),
            "t.yaml:1:34: dedup.sketch.bits: duplicate key (first set at t.yaml:1:9)");
}

TEST(ConfigErrors, UnknownKeysAreEscapedAndCut) {
  std::string error = error_of("\"ac\\x1btion\": tag\n");
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
  EXPECT_NE(error.find("ac\\x1btion: unknown key"), std::string::npos) << error;
  error = error_of(std::string(1000, 'k') + ": 1\n");
  EXPECT_LT(error.size(), 400u);
}

TEST(ConfigErrors, ErrorValuesAreEscapedAndCut) {
  std::string error = error_of("action: \"a\\nb\"\n");
  EXPECT_EQ(error, "t.yaml:1:9: action: expected one of drop|tag|route, got 'a\\nb'");
  error = error_of("action: " + std::string(500, 'x') + "\n");
  EXPECT_LT(error.size(), 200u);
}

// ---- value parsers.

TEST(Values, Durations) {
  EXPECT_EQ(parse_duration("24h"), std::chrono::milliseconds(24h));
  EXPECT_EQ(parse_duration("10m"), std::chrono::milliseconds(10min));
  EXPECT_EQ(parse_duration("90s"), std::chrono::milliseconds(90s));
  EXPECT_EQ(parse_duration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(parse_duration("2d"), std::chrono::milliseconds(48h));
  EXPECT_EQ(parse_duration("1h30m"), std::chrono::milliseconds(90min));
  EXPECT_EQ(parse_duration("1m1s1ms"), std::chrono::milliseconds(61001));
  EXPECT_EQ(parse_duration("90"), std::chrono::milliseconds(90s));
  for (const char* bad : {"", "h", "ten", "10x", "-5s", "1.5h", "10 m", "30m1h", "1h1h", "5mss",
                          "10s ", "99999999999999999999s", "9999999999999999d"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_duration(std::chrono::milliseconds(24h)), "24h");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(90min)), "1h30m");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(500)), "500ms");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(3'601'001)), "1h1s1ms");
}

TEST(Values, Sizes) {
  EXPECT_EQ(parse_size("1048576"), 1048576u);
  EXPECT_EQ(parse_size("1MiB"), 1048576u);
  EXPECT_EQ(parse_size("64KiB"), 65536u);
  EXPECT_EQ(parse_size("1 GiB"), 1ULL << 30);
  EXPECT_EQ(parse_size("10kB"), 10000u);
  EXPECT_EQ(parse_size("5MB"), 5'000'000u);
  EXPECT_EQ(parse_size("512B"), 512u);
  for (const char* bad :
       {"", "MiB", "1 ", "1mib", "1.5MiB", "-1", "1  MiB", "1MiBs", "99999999999GiB"}) {
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_size(1048576), "1MiB");
  EXPECT_EQ(format_size(65536), "64KiB");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(Values, Names) {
  EXPECT_TRUE(is_topic_name("news.en_v2-raw"));
  EXPECT_FALSE(is_topic_name(""));
  EXPECT_FALSE(is_topic_name(".."));
  EXPECT_FALSE(is_topic_name("a b"));
  EXPECT_FALSE(is_topic_name(std::string(250, 'a')));
  EXPECT_TRUE(is_json_pointer("/a~0b~1c/d"));
  EXPECT_FALSE(is_json_pointer("/"));
  EXPECT_FALSE(is_json_pointer("text"));
  EXPECT_FALSE(is_json_pointer("/a~"));
  EXPECT_TRUE(is_host_port("127.0.0.1:9464", 1));
  EXPECT_TRUE(is_host_port("[::1]:0", 0));
  EXPECT_FALSE(is_host_port("[::1]:0", 1));
  EXPECT_FALSE(is_host_port("host:65536", 1));
  EXPECT_FALSE(is_host_port(":9092", 1));
  EXPECT_FALSE(is_host_port("SSL://h:1", 1));
  EXPECT_TRUE(is_host_port("SSL://h:1", 1, true));
  EXPECT_EQ(edit_distance("max_distnce", "max_distance"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  std::vector<std::string> candidates{"format", "level"};
  EXPECT_EQ(nearest("levle", candidates), "level");
  EXPECT_EQ(nearest("colour", candidates), std::nullopt);
}

// ---- environment overrides.

TEST(ConfigEnv, OverridesApplyAndValidate) {
  Config config;
  apply_env_overrides(config, env({{"NEARDUP_KAFKA_BROKERS", "127.0.0.1:9092"},
                                   {"NEARDUP_KAFKA_GROUP_ID", "g2"},
                                   {"NEARDUP_ACTION", "tag"},
                                   {"NEARDUP_METRICS_LISTEN", ""},
                                   {"NEARDUP_LOG_LEVEL", "warn"},
                                   {"NEARDUP_LOG_FORMAT", "json"},
                                   {"NEARDUP_WINDOW_DURATION", "10m"},
                                   {"NEARDUP_WINDOW_MAX_ENTRIES", "1000"},
                                   {"NEARDUP_DEDUP_MAX_DISTANCE", "5"},
                                   {"NEARDUP_KAFKA_INPUT_TOPICS", "a, b"}}));
  EXPECT_EQ(config.kafka.brokers, "127.0.0.1:9092");
  EXPECT_EQ(config.kafka.group_id, "g2");
  EXPECT_EQ(config.action, Action::tag);
  EXPECT_EQ(config.metrics.listen, "");
  EXPECT_EQ(config.log.level, LogLevel::warn);
  EXPECT_EQ(config.log.format, LogFormat::json);
  EXPECT_EQ(config.dedup.window.duration, 10min);
  EXPECT_EQ(config.dedup.window.max_entries, 1000u);
  EXPECT_EQ(config.dedup.index.max_distance, 5);
  EXPECT_EQ(config.kafka.input_topics, (std::vector<std::string>{"a", "b"}));
}

TEST(ConfigGroupTopics, TheGroupsOwnTopicsFollowItsIdUnlessNamed) {
  struct Topics {
    std::string changelog, judge, verdicts;
    bool operator==(const Topics&) const = default;
  };
  auto topics_of = [](const Config& c) {
    return Topics{c.kafka.changelog_topic, c.kafka.judge_topic, c.kafka.verdict_topic};
  };
  EXPECT_EQ(topics_of(parse_config("", "t.yaml")),
            (Topics{"neardup-window", "neardup-judge", "neardup-verdicts"}));
  EXPECT_EQ(topics_of(parse_config("kafka: {group_id: news}", "t.yaml")),
            (Topics{"news-window", "news-judge", "news-verdicts"}));
  EXPECT_EQ(topics_of(parse_config(
                "kafka: {group_id: news, judge_topic: shared, changelog_topic: ''}", "t.yaml")),
            (Topics{"", "shared", "news-verdicts"}));
  // The environment's group id moves the topics the file did not name, not the others.
  Config config = parse_config("kafka: {group_id: news, verdict_topic: answers}", "t.yaml");
  apply_env_overrides(config, env({{"NEARDUP_KAFKA_GROUP_ID", "sports"}}));
  EXPECT_EQ(topics_of(config), (Topics{"sports-window", "sports-judge", "answers"}));
  apply_env_overrides(config, env({{"NEARDUP_KAFKA_JUDGE_TOPIC", "j"}}));
  EXPECT_EQ(topics_of(config), (Topics{"sports-window", "j", "answers"}));
  // What `config check` prints (to_yaml) still follows the group id when read back.
  Config printed =
      parse_config(to_yaml(parse_config("kafka: {group_id: news}", "t.yaml")), "t.yaml");
  apply_env_overrides(printed, env({{"NEARDUP_KAFKA_GROUP_ID", "sports"}}));
  EXPECT_EQ(topics_of(printed), (Topics{"sports-window", "sports-judge", "sports-verdicts"}));
  // A group id that makes no topic name is refused unless the three are named.
  EXPECT_EQ(error_of("kafka: {group_id: 'my group'}"),
            "t.yaml:1:19: kafka.group_id: expected a group id that makes topic names ('my "
            "group-window' is not: [a-zA-Z0-9._-], at most 249), or kafka.changelog_topic, "
            "judge_topic and verdict_topic named, got 'my group'");
  EXPECT_EQ(error_of("kafka: {group_id: 'my group', changelog_topic: w, judge_topic: j, "
                     "verdict_topic: v}"),
            "");
}

TEST(ConfigEnv, MisspelledVariablesAreFoundWithTheOneTheyComeNear) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(misspelled_env_variables({"NEARDUP_ACTON", "NEARDUP_ACTION", "PATH", "NEARDUP_JOBS",
                                      "NEARDUP_CPU", "NEARDUP_DEDUP_WINDOW_MAX_ENTRIES",
                                      "NEARDUP_DEDUP_MAX_DISTNCE", "NEARDUP", "ACTON"}),
            (Pairs{{"NEARDUP_ACTON", "NEARDUP_ACTION"},
                   {"NEARDUP_DEDUP_WINDOW_MAX_ENTRIES", "NEARDUP_WINDOW_MAX_ENTRIES"},
                   {"NEARDUP_DEDUP_MAX_DISTNCE", "NEARDUP_DEDUP_MAX_DISTANCE"}}));
  EXPECT_EQ(misspelled_env_variables({}), Pairs{});
}

TEST(ConfigEnv, UnsetVariablesChangeNothing) {
  Config config = parse_config(kFull, "t.yaml");
  apply_env_overrides(config, env({{"NEARDUP_SOURCE_DIR", "/x"}}));
  EXPECT_EQ(to_yaml(config), to_yaml(parse_config(kFull, "t.yaml")));
}

TEST(ConfigEnv, ErrorsNameTheVariableAndLeaveTheConfigUntouched) {
  Config config;
  EXPECT_EQ(env_error(config, {{"NEARDUP_LOG_LEVEL", "warn"}, {"NEARDUP_ACTION", "nuke"}}),
            "environment NEARDUP_ACTION: expected one of drop|tag|route, got 'nuke'");
  EXPECT_EQ(config.log.level, LogLevel::info);
  EXPECT_EQ(env_error(config, {{"NEARDUP_WINDOW_DURATION", "forever"}}),
            "environment NEARDUP_WINDOW_DURATION: expected a duration like 24h, 10m, 90s or 500ms "
            "(at most 365d), "
            "got 'forever'");
  EXPECT_EQ(env_error(config, {{"NEARDUP_DEDUP_MAX_DISTANCE", "9"}}),
            "environment NEARDUP_DEDUP_MAX_DISTANCE: expected an integer in 0..8, got '9'");
  EXPECT_EQ(
      env_error(config, {{"NEARDUP_WINDOW_MAX_ENTRIES", "0"}}),
      "environment NEARDUP_WINDOW_MAX_ENTRIES: expected an integer in 1..1073741824, got '0'");
  EXPECT_EQ(env_error(config, {{"NEARDUP_KAFKA_BROKERS", "nohost"}})
                .rfind("environment NEARDUP_KAFKA_BROKERS: expected", 0),
            0u);
  EXPECT_EQ(env_error(config, {{"NEARDUP_METRICS_LISTEN", "9464"}})
                .rfind("environment NEARDUP_METRICS_LISTEN: expected", 0),
            0u);
  EXPECT_EQ(env_error(config, {{"NEARDUP_KAFKA_INPUT_TOPICS", "a,,b"}})
                .rfind("environment NEARDUP_KAFKA_INPUT_TOPICS[1]: expected a Kafka topic name", 0),
            0u);
  EXPECT_EQ(to_yaml(config), to_yaml(Config{}));
}

TEST(ConfigEnv, CrossCheckBlamesTheVariable) {
  Config config = parse_config("dedup: {max_distance: 3, blocks: 4}", "t.yaml");
  EXPECT_EQ(env_error(config, {{"NEARDUP_DEDUP_MAX_DISTANCE", "4"}}),
            "environment NEARDUP_DEDUP_MAX_DISTANCE: expected an integer in 0..3 (below "
            "dedup.blocks = 4), got '4'");
}

TEST(ConfigInstanceId, IsAGroupInstanceIdThatLeavesRoomForTheJudges) {
  EXPECT_EQ(parse_config("", "t.yaml").kafka.instance_id, "");
  EXPECT_EQ(parse_config("kafka: {instance_id: neardup-0}", "t.yaml").kafka.instance_id,
            "neardup-0");
  const std::string longest(kMaxInstanceIdLength, 'a');
  EXPECT_EQ(parse_config("kafka: {instance_id: " + longest + "}", "t.yaml").kafka.instance_id,
            longest);
  const std::string expected =
      "expected \"\" or an id of [a-zA-Z0-9._-], at most 243 characters, got ";
  // (the error cuts a long value short)
  EXPECT_TRUE(starts_with(error_of("kafka: {instance_id: " + longest + "a}"),
                          "t.yaml:1:22: kafka.instance_id: " + expected + "'aaaa"));
  EXPECT_EQ(error_of("kafka: {instance_id: 'pod 0'}"),
            "t.yaml:1:22: kafka.instance_id: " + expected + "'pod 0'");
  EXPECT_EQ(error_of("kafka: {instance_id: 'pod/0'}"),
            "t.yaml:1:22: kafka.instance_id: " + expected + "'pod/0'");
  // One way to name the instance: not also kafka.consumer's group.instance.id.
  EXPECT_EQ(error_of("kafka:\n  instance_id: a\n  consumer: {group.instance.id: b}\n"),
            "t.yaml:2:16: kafka.instance_id: expected kafka.instance_id or kafka.consumer's "
            "group.instance.id, not both (kafka.instance_id sets group.instance.id), got 'a'");
  EXPECT_EQ(error_of("kafka:\n  consumer: {group.instance.id: b}\n"), "");
}

TEST(ConfigInstanceId, TheEnvironmentSetsAndValidatesIt) {
  Config config = parse_config("kafka: {instance_id: from-file}", "t.yaml");
  apply_env_overrides(config, env({{"NEARDUP_KAFKA_INSTANCE_ID", "neardup-2"}}));
  EXPECT_EQ(config.kafka.instance_id, "neardup-2");
  // (what config check prints reads back the same)
  EXPECT_EQ(parse_config(to_yaml(config), "t.yaml").kafka.instance_id, "neardup-2");
  EXPECT_EQ(env_error(config, {{"NEARDUP_KAFKA_INSTANCE_ID", "pod 2"}}),
            "environment NEARDUP_KAFKA_INSTANCE_ID: expected \"\" or an id of [a-zA-Z0-9._-], at "
            "most 243 characters, got 'pod 2'");
  EXPECT_EQ(config.kafka.instance_id, "neardup-2");  // a refused value changes nothing
  apply_env_overrides(config, env({{"NEARDUP_KAFKA_INSTANCE_ID", ""}}));
  EXPECT_EQ(config.kafka.instance_id, "");
  // The variable meets the file's kafka.consumer: the cross-check names the variable.
  Config both = parse_config("kafka: {consumer: {group.instance.id: b}}", "t.yaml");
  EXPECT_TRUE(starts_with(env_error(both, {{"NEARDUP_KAFKA_INSTANCE_ID", "a"}}),
                          "environment NEARDUP_KAFKA_INSTANCE_ID: expected kafka.instance_id or"));
}

TEST(ConfigEnv, EmptyBrokersMeansEmbedded) {
  for (const char* embedded : {"", "~"}) {  // both, as the error message for a bad value says
    Config config = parse_config("kafka: {brokers: 'h:1'}", "t.yaml");
    apply_env_overrides(config, env({{"NEARDUP_KAFKA_BROKERS", embedded}}));
    EXPECT_FALSE(config.kafka.brokers.has_value()) << "'" << embedded << "'";
  }
}

TEST(ConfigEnv, ACrossCheckTheVariableTriggeredNamesIt) {
  // The file is valid while the sketch is off; the variable turns it on.
  Config config = parse_config("dedup: {sketch: {enabled: false, bits: 8, bands: 8}}", "t.yaml");
  const std::string error = env_error(config, {{"NEARDUP_DEDUP_SKETCH_ENABLED", "true"}});
  EXPECT_TRUE(
      starts_with(error, "environment NEARDUP_DEDUP_SKETCH_ENABLED: expected dedup.sketch.bands"))
      << error;
}

// ---- round trip and files.

TEST(ConfigRoundTrip, DumpParsesBackToTheSameConfig) {
  for (const std::string& yaml : {std::string(), std::string(kFull)}) {
    Config config = parse_config(yaml, "t.yaml");
    std::string dumped = to_yaml(config);
    Config again = parse_config(dumped, "dump.yaml");
    EXPECT_EQ(to_yaml(again), dumped);
    EXPECT_EQ(again.kafka.brokers, config.kafka.brokers);
    EXPECT_EQ(again.kafka.consumer, config.kafka.consumer);
    EXPECT_EQ(again.input.max_bytes, config.input.max_bytes);
    EXPECT_EQ(again.dedup.window.duration, config.dedup.window.duration);
    EXPECT_EQ(again.dedup.text.idf_file, config.dedup.text.idf_file);
  }
}

TEST(ConfigRoundTrip, ThresholdKeepsEveryDigit) {
  // Printed with 6 significant digits, 0.123456789 read back as 0.123457.
  const Config config = parse_config("dedup: {sketch: {threshold: 0.123456789}}", "t.yaml");
  EXPECT_EQ(parse_config(to_yaml(config), "dump.yaml").dedup.sketch.threshold,
            config.dedup.sketch.threshold);
}

TEST(ConfigRoundTrip, DumpNamesEveryKey) {
  std::string dumped = to_yaml(Config{});
  for (const auto& key : schema()) {
    std::string name = key.path.substr(key.path.rfind('.') + 1);
    EXPECT_NE(dumped.find(name + ":"), std::string::npos) << key.path;
  }
  EXPECT_NE(dumped.find("brokers: ~"), std::string::npos) << dumped;
}

TEST(ConfigRoundTrip, AwkwardStringsSurvive) {
  Config config;
  config.kafka.group_id = "null";
  config.kafka.consumer = {{"sasl.password", "p@ss: #word 'x\""}, {"ssl.ca.location", "~"}};
  config.dedup.text.idf_file = "true";
  Config again = parse_config(to_yaml(config), "dump.yaml");
  EXPECT_EQ(again.kafka.group_id, "null");
  EXPECT_EQ(again.kafka.consumer, config.kafka.consumer);
  EXPECT_EQ(again.dedup.text.idf_file, "true");
}

TEST(ConfigRoundTrip, RedactionHidesOnlySecrets) {
  Config config;
  config.kafka.consumer = {{"sasl.password", "hunter2"}, {"sasl.username", "neardup"}};
  config.kafka.producer = {{"ssl.key.password", "k3y"}, {"sasl.oauthbearer.client.secret", "s3"}};
  std::string redacted = to_yaml(config, Secrets::redact);
  EXPECT_EQ(redacted.find("hunter2"), std::string::npos);
  EXPECT_EQ(redacted.find("k3y"), std::string::npos);
  EXPECT_EQ(redacted.find("s3\n"), std::string::npos);
  EXPECT_NE(redacted.find("sasl.username: neardup"), std::string::npos);
  EXPECT_EQ(parse_config(redacted, "r.yaml").kafka.consumer.at("sasl.password"), "<redacted>");
  EXPECT_NE(to_yaml(config).find("hunter2"), std::string::npos);
}

TEST(ConfigFiles, LoadNamesTheFile) {
  auto dir = std::filesystem::temp_directory_path() /
             ("neardup_config_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "bad.yaml").string();
  std::ofstream(path) << "window:\n  max_entries: lots\n";
  try {
    load_config(path);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":2:16: window.max_entries: expected an integer in 1..1073741824, got 'lots'");
  }
  try {
    load_config((dir / "missing.yaml").string());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(starts_with(e.what(), (dir / "missing.yaml").string() + ": cannot open"))
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

TEST(ConfigCheckCommand, OutputParsesBackToTheSameConfig) {
  if (!std::filesystem::exists(NEARDUP_BINARY)) GTEST_SKIP() << "neardup binary not built";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("neardup_config_check_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string example = std::string(NEARDUP_SOURCE_DIR) + "/deploy/examples/cluster.yaml";
  const std::string command = std::string(NEARDUP_BINARY) +
                              " config check --no-env --show-secrets '" + example + "' >'" +
                              (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir / "err");
  std::string out = read_file(dir / "out");
  const std::string first_line = example + ": ok\n";
  ASSERT_TRUE(starts_with(out, first_line)) << out;
  Config printed = parse_config(out.substr(first_line.size()), "printed.yaml");
  EXPECT_EQ(to_yaml(printed), to_yaml(load_config(example)));

  std::ofstream(dir / "bad.yaml") << "log:\n  levl: info\n";
  const std::string bad = std::string(NEARDUP_BINARY) + " config check '" +
                          (dir / "bad.yaml").string() + "' >'" + (dir / "out").string() + "' 2>'" +
                          (dir / "err").string() + "'";
  int status = std::system(bad.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2)
      << status;  // a configuration error (app/main.cc)
  EXPECT_EQ(read_file(dir / "err"),
            (dir / "bad.yaml").string() + ":2:3: log.levl: unknown key (did you mean 'level'?)\n");
  EXPECT_EQ(read_file(dir / "out"), "");
  std::filesystem::remove_all(dir);
}

// ---- every error of a file, one a line, in the order of the file.

std::vector<std::string> errors_of(const std::string& yaml, const PropertyCheck& check = {}) {
  try {
    parse_config(yaml, "t.yaml", check);
  } catch (const ConfigError& e) {
    return e.errors();
  }
  return {};
}

TEST(ConfigAllErrors, EveryErrorOfAFileIsReported) {
  const std::string yaml =
      "dedup:\n"
      "  max_distance: 99\n"
      "window:\n"
      "  duration: 24\n"
      "action: nuke\n";
  const std::vector<std::string> expected{
      "t.yaml:2:17: dedup.max_distance: expected an integer in 0..8, got '99'",
      "t.yaml:4:13: window.duration: expected a duration like 24h, 10m, 90s or 500ms (at most "
      "365d), got '24', a number without a unit (write 24s, 24m or 24h)",
      "t.yaml:5:9: action: expected one of drop|tag|route, got 'nuke'"};
  EXPECT_EQ(errors_of(yaml), expected);
  // what() is the same lines, one a line.
  EXPECT_EQ(error_of(yaml), expected[0] + "\n" + expected[1] + "\n" + expected[2]);
}

TEST(ConfigAllErrors, SingleErrorReadsAsBefore) {
  EXPECT_EQ(errors_of("action: nuke\n"),
            std::vector<std::string>{"t.yaml:1:9: action: expected one of drop|tag|route, got "
                                     "'nuke'"});
}

TEST(ConfigAllErrors, UnknownDuplicateListAndSectionErrorsAllCount) {
  const auto errors = errors_of(
      "dedup:\n"
      "  max_distnce: 3\n"  // unknown key
      "kafka:\n"
      "  input_topics: [ok, 'a b', 'c d']\n"  // two bad items
      "  group_id: g\n"
      "  group_id: h\n"  // duplicate
      "window: 5\n"      // a scalar where a section belongs
      "log: {level: loud}\n");
  ASSERT_EQ(errors.size(), 6u) << ::testing::PrintToString(errors);
  EXPECT_TRUE(starts_with(errors[0], "t.yaml:2:3: dedup.max_distnce: unknown key")) << errors[0];
  EXPECT_TRUE(starts_with(errors[1], "t.yaml:4:22: kafka.input_topics[1]: expected")) << errors[1];
  EXPECT_TRUE(starts_with(errors[2], "t.yaml:4:29: kafka.input_topics[2]: expected")) << errors[2];
  EXPECT_TRUE(starts_with(errors[3], "t.yaml:6:3: kafka.group_id: duplicate key")) << errors[3];
  EXPECT_TRUE(starts_with(errors[4], "t.yaml:7:9: window: expected a mapping")) << errors[4];
  EXPECT_TRUE(starts_with(errors[5], "t.yaml:8:14: log.level: expected one of")) << errors[5];
}

TEST(ConfigAllErrors, CrossKeyChecksJoinTheKeyErrors) {
  // A bad action, and blocks below max_distance + 1: both.
  const auto errors = errors_of("action: nuke\ndedup: {max_distance: 5, blocks: 4}\n");
  ASSERT_EQ(errors.size(), 2u) << ::testing::PrintToString(errors);
  EXPECT_TRUE(starts_with(errors[0], "t.yaml:1:9: action:")) << errors[0];
  EXPECT_TRUE(starts_with(errors[1],
                          "t.yaml:2:34: dedup.blocks: expected 0 (automatic) or an "
                          "integer in 6..16"))
      << errors[1];
}

TEST(ConfigAllErrors, CrossKeyCheckOfARefusedKeyIsSkipped) {
  // max_distance refused keeps its default (3): judging blocks against it
  // would blame a key for a value nobody wrote.
  EXPECT_EQ(errors_of("dedup: {max_distance: 99, blocks: 2}\n").size(), 1u);
  // A scope on a field with input.format refused: one error, the format's.
  const auto errors = errors_of("input: {format: jsn}\ndedup: {scope: /user}\n");
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  EXPECT_TRUE(starts_with(errors[0], "t.yaml:1:17: input.format:")) << errors[0];
}

TEST(ConfigAllErrors, TopicsSharedByTwoOwnKeysAreOneError) {
  const auto errors = errors_of("kafka: {changelog_topic: mine, judge_topic: mine}\n");
  EXPECT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
}

TEST(ConfigAllErrors, EnvironmentReportsEveryVariable) {
  Config config;
  try {
    apply_env_overrides(config, env({{"NEARDUP_ACTION", "nuke"},
                                     {"NEARDUP_LOG_LEVEL", "loud"},
                                     {"NEARDUP_WINDOW_DURATION", "24"}}));
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.errors().size(), 3u) << e.what();
    EXPECT_TRUE(starts_with(e.errors()[0], "environment NEARDUP_ACTION:")) << e.what();
  }
  EXPECT_EQ(to_yaml(config), to_yaml(Config{}));  // all or nothing
}

// ---- kafka.consumer / kafka.producer through a property check (app/ passes
// librdkafka's; this one knows two names).

std::string known_properties(const std::string& name, const std::string& value) {
  if (name == "session.timeout.ms" || name == "linger.ms") {
    return value.find_first_not_of("0123456789") == std::string::npos
               ? ""
               : "kafka property '" + name + "': Invalid value";
  }
  return "kafka property '" + name + "': No such configuration property: \"" + name + "\"";
}

TEST(ConfigProperties, EveryRefusedPropertyIsReportedAtItsName) {
  const auto errors = errors_of(
      "kafka:\n"
      "  consumer:\n"
      "    sesion.timeout.ms: 6000\n"
      "    session.timeout.ms: soon\n"
      "  producer: {linger.ms: 5}\n",
      known_properties);
  const std::vector<std::string> expected{
      "t.yaml:3:5: kafka.consumer: kafka property 'sesion.timeout.ms': No such configuration "
      "property: \"sesion.timeout.ms\"",
      "t.yaml:4:5: kafka.consumer: kafka property 'session.timeout.ms': Invalid value"};
  EXPECT_EQ(errors, expected);
  // Without a check (config/ alone), properties pass as text.
  EXPECT_TRUE(errors_of("kafka: {consumer: {sesion.timeout.ms: 6000}}\n").empty());
}

TEST(ConfigMetrics, Ipv6ListenerIsRefusedSayingWhy) {
  const std::string error = error_of("metrics: {listen: '[::1]:9472'}\n");
  EXPECT_EQ(error,
            "t.yaml:1:19: metrics.listen: IPv6 addresses cannot be served: neardup's HTTP server "
            "(civetweb) is built without IPv6; listen on an IPv4 address like 0.0.0.0:9464 or "
            "127.0.0.1:9464, got '[::1]:9472'");
  EXPECT_EQ(parse_config("metrics: {listen: 'localhost:0'}", "t.yaml").metrics.listen,
            "localhost:0");
  Config config;
  EXPECT_TRUE(starts_with(env_error(config, {{"NEARDUP_METRICS_LISTEN", "[::]:9464"}}),
                          "environment NEARDUP_METRICS_LISTEN: IPv6 addresses cannot be served"));
}

// metrics.listen is checked by the HTTP server's own parser
// (base::parse_listen_address): what config check passes, run can try to bind.
TEST(ConfigMetrics, ListenAddressesAreCheckedAsTheServerParsesThem) {
  const struct {
    const char* listen;
    const char* error;  // "" = accepted
  } cases[] = {
      {"127.0.0.1:9464", ""},
      {"0.0.0.0:0", ""},
      {"localhost:9100", ""},
      {"999.1.1.1:80",
       "t.yaml:1:19: metrics.listen: expected an IPv4 address (four numbers in 0..255, like "
       "127.0.0.1) as the host, got '999.1.1.1:80'"},
      {"127.0.0.1:99999",
       "t.yaml:1:19: metrics.listen: port out of range: 99999 is not in 0..65535 (0 picks a free "
       "port), got '127.0.0.1:99999'"},
      {"127.0.0.1:http",
       "t.yaml:1:19: metrics.listen: port must be a number in 0..65535 (0 picks a free port), got "
       "'127.0.0.1:http'"},
      {"localhost",
       "t.yaml:1:19: metrics.listen: expected host:port like 127.0.0.1:9464, got "
       "'localhost'"},
      {":9464",
       "t.yaml:1:19: metrics.listen: missing host; use 0.0.0.0:PORT to listen on every "
       "interface, got ':9464'"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(error_of(std::string("metrics: {listen: '") + c.listen + "'}\n"), c.error)
        << c.listen;
  }
  Config config;
  EXPECT_EQ(env_error(config, {{"NEARDUP_METRICS_LISTEN", "127.0.0.1:99999"}}),
            "environment NEARDUP_METRICS_LISTEN: port out of range: 99999 is not in 0..65535 (0 "
            "picks a free port), got '127.0.0.1:99999'");
}

TEST(ConfigCheckCommand, ReportsEveryErrorWithLibrdkafkaChecks) {
  if (!std::filesystem::exists(NEARDUP_BINARY)) GTEST_SKIP() << "neardup binary not built";
  const auto dir =
      std::filesystem::temp_directory_path() / ("neardup_config_all_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "kafka:\n  consumer: {sesion.timeout.ms: 6000}\n"
                                     "window:\n  duration: 24\n"
                                     "metrics:\n  listen: '[::1]:9472'\n";
  const std::string command = std::string(NEARDUP_BINARY) + " config check --no-env '" +
                              (dir / "bad.yaml").string() + "' >'" + (dir / "out").string() +
                              "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  const std::string err = read_file(dir / "err");
  const std::string at = (dir / "bad.yaml").string() + ":";
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3) << err;
  EXPECT_NE(err.find(at + "2:14: kafka.consumer: kafka property 'sesion.timeout.ms'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(at + "4:13: window.duration:"), std::string::npos) << err;
  EXPECT_NE(err.find(at + "6:11: metrics.listen:"), std::string::npos) << err;

  // Properties librdkafka checks against each other, when it creates a client.
  std::ofstream(dir / "acks.yaml") << "kafka:\n  producer: {acks: 1}\n";
  const std::string acks = std::string(NEARDUP_BINARY) + " config check --no-env '" +
                           (dir / "acks.yaml").string() + "' >/dev/null 2>'" +
                           (dir / "err").string() + "'";
  const int acks_status = std::system(acks.c_str());
  EXPECT_TRUE(WIFEXITED(acks_status) && WEXITSTATUS(acks_status) == 2) << acks_status;
  EXPECT_NE(read_file(dir / "err").find("kafka.producer: cannot create Kafka producer: `acks`"),
            std::string::npos)
      << read_file(dir / "err");
  std::filesystem::remove_all(dir);
}

TEST(ConfigFiles, ShippedExamplesAreValid) {
  const std::filesystem::path examples =
      std::filesystem::path(NEARDUP_SOURCE_DIR) / "deploy" / "examples";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples)) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_config(entry.path().string())) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 2);
}

}  // namespace
}  // namespace neardup::config

namespace neardup::config {
namespace {

TEST(Config, ShortTextSettingsParseAndDefault) {
  const Config defaults = parse_config("", "t.yaml");
  EXPECT_FALSE(defaults.dedup.text.strip_boilerplate);
  EXPECT_EQ(defaults.dedup.text.must_match, dedup::MustMatch::numbers_and_names);
  EXPECT_EQ(defaults.dedup.sketch.recent, 8192u);
  EXPECT_EQ(defaults.dedup.sketch.exact_threshold, 0.8);
  const Config config = parse_config(
      "dedup:\n  strip_boilerplate: true\n  must_match: numbers_and_names\n"
      "  must_match_words: /etc/neardup/places.txt\n"
      "  sketch:\n    recent: 0\n    exact_threshold: 0.75\n",
      "t.yaml");
  EXPECT_TRUE(config.dedup.text.strip_boilerplate);
  EXPECT_EQ(config.dedup.text.must_match, dedup::MustMatch::numbers_and_names);
  EXPECT_EQ(config.dedup.text.must_match_words, "/etc/neardup/places.txt");
  EXPECT_EQ(config.dedup.sketch.recent, 0u);
  EXPECT_EQ(config.dedup.sketch.exact_threshold, 0.75);
  EXPECT_EQ(to_yaml(parse_config(to_yaml(config), "round.yaml")), to_yaml(config));
}

TEST(ConfigErrors, MustMatchNamesItsChoices) {
  try {
    parse_config("dedup:\n  must_match: places\n", "t.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dedup.must_match"), std::string::npos) << what;
    EXPECT_NE(what.find("numbers_and_names"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace neardup::config
