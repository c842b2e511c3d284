#pragma once
// The whole neardup configuration as plain structs, and the YAML loader that fills it.
// Every field has a default (the product's defaults); a missing file section keeps them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "dedup/core/options.h"

namespace neardup::config {

/// input.format: text takes the whole value; json reads one JSON object's text
/// fields (anything else is invalid); automatic (`auto`, the default) reads a
/// value that is a JSON object as json does and any other value as text.
enum class InputFormat { text, json, automatic };
enum class Action { drop, tag, route };
enum class Delivery { at_least_once, exactly_once };
/// log.format and log.level: the logger's own (base/log.h).
using LogFormat = base::LogFormat;
using LogLevel = base::LogLevel;
/// metrics.page: automatic serves the page on a loopback listener, or with
/// credentials (metrics.page_user); on and off override that.
enum class PageMode { automatic, on, off };

struct KafkaOptions {
  std::optional<std::string> brokers;  ///< absent -> the embedded broker
  std::string group_id = "neardup";
  std::vector<std::string> input_topics{"input"};
  std::string output_topic = "output";
  std::string duplicates_topic = "duplicates";
  std::string dead_letter_topic = "dead-letters";
  /// The window changelog ("" = off). This and the judge and verdict topics are
  /// the group's own: "<group_id>-window" etc. unless named (derive_group_topics).
  std::string changelog_topic = "neardup-window";
  /// Consistent scale-out (docs/KAFKA.md "Several instances"): every window
  /// decision of the group is taken in the order of this one-partition topic by
  /// one judge, whichever instance read the message. "" = each instance judges
  /// its own messages (eventually consistent between instances).
  std::string judge_topic = "neardup-judge";
  std::string verdict_topic = "neardup-verdicts";  ///< the judge's answers (one partition)
  /// Story summaries ("" = off): one JSON record per original with duplicates
  /// (stream/records/story_record.h), keyed by the original's position.
  std::string summary_topic;
  /// Which of changelog_topic, judge_topic and verdict_topic a file or the
  /// environment named; the others follow group_id (derive_group_topics).
  bool changelog_topic_named = false;
  bool judge_topic_named = false;
  bool verdict_topic_named = false;
  int embedded_partitions = 8;                  ///< topics the embedded broker creates
  std::map<std::string, std::string> consumer;  ///< librdkafka consumer properties, passed as is
  std::map<std::string, std::string> producer;  ///< librdkafka producer properties, passed as is
  /// at-least-once: offsets commit after the outputs are acknowledged (a crash
  /// re-emits what was in flight). exactly-once: outputs, changelog entries and
  /// input offsets commit in one Kafka transaction (docs/KAFKA.md).
  Delivery delivery = Delivery::at_least_once;
  /// exactly-once: the producer's transactional.id; "" = "neardup-<group_id>-<instance_id>"
  /// with instance_id, else "neardup-<group_id>-<host name>".
  /// Stable across restarts of one instance (a restart then aborts what the
  /// previous run left open at once), distinct between instances.
  std::string transactional_id;
  /// Static group membership (KIP-345): librdkafka's group.instance.id of the
  /// input consumer, and "<id>-judge" of the judge's; "" = dynamic members.
  /// A member that restarts with its id takes its partitions back without a
  /// rebalance. Stable across restarts of one instance, distinct between
  /// instances: a second process with the id fences the first (it stops, exit 2).
  /// Under exactly-once it also names the default transactional id.
  std::string instance_id;
};

struct InputOptions {
  InputFormat format = InputFormat::automatic;
  std::vector<std::string> text_fields{"/text"};  ///< JSON pointers, joined with a space
  std::string id_field = "/id";                   ///< JSON pointer
  std::size_t max_bytes =
      1'000'000;  ///< leaves kRecordHeadroomBytes under the producer's message.max.bytes
};

struct MetricsOptions {
  std::string listen = "127.0.0.1:9464";  ///< "" disables the HTTP endpoint
  /// The page ("/") and /api/summary show message texts, topics and offsets:
  /// whether they are served (docs/METRICS.md, "Who may read the page").
  /// /metrics, /healthz and /readyz are always served.
  PageMode page = PageMode::automatic;
  std::string page_user;           ///< HTTP basic authentication for the page; "" = none
  std::string page_password_file;  ///< the password's file (first line); set with page_user
  bool redact_texts = false;       ///< the page shows locations and distances, no texts
};

struct LogOptions {
  LogFormat format = LogFormat::text;
  LogLevel level = LogLevel::info;
};

struct Config {
  KafkaOptions kafka;
  InputOptions input;
  Action action = Action::drop;
  /// `neardup run`: threads that decode and analyze (normalize, SimHash,
  /// sketch) the polled messages; 0 = the cores available. With the group judge
  /// only (kafka.judge_topic): without it, and with a learned IDF, one thread
  /// analyzes and judges in input order.
  int workers = 0;
  /// dedup.scope: which messages may be near-duplicates of each other. "global"
  /// (all), "key" (the same Kafka message key; not for `neardup scan`) or a JSON
  /// pointer into the input record (the same value of that field; input.format
  /// json). Sets dedup.window.scoped.
  std::string scope = "global";
  dedup::DedupOptions dedup;
  MetricsOptions metrics;
  LogOptions log;
};

/// neardup's default for the producer's message.max.bytes (librdkafka's own is
/// 1000000; Kafka brokers accept 1048588 by default).
inline constexpr std::size_t kDefaultProducerMessageMaxBytes = 1'048'576;
/// What an output record may need besides the input's value: its key, the
/// input's headers and neardup's. input.max_bytes + this must fit under the
/// producer's message.max.bytes.
inline constexpr std::size_t kRecordHeadroomBytes = 16 * 1024;
/// kafka.instance_id's longest: Kafka's 249 for a group.instance.id, less the
/// judge's "-judge".
inline constexpr std::size_t kMaxInstanceIdLength = 243;
/// The producer's message.max.bytes as the service will use it: kafka.producer's
/// value when it is a number, else kDefaultProducerMessageMaxBytes.
std::size_t producer_message_max_bytes(const KafkaOptions& kafka);

/// Thrown for any invalid configuration, with every error found: each reads
/// "FILE:LINE:COLUMN: KEY: expected ..., got '...'" (a person can act on it),
/// and what() is them all, one a line, in the order of the file.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message);
  /// `messages`: at least one.
  explicit ConfigError(std::vector<std::string> messages);
  /// One line each, without a trailing newline.
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

/// Checks one property of kafka.consumer or kafka.producer (its name and value
/// as written) the way the Kafka client will read it; returns "" when it is
/// accepted, else why not. config/ does not link librdkafka: app/ passes one
/// that asks it (app/cli.h, check_client_property).
using PropertyCheck = std::function<std::string(const std::string& name, const std::string& value)>;

/// Parses and validates YAML text; `origin` names it in errors (a file path).
/// Unknown keys are rejected with the nearest valid key suggested. With
/// `check_property`, every kafka.consumer and kafka.producer property passes
/// through it too. Throws ConfigError with every error of the text (a YAML
/// syntax error stops the reading: it is then the only one).
Config parse_config(const std::string& yaml_text, const std::string& origin,
                    const PropertyCheck& check_property = {});

/// Sets the group's own topics that no file or variable named to
/// "<group_id>-window", "<group_id>-judge" and "<group_id>-verdicts" (the
/// defaults are those of group "neardup"): two groups sharing a judge topic
/// would judge each other's messages, and sharing a changelog, rebuild each
/// other's windows. parse_config and apply_env_overrides call it.
void derive_group_topics(KafkaOptions& kafka);

/// Reads and parses a file. Throws ConfigError (unreadable file included).
Config load_config(const std::string& path, const PropertyCheck& check_property = {});

/// Of `names` (environment variable names), those that start with NEARDUP_
/// and name no configuration key but come near one: likely typos, which
/// apply_env_overrides ignores like any other variable. Each with the
/// variable it comes near: {"NEARDUP_ACTON", "NEARDUP_ACTION"}. O(names x keys).
std::vector<std::pair<std::string, std::string>> misspelled_env_variables(
    const std::vector<std::string>& names);

/// Applies NEARDUP_* environment overrides (e.g. NEARDUP_KAFKA_BROKERS,
/// NEARDUP_METRICS_LISTEN, NEARDUP_ACTION, NEARDUP_LOG_LEVEL). Throws ConfigError.
/// Every scalar key `section.name` has the variable NEARDUP_SECTION_NAME (list keys
/// take comma-separated values; the consumer/producer maps have none). A variable
/// that is set, even to "", overrides; values are validated like YAML values and
/// errors read "environment NEARDUP_X: expected ..., got '...'" (every one is
/// reported).
/// Not thread-safe with concurrent setenv (it reads the process environment).
void apply_env_overrides(Config& config);

/// Returns the value of an environment variable, nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The same, reading variables through `lookup` (tests pass a map).
void apply_env_overrides(Config& config, const EnvLookup& lookup);

/// Whether to_yaml writes the values of secret librdkafka properties.
enum class Secrets { show, redact };

/// True for librdkafka properties that hold secrets (sasl.password,
/// ssl.key.password, *.secret, ssl.key.pem, sasl.oauthbearer.config, ...).
bool is_secret_property(const std::string& name);

/// The effective configuration as YAML: every key, defaults included, in the
/// order of the schema. parse_config(to_yaml(c), ...) gives back `c` exactly;
/// with Secrets::redact, secret property values read "<redacted>" instead.
std::string to_yaml(const Config& config, Secrets secrets = Secrets::show);

/// One key of the schema. Each key is declared once, in keys.cc's table:
/// its parser, printer, error text and doc; its default is the struct's
/// (above), read back through the printer.
struct KeyInfo {
  std::string path;      ///< dotted: "dedup.max_distance"
  std::string env;       ///< its environment variable; "" for the maps
  std::string expected;  ///< what a value must be, as errors say it
  /// The default as to_yaml writes it for a Config{}, on one line ("3", "~",
  /// "\"\"", "[input]", "{}").
  std::string default_value;
  /// The default follows kafka.group_id ("<group_id>-window"; default_value is
  /// that of group "neardup") until a file or the environment names it.
  bool follows_group_id = false;
  std::string doc;  ///< for users, one line of Markdown: what it accepts and does
};

/// Every key of the schema, in schema order (the order of to_yaml).
std::vector<KeyInfo> schema();

/// The key table of config/README.md ("## Keys"): a Markdown table, one row
/// per key of schema() (key, default, accepts = doc, environment), each line
/// ending in a newline. `neardup config keys --markdown` prints it.
std::string schema_markdown();

}  // namespace neardup::config
