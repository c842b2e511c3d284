// The YAML loader. One table (`keys()`) lists every key of the schema with its
// validator and its printer; parsing, environment overrides, `to_yaml` and the
// "did you mean" suggestions are all driven by it, so a new option is one entry.
#include "config/config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include "base/listen_address.h"
#include "config/values.h"
#include "dedup/index/memory.h"
#include "dedup/index/window.h"

namespace neardup::config {

namespace {

constexpr std::uint64_t kMaxInputBytes = 64ULL << 20;
constexpr auto kMaxWindowEntries = static_cast<std::int64_t>(dedup::kMaxWindowEntries);
constexpr std::int64_t kMaxWindowMs = 365LL * 24 * 3'600'000;  // a year
constexpr std::size_t kMaxConfigFileBytes = 4U << 20;

enum class Shape { scalar, list, map };

using Map = std::map<std::string, std::string>;

struct Key {
  std::string path;  ///< "dedup.max_distance"
  /// For users, one line of Markdown: what it accepts and does (the "accepts"
  /// column of config/README.md, schema_markdown()).
  std::string doc;
  Shape shape = Shape::scalar;
  std::string expected;   ///< "an integer in 0..8" (for lists: what one item must be)
  bool nullable = false;  ///< scalar: null (~ or nothing) is a value (kafka.brokers: embedded)

  // scalar: validates and stores `text` (nullopt = null); false when invalid.
  std::function<bool(Config&, const std::optional<std::string>&)> set;
  // scalar: the value as written back by to_yaml (nullopt = null).
  std::function<std::optional<std::string>(const Config&)> show;
  // scalar, optional: what to add after "got '...'" when `set` refused the
  // text ("" = nothing): the reason when the text is close to valid.
  std::function<std::string(const std::string&)> hint;
  // scalar, optional: when `set` refused the text, why, in place of
  // "expected ..." (metrics.listen: the HTTP server's own reason).
  std::function<std::string(const std::string&)> reason;

  // list: validates one item; then stores the whole list (false = invalid list).
  std::function<bool(const std::string&)> item_ok;
  std::string list_expected;  ///< "a non-empty list of topic names"
  std::function<bool(Config&, const std::vector<std::string>&)> set_list;
  std::function<std::vector<std::string>(const Config&)> show_list;

  // scalar: true when the value is not the file's nor the environment's but
  // follows another key (a group's own topics follow kafka.group_id): to_yaml
  // shows it as a comment, so that its output read back still follows.
  std::function<bool(const Config&)> follows;

  // map: the string map, stored as written.
  std::function<Map&(Config&)> map;
  std::function<const Map&(const Config&)> show_map;
};

std::string env_name(const std::string& path) {
  std::string name = "NEARDUP_";
  for (char c : path)
    name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// ---- key builders ---------------------------------------------------------

template <class Get>
Key integer_key(std::string path, std::string doc, std::int64_t min, std::int64_t max, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
  key.set = [=](Config& config, const std::optional<std::string>& text) {
    auto value = text ? parse_integer(*text, min, max) : std::nullopt;
    if (!value) return false;
    get(config) = static_cast<std::remove_reference_t<decltype(get(config))>>(*value);
    return true;
  };
  key.show = [=](const Config& config) { return std::to_string(get(config)); };
  return key;
}

// A byte size ("64KiB", "1MiB", "1048576") in [min, max]; `expected` names it.
template <class Get>
Key size_key(std::string path, std::string doc, std::string expected, std::uint64_t min,
             std::uint64_t max, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = std::move(expected);
  key.set = [=](Config& config, const std::optional<std::string>& text) {
    auto bytes = text ? parse_size(*text) : std::nullopt;
    if (!bytes || *bytes < min || *bytes > max) return false;
    get(config) = static_cast<std::size_t>(*bytes);
    return true;
  };
  key.show = [=](const Config& config) { return format_size(get(config)); };
  return key;
}

template <class Enum, class Get>
Key choice_key(std::string path, std::string doc, std::vector<std::pair<std::string, Enum>> names,
               Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = "one of ";
  for (std::size_t i = 0; i < names.size(); ++i) key.expected += (i ? "|" : "") + names[i].first;
  key.set = [=](Config& config, const std::optional<std::string>& text) {
    for (const auto& [name, value] : names) {
      if (text && *text == name) {
        get(config) = value;
        return true;
      }
    }
    return false;
  };
  key.show = [=](const Config& config) -> std::optional<std::string> {
    for (const auto& [name, value] : names) {
      if (get(config) == value) return name;
    }
    return names.front().first;
  };
  return key;
}

template <class Get>
Key string_key(std::string path, std::string doc, std::string expected,
               std::function<bool(const std::string&)> ok, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = std::move(expected);
  key.set = [=](Config& config, const std::optional<std::string>& text) {
    if (!text || !ok(*text)) return false;
    get(config) = *text;
    return true;
  };
  key.show = [=](const Config& config) -> std::optional<std::string> { return get(config); };
  return key;
}

template <class Get>
Key bool_key(std::string path, std::string doc, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = "true or false";
  key.set = [=](Config& config, const std::optional<std::string>& text) {
    static const std::set<std::string> kTrue{"true", "True", "TRUE"},
        kFalse{"false", "False", "FALSE"};
    if (text && kTrue.count(*text)) {
      get(config) = true;
    } else if (text && kFalse.count(*text)) {
      get(config) = false;
    } else {
      return false;
    }
    return true;
  };
  key.show = [=](const Config& config) -> std::optional<std::string> {
    return get(config) ? "true" : "false";
  };
  return key;
}

template <class Get>
Key map_key(std::string path, std::string doc, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.shape = Shape::map;
  key.expected = "a mapping of property names to values";
  key.map = [=](Config& config) -> Map& { return get(config); };
  key.show_map = [=](const Config& config) -> const Map& { return get(config); };
  return key;
}

Key topic_key(std::string path, std::string doc, bool optional, std::string KafkaOptions::*member) {
  std::string expected = optional
                             ? "a Kafka topic name ([a-zA-Z0-9._-], at most 249) or \"\" to disable"
                             : "a Kafka topic name ([a-zA-Z0-9._-], at most 249)";
  return string_key(
      std::move(path), std::move(doc), std::move(expected),
      [optional](const std::string& text) {
        return (optional && text.empty()) || is_topic_name(text);
      },
      [member](auto& config) -> auto& { return config.kafka.*member; });
}

bool is_bare_number(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// A window duration from `least` ms to 365 days, with a unit: a bare number
/// ("24") is refused, since 24 seconds is rarely what "duration: 24" means.
Key duration_key(std::string path, std::string doc, const std::string& expected, std::int64_t least,
                 std::chrono::milliseconds dedup::WindowOptions::*member) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.expected = expected + " (at most 365d)";
  key.hint = [](const std::string& text) -> std::string {
    if (!is_bare_number(text)) return "";
    return ", a number without a unit (write " + text + "s, " + text + "m or " + text + "h)";
  };
  key.set = [least, member](Config& config, const std::optional<std::string>& text) {
    // (parse_duration reads a bare number as seconds, for command-line flags)
    auto value = text && !is_bare_number(*text) ? parse_duration(*text) : std::nullopt;
    if (!value || value->count() < least || value->count() > kMaxWindowMs) return false;
    config.dedup.window.*member = *value;
    return true;
  };
  key.show = [member](const Config& config) -> std::optional<std::string> {
    return format_duration(config.dedup.window.*member);
  };
  return key;
}

/// A topic of the group's own state: once named, it no longer follows group_id.
Key group_topic_key(std::string path, std::string doc, bool optional,
                    std::string KafkaOptions::*member, bool KafkaOptions::*named) {
  Key key = topic_key(std::move(path), std::move(doc), optional, member);
  key.set = [set = key.set, named](Config& config, const std::optional<std::string>& text) {
    if (!set(config, text)) return false;
    config.kafka.*named = true;
    return true;
  };
  key.follows = [named](const Config& config) { return !(config.kafka.*named); };
  return key;
}

template <class Get>
Key pointer_list_key(std::string path, std::string doc, Get get) {
  Key key;
  key.path = std::move(path);
  key.doc = std::move(doc);
  key.shape = Shape::list;
  key.expected = "a JSON pointer like /text or /a/b";
  key.list_expected = "a non-empty list of JSON pointers like [/text]";
  key.item_ok = [](const std::string& item) { return is_json_pointer(item); };
  key.set_list = [=](Config& config, const std::vector<std::string>& items) {
    if (items.empty()) return false;
    get(config) = items;
    return true;
  };
  key.show_list = [=](const Config& config) { return get(config); };
  return key;
}

// The schema. Order matters: it is the order of `config check` output.
const std::vector<Key>& keys() {
  static const std::vector<Key> kKeys = [] {
    std::vector<Key> k;
    {
      Key brokers;
      brokers.path = "kafka.brokers";
      brokers.doc =
          "`\"h:p,h:p\"` (optional `SCHEME://`); absent, `~` or `\"\"` = the "
          "embedded broker";
      brokers.nullable = true;
      brokers.expected =
          "a broker list like \"host:9092,host2:9092\" (absent, ~ or \"\" = the embedded broker)";
      brokers.set = [](Config& config, const std::optional<std::string>& text) {
        if (!text || text->empty() ||
            *text == "~") {  // "~" too: NEARDUP_KAFKA_BROKERS='~' is not YAML
          config.kafka.brokers.reset();
          return true;
        }
        if (!is_broker_list(*text)) return false;
        config.kafka.brokers = *text;
        return true;
      };
      brokers.show = [](const Config& config) { return config.kafka.brokers; };
      k.push_back(std::move(brokers));
    }
    k.push_back(string_key(
        "kafka.group_id", "non-empty string", "a non-empty consumer group id",
        [](const std::string& text) { return !text.empty(); },
        [](auto& config) -> auto& { return config.kafka.group_id; }));
    {
      Key topics;
      topics.path = "kafka.input_topics";
      topics.doc = "non-empty list of topic names";
      topics.shape = Shape::list;
      topics.expected = "a Kafka topic name ([a-zA-Z0-9._-], at most 249)";
      topics.list_expected = "a non-empty list of topic names like [input]";
      topics.item_ok = [](const std::string& item) { return is_topic_name(item); };
      topics.set_list = [](Config& config, const std::vector<std::string>& items) {
        if (items.empty()) return false;
        config.kafka.input_topics = items;
        return true;
      };
      topics.show_list = [](const Config& config) { return config.kafka.input_topics; };
      k.push_back(std::move(topics));
    }
    k.push_back(topic_key("kafka.output_topic", "topic name, not an input topic", false,
                          &KafkaOptions::output_topic));
    k.push_back(topic_key("kafka.duplicates_topic", "topic name, not an input topic", false,
                          &KafkaOptions::duplicates_topic));
    k.push_back(topic_key("kafka.dead_letter_topic", "topic name, not an input topic", false,
                          &KafkaOptions::dead_letter_topic));
    k.push_back(group_topic_key("kafka.changelog_topic",
                                "topic name or `\"\"` (off); each group has its own, "
                                "`<group_id>-window`, unless named (docs/KAFKA.md)",
                                true, &KafkaOptions::changelog_topic,
                                &KafkaOptions::changelog_topic_named));
    k.push_back(topic_key(
        "kafka.summary_topic",
        "topic name or `\"\"` (off): story summaries, one JSON record per original that got "
        "duplicates, keyed by the original's position (a compacted topic keeps each story's "
        "latest); interim ones every `window.summary_interval`, a final one when the original "
        "leaves the window (docs/KAFKA.md \"Story summaries\")",
        true, &KafkaOptions::summary_topic));
    k.push_back(
        group_topic_key("kafka.judge_topic",
                        "one-partition topic where the group's window decisions are ordered "
                        "(docs/KAFKA.md \"Several instances\"), `<group_id>-judge` unless "
                        "named; `\"\"` = each instance judges its own messages (eventually "
                        "consistent between instances)",
                        true, &KafkaOptions::judge_topic, &KafkaOptions::judge_topic_named));
    k.push_back(group_topic_key("kafka.verdict_topic",
                                "one-partition topic of the judge's answers, `<group_id>-verdicts` "
                                "unless named; used when judge_topic is set",
                                false, &KafkaOptions::verdict_topic,
                                &KafkaOptions::verdict_topic_named));
    k.push_back(integer_key(
        "kafka.embedded_partitions",
        "1..64: the partitions of each topic the embedded broker creates", 1, 64,
        [](auto& config) -> auto& { return config.kafka.embedded_partitions; }));
    k.push_back(choice_key<Delivery>(
        "kafka.delivery",
        "`at-least-once` or `exactly-once` (Kafka transactions; "
        "docs/KAFKA.md)",
        {{"at-least-once", Delivery::at_least_once}, {"exactly-once", Delivery::exactly_once}},
        [](auto& config) -> auto& { return config.kafka.delivery; }));
    k.push_back(string_key(
        "kafka.transactional_id",
        "exactly-once: the producer's `transactional.id`; `\"\"` = "
        "`neardup-<group_id>-<instance_id>` with kafka.instance_id, else "
        "`neardup-<group_id>-<host name>` (stable per instance, distinct "
        "between instances)",
        "\"\" or a transactional id without spaces or control characters",
        [](const std::string& text) {
          return std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 0x7f; });
        },
        [](auto& config) -> auto& { return config.kafka.transactional_id; }));
    k.push_back(string_key(
        "kafka.instance_id",
        "static group membership (KIP-345): the input consumer's "
        "`group.instance.id`, and `<id>-judge` the judge's; stable across "
        "restarts of one instance, distinct between instances (the pod or host "
        "name); an instance that restarts with it gets its partitions back "
        "without a rebalance; a second process with the same id stops the first "
        "(exit 2); `\"\"` = dynamic members (docs/KAFKA.md, \"Static membership\")",
        "\"\" or an id of [a-zA-Z0-9._-], at most 243 characters",
        [](const std::string& text) {
          return text.empty() || (text.size() <= kMaxInstanceIdLength && is_topic_name(text));
        },
        [](auto& config) -> auto& { return config.kafka.instance_id; }));
    k.push_back(map_key(
        "kafka.consumer",
        "map of librdkafka properties, scalar values as text; names and "
        "values checked by librdkafka",
        [](auto& config) -> auto& { return config.kafka.consumer; }));
    k.push_back(map_key(
        "kafka.producer",
        "map of librdkafka properties, scalar values as text; names and "
        "values checked by librdkafka",
        [](auto& config) -> auto& { return config.kafka.producer; }));

    k.push_back(choice_key<InputFormat>(
        "input.format",
        "`auto` (a value that is a JSON object is read at input.text_fields, any other value "
        "is the text) | `text` (the whole value is the text) | `json` (a JSON object read at "
        "input.text_fields; any other value is invalid)",
        {{"auto", InputFormat::automatic},
         {"text", InputFormat::text},
         {"json", InputFormat::json}},
        [](auto& config) -> auto& { return config.input.format; }));
    k.push_back(pointer_list_key(
        "input.text_fields", "non-empty list of JSON pointers (`/a/b`, `~0` `~1`)",
        [](auto& config) -> auto& { return config.input.text_fields; }));
    k.push_back(string_key(
        "input.id_field", "JSON pointer", "a JSON pointer like /id",
        [](const std::string& text) { return is_json_pointer(text); },
        [](auto& config) -> auto& { return config.input.id_field; }));
    k.push_back(size_key(
        "input.max_bytes",
        "1..64MiB: `1048576`, `64KiB`, `1MiB`, `10kB`, `5MB`; with 16KiB to "
        "spare under the producer's `message.max.bytes` (default 1MiB; see "
        "docs/KAFKA.md)",
        "a size in 1..64MiB like 1048576, 64KiB or 1MiB", 1, kMaxInputBytes,
        [](auto& config) -> auto& { return config.input.max_bytes; }));

    k.push_back(choice_key<Action>(
        "action", "drop | tag | route",
        {{"drop", Action::drop}, {"tag", Action::tag}, {"route", Action::route}},
        [](auto& config) -> auto& { return config.action; }));
    k.push_back(integer_key(
        "workers",
        "threads that decode and analyze in `neardup run`, 0 = the cores "
        "available (sched_getaffinity); applies with the group judge "
        "(kafka.judge_topic), and is 1 with a learned IDF (`weighting: "
        "tf_idf`, `idf_source: stream`), whose history is one order",
        0, 256, [](auto& config) -> auto& { return config.workers; }));
    k.back().expected = "0 (the cores available) or a thread count in 1..256";

    k.push_back(integer_key(
        "dedup.max_distance", "0..8", 0, 8,
        [](auto& config) -> auto& { return config.dedup.index.max_distance; }));
    k.push_back(integer_key(
        "dedup.blocks",
        "0 (automatic) or max_distance+1..16, and a layout whose bucket slots "
        "fit 4 GiB at window.max_entries (`neardup plan`)",
        0, 16, [](auto& config) -> auto& { return config.dedup.index.blocks; }));
    k.back().expected = "0 (automatic) or an integer in max_distance+1..16";
    {
      Key scope;
      scope.path = "dedup.scope";
      scope.doc =
          "`global` (every message may duplicate any earlier one) | `key` (only "
          "earlier messages with the same Kafka key; `neardup scan` refuses it) "
          "| a JSON pointer like `/user_id` or `/channel` (only earlier records "
          "with the same value of that field; needs `input.format` `auto` or "
          "`json`; a record without the field, or with null, or (auto) a value "
          "that is not a JSON object has the scope of `\"\"`). "
          "Costs 4 bytes per window entry when not global (config/README.md, "
          "\"Scope\")";
      scope.expected = "global, key, or a JSON pointer like /user_id";
      scope.set = [](Config& config, const std::optional<std::string>& text) {
        if (!text ||
            (*text != "global" && *text != "key" && (text->empty() || !is_json_pointer(*text))))
          return false;
        config.scope = *text;
        config.dedup.window.scoped = *text != "global";
        return true;
      };
      scope.show = [](const Config& config) { return config.scope; };
      k.push_back(std::move(scope));
    }
    k.push_back(bool_key(
        "dedup.normalize", "true | false",
        [](auto& config) -> auto& { return config.dedup.text.normalize; }));
    k.push_back(bool_key(
        "dedup.strip_boilerplate",
        "true | false: URLs, @mentions, #hashtags and a \"via\"/RT/转发 before a mention are "
        "left out of the fingerprint (docs/ACCURACY.md, \"The design\", point 5)",
        [](auto& config) -> auto& { return config.dedup.text.strip_boilerplate; }));
    k.push_back(choice_key<dedup::MustMatch>(
        "dedup.must_match",
        "none | numbers | names | numbers_and_names: between recent short texts, such tokens "
        "must match for a duplicate (templated texts; docs/ACCURACY.md)",
        {{"none", dedup::MustMatch::none},
         {"numbers", dedup::MustMatch::numbers},
         {"names", dedup::MustMatch::names},
         {"numbers_and_names", dedup::MustMatch::numbers_and_names}},
        [](auto& config) -> auto& { return config.dedup.text.must_match; }));
    k.push_back(string_key(
        "dedup.must_match_words",
        "path of a word list (one a line, any script) that must match between recent short "
        "texts; \"\" = none",
        "a file path (\"\" = none)", [](const std::string&) { return true; },
        [](auto& config) -> auto& { return config.dedup.text.must_match_words; }));
    k.push_back(integer_key(
        "dedup.cjk_ngram", "1..4", 1, 4,
        [](auto& config) -> auto& { return config.dedup.text.cjk_ngram; }));
    k.push_back(integer_key(
        "dedup.word_shingle", "1..4", 1, 4,
        [](auto& config) -> auto& { return config.dedup.text.word_shingle; }));
    k.push_back(choice_key<dedup::Weighting>(
        "dedup.weighting", "unit | tf | tf_idf",
        {{"unit", dedup::Weighting::unit},
         {"tf", dedup::Weighting::tf},
         {"tf_idf", dedup::Weighting::tf_idf}},
        [](auto& config) -> auto& { return config.dedup.text.weighting; }));
    k.push_back(choice_key<dedup::IdfSource>(
        "dedup.idf_source", "stream | file",
        {{"stream", dedup::IdfSource::stream}, {"file", dedup::IdfSource::file}},
        [](auto& config) -> auto& { return config.dedup.text.idf_source; }));
    k.push_back(string_key(
        "dedup.idf_file", "path; required when idf_source is file and weighting tf_idf",
        "a file path (\"\" = none)", [](const std::string&) { return true; },
        [](auto& config) -> auto& { return config.dedup.text.idf_file; }));

    k.push_back(bool_key(
        "dedup.sketch.enabled", "true | false (false: SimHash alone, the classic rule)",
        [](auto& config) -> auto& { return config.dedup.sketch.enabled; }));
    k.push_back(choice_key<int>(
        "dedup.sketch.bits",
        "1 | 2 | 4 | 8 (bits per MinHash bin; bins = 128 / bits, 16 bytes per "
        "entry)",
        {{"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}},
        [](auto& config) -> auto& { return config.dedup.sketch.bits; }));
    // A Jaccard threshold of the sketch stage: a number in 0.05..1.
    auto jaccard_key = [](std::string path, std::string doc, double dedup::SketchOptions::*member) {
      Key key;
      key.path = std::move(path);
      key.doc = std::move(doc);
      key.expected = "a number in 0.05..1 like 0.7";
      key.set = [member](Config& config, const std::optional<std::string>& text) {
        if (!text || text->empty()) return false;
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text->c_str(), &end);
        if (errno != 0 || end != text->c_str() + text->size() || !(value >= 0.05 && value <= 1.0))
          return false;
        config.dedup.sketch.*member = value;
        return true;
      };
      key.show = [member](const Config& config) -> std::optional<std::string> {
        char text[32];  // the shortest form that reads back as the same double
        const auto end = std::to_chars(text, text + sizeof text, config.dedup.sketch.*member).ptr;
        return std::string(text, end);
      };
      return key;
    };
    k.push_back(jaccard_key("dedup.sketch.threshold",
                            "0.05..1 (estimated shingle Jaccard of a duplicate)",
                            &dedup::SketchOptions::threshold));
    k.push_back(integer_key(
        "dedup.sketch.bands", "0..8 (LSH bands; 0 = SimHash candidates only)", 0, 8,
        [](auto& config) -> auto& { return config.dedup.sketch.bands; }));
    k.push_back(integer_key(
        "dedup.sketch.band_bins", "1..16; bands * band_bins <= 128 / bits", 1, 16,
        [](auto& config) -> auto& { return config.dedup.sketch.band_bins; }));
    k.push_back(integer_key(
        "dedup.sketch.recent",
        "0..1000000: the newest short texts (<= 128 shingles; kept ones, and reposts that differ "
        "from what they repeat) whose exact shingle sets are kept and compared exactly; 0 = off. "
        "With "
        "`window.max_memory`, at most what a sixteenth of it holds",
        0, 1'000'000, [](auto& config) -> auto& { return config.dedup.sketch.recent; }));
    k.push_back(jaccard_key("dedup.sketch.exact_threshold",
                            "0.05..1 (exact shingle Jaccard of a duplicate between recent short "
                            "texts)",
                            &dedup::SketchOptions::exact_threshold));

    k.push_back(duration_key("window.duration",
                             "1ms..365d with a unit: `500ms`, `90s`, `10m`, `24h`, `2d`, `1h30m` "
                             "(a bare `24` is refused)",
                             "a duration like 24h, 10m, 90s or 500ms", 1,
                             &dedup::WindowOptions::duration));
    k.push_back(integer_key(
        "window.max_entries", "1..2^30", 1, kMaxWindowEntries,
        [](auto& config) -> auto& { return config.dedup.window.max_entries; }));
    {
      Key memory;
      memory.path = "window.max_memory";
      memory.doc =
          "absent or `~` (no bound in bytes) | a size like `2GiB`, `512MiB`, `12MiB`: what the "
          "window's structures hold at most (the pigeonhole index, the sketch index and the "
          "recent-text cache, as `neardup_window_bytes` reports them); the window holds the "
          "entries that fit (`neardup plan --memory SIZE` says how many) and evicts the oldest "
          "beyond them. With `window.max_entries` and `window.duration`, the tightest bound wins";
      memory.nullable = true;
      memory.expected = "a size like 2GiB, 512MiB or 12MiB (absent or ~ = no bound in bytes)";
      memory.set = [](Config& config, const std::optional<std::string>& text) {
        if (!text || *text == "~") {  // "~" too: an environment variable is not YAML
          config.dedup.window.max_memory = 0;
          return true;
        }
        const auto bytes = parse_size(*text);
        if (!bytes || *bytes == 0 || *bytes > (std::uint64_t{1} << 50)) return false;
        config.dedup.window.max_memory = static_cast<std::size_t>(*bytes);
        return true;
      };
      memory.show = [](const Config& config) -> std::optional<std::string> {
        if (config.dedup.window.max_memory == 0) return std::nullopt;
        return format_size(config.dedup.window.max_memory);
      };
      k.push_back(std::move(memory));
    }
    k.push_back(duration_key("window.max_future",
                             "0s..365d with a unit (`0s`, not `0`): a message stamped later than "
                             "the wall clock plus this is judged at the wall clock plus this (its "
                             "output keeps its timestamp); one clock far ahead would otherwise "
                             "evict the whole window, and through the changelog every rebuild "
                             "after it. The first 10 such messages are logged",
                             "a duration like 1m, 90s or 0s", 0,
                             &dedup::WindowOptions::max_future));
    k.push_back(duration_key("window.summary_interval",
                             "0s..365d with a unit: with `kafka.summary_topic` set, an interim "
                             "summary of every story that got duplicates since the last one, this "
                             "often (wall clock); `0s` = final summaries only",
                             "a duration like 60s, 5m or 0s", 0,
                             &dedup::WindowOptions::summary_interval));
    k.push_back(bool_key(
        "window.refresh_on_duplicate",
        "true | false: a duplicate renews its original's time in the window "
        "(the duplicate's text takes the original's place, keeping the "
        "original's `neardup-of` and count), so a story reposted within every "
        "`window.duration` stays suppressed as long as it keeps coming; an "
        "original is renewed once it is in the older half of the window (by "
        "time, or by entries when `window.max_entries` is the bound), so a "
        "flood of copies costs no more than without refresh",
        [](auto& config) -> auto& { return config.dedup.window.refresh_on_duplicate; }));
    k.push_back(size_key(
        "window.rebuild_memory",
        "64KiB..1024GiB: `64MiB`, `512MiB`, `1GiB`: what a rebuild from the changelog (at "
        "start, at a judge's takeover) may hold beyond the window while it reads. When the "
        "entries it reads need more (about 72 bytes each), it reads the window's entries a "
        "second time, in slices of this size, and the rebuild peaks at the window plus this (on "
        "a changelog stamped by its writers, CreateTime)",
        "a size in 64KiB..1024GiB like 64MiB or 1GiB", std::uint64_t{64} << 10,
        std::uint64_t{1024} << 30,
        [](auto& config) -> auto& { return config.dedup.window.rebuild_memory; }));

    // Parsed as the HTTP server parses it (base/listen_address.h): IPv4
    // addresses and host names only, since the civetweb library neardup serves
    // with (Debian's 1.15) is built without IPv6.
    k.push_back(string_key(
        "metrics.listen",
        "`host:port` with an IPv4 address (four numbers in 0..255) or a host name, port "
        "0..65535 (0 = any free), "
        "or `\"\"` (off); `[v6]:port` is refused: the civetweb library "
        "neardup serves with (Debian's) is built without IPv6; `/metrics`, "
        "`/healthz` and `/readyz` are served on it without credentials",
        "an IPv4 address or host name with a port like 127.0.0.1:9464 or 0.0.0.0:9464, or \"\" "
        "to disable",
        [](const std::string& text) {
          base::ListenAddress parsed;
          return text.empty() || base::parse_listen_address(text, parsed).empty();
        },
        [](auto& config) -> auto& { return config.metrics.listen; }));
    k.back().reason = [](const std::string& text) {
      base::ListenAddress parsed;
      return base::parse_listen_address(text, parsed);
    };
    k.push_back(choice_key<PageMode>(
        "metrics.page",
        "`auto` | `on` | `off`: whether the page (`/`) and `/api/summary`, "
        "which show message texts, topics and offsets, are served; `auto` "
        "serves them on a loopback listener (127.0.0.0/8, `::1`, "
        "`localhost`), and on any other only with `metrics.page_user` set; "
        "elsewhere they answer `403` (docs/METRICS.md, \"Who may read the "
        "page\")",
        {{"auto", PageMode::automatic}, {"on", PageMode::on}, {"off", PageMode::off}},
        [](auto& config) -> auto& { return config.metrics.page; }));
    k.push_back(string_key(
        "metrics.page_user",
        "`\"\"` (none) or a user name without `:`: HTTP basic authentication "
        "for the page and `/api/summary`; set with page_password_file",
        "\"\" or a user name without ':' or control characters",
        [](const std::string& text) {
          return std::all_of(text.begin(), text.end(), [](char c) {
            return c != ':' && static_cast<unsigned char>(c) >= ' ' && c != 0x7f;
          });
        },
        [](auto& config) -> auto& { return config.metrics.page_user; }));
    k.push_back(string_key(
        "metrics.page_password_file",
        "`\"\"` or the path of a file whose first line is page_user's "
        "password (read at start; unreadable or empty stops `neardup run`); "
        "set with page_user",
        "a file path (\"\" = none)", [](const std::string&) { return true; },
        [](auto& config) -> auto& { return config.metrics.page_password_file; }));
    k.push_back(bool_key(
        "metrics.redact_texts",
        "true | false: the page and `/api/summary` show locations, distances "
        "and counts, no message text",
        [](auto& config) -> auto& { return config.metrics.redact_texts; }));

    k.push_back(choice_key<LogFormat>(
        "log.format", "text | json", {{"text", LogFormat::text}, {"json", LogFormat::json}},
        [](auto& config) -> auto& { return config.log.format; }));
    k.push_back(choice_key<LogLevel>(
        "log.level", "debug | info | warn | error",
        {{"debug", LogLevel::debug},
         {"info", LogLevel::info},
         {"warn", LogLevel::warn},
         {"error", LogLevel::error}},
        [](auto& config) -> auto& { return config.log.level; }));
    return k;
  }();
  return kKeys;
}

const Key* find_key(const std::string& path) {
  for (const auto& key : keys()) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

// The names allowed directly under `prefix` ("" = the top level), in schema order.
std::vector<std::string> children(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& key : keys()) {
    std::string_view path = key.path;
    if (!prefix.empty()) {
      if (path.size() <= prefix.size() || path.substr(0, prefix.size()) != prefix ||
          path[prefix.size()] != '.') {
        continue;
      }
      path.remove_prefix(prefix.size() + 1);
    }
    std::string name(path.substr(0, path.find('.')));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

bool is_section(const std::string& path) {
  const std::string dotted = path + ".";
  return std::any_of(keys().begin(), keys().end(), [&](const Key& key) {
    return key.path.compare(0, dotted.size(), dotted) == 0;
  });
}

// ---- errors -----------------------------------------------------------------

// A key or value as an error message shows it: control characters escaped,
// long ones cut after `max` bytes.
std::string printable(std::string_view value, std::size_t max = 80) {
  std::string out;
  for (std::size_t i = 0; i < value.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += c == '\n' ? std::string("\\n") : std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > max) out += "...";
  return out;
}

// A value quoted for an error message (printable(), in quotes).
std::string quoted(std::string_view value) { return "'" + printable(value) + "'"; }

std::string expected_message(const std::string& where, const std::string& expected,
                             const std::string& got) {
  return where + ": expected " + expected + ", got " + got;
}

[[noreturn]] void fail_expected(const std::string& where, const std::string& expected,
                                const std::string& got) {
  throw ConfigError(expected_message(where, expected, got));
}

/// Where each key was set, to point errors that involve two keys at the right one.
class Locator {
 public:
  virtual ~Locator() = default;
  virtual bool was_set(const std::string& path) const = 0;
  /// "file:L:C: path" or "environment NEARDUP_X"
  virtual std::string where(const std::string& path) const = 0;
  /// Whether `path`, or the section it is in, was refused on its own.
  bool failed(const std::string& path) const {
    return std::any_of(failed_.begin(), failed_.end(), [&](const std::string& refused) {
      return path == refused || path.starts_with(refused + ".");
    });
  }
  void mark_failed(const std::string& path) { failed_.insert(path); }

 private:
  std::set<std::string> failed_;
};

std::size_t producer_message_max_bytes_impl(const KafkaOptions& kafka) {
  auto it = kafka.producer.find("message.max.bytes");
  if (it == kafka.producer.end()) return kDefaultProducerMessageMaxBytes;
  std::size_t value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0 ? value : kDefaultProducerMessageMaxBytes;
}

// Checks that involve more than one key; returns their errors. Blames a key
// the user set, if any. A check whose keys already failed on their own is
// skipped (its verdict would be on a default, not on what was written).
std::vector<std::string> check_cross(const Config& config, const Locator& locator) {
  std::vector<std::string> errors;
  // Runs `body` (which throws ConfigError) unless one of `paths` failed.
  auto check = [&](std::initializer_list<const char*> paths, auto&& body) {
    for (const char* path : paths) {
      if (locator.failed(path)) return false;
    }
    try {
      body();
    } catch (const ConfigError& e) {
      errors.emplace_back(e.what());
      return false;
    }
    return true;
  };
  auto blame = [&](std::initializer_list<const char*> paths) -> std::string {
    for (const char* path : paths) {
      if (locator.was_set(path)) return path;
    }
    return *paths.begin();
  };
  const auto& index = config.dedup.index;
  const bool blocks_ok = check({"dedup.blocks", "dedup.max_distance"}, [&] {
    if (index.blocks == 0 || (index.blocks >= index.max_distance + 1 && index.blocks <= 16)) return;
    if (blame({"dedup.blocks", "dedup.max_distance"}) == "dedup.blocks") {
      fail_expected(locator.where("dedup.blocks"),
                    "0 (automatic) or an integer in " + std::to_string(index.max_distance + 1) +
                        "..16 (at least dedup.max_distance + 1)",
                    quoted(std::to_string(index.blocks)));
    }
    fail_expected(locator.where("dedup.max_distance"),
                  "an integer in 0.." + std::to_string(index.blocks - 1) +
                      " (below dedup.blocks = " + std::to_string(index.blocks) + ")",
                  quoted(std::to_string(index.max_distance)));
  });
  // The window's own limits (its tables are sized up front), said here with
  // the key to blame rather than when a command starts.
  if (blocks_ok) {
    check({"dedup.blocks", "window.max_entries", "dedup.max_distance"}, [&] {
      try {
        dedup::WindowOptions window = config.dedup.window;
        window.max_memory = 0;  // the check below says what max_memory holds
        dedup::validate(index, window);
      } catch (const std::invalid_argument& e) {
        const std::string path =
            blame({"dedup.blocks", "window.max_entries", "dedup.max_distance"});
        throw ConfigError(locator.where(path) + ": " + e.what());
      }
    });
  }
  // A bound in bytes must hold a minimal window beside the sketch index and
  // the recent-text cache.
  if (blocks_ok) {
    check({"window.max_memory", "dedup.sketch.recent", "window.max_entries"}, [&] {
      try {
        dedup::validate_memory(config.dedup);
      } catch (const std::invalid_argument& e) {
        const std::string path =
            blame({"window.max_memory", "dedup.sketch.recent", "window.max_entries"});
        throw ConfigError(locator.where(path) + ": window." + e.what() +
                          "; raise window.max_memory (`neardup plan --memory SIZE`)");
      }
    });
  }
  // Every input that passes input.max_bytes must fit in an output record.
  check({"input.max_bytes", "kafka.producer"}, [&] {
    const std::size_t record_max = producer_message_max_bytes(config.kafka);
    if (config.input.max_bytes + kRecordHeadroomBytes <= record_max) return;
    const std::string path = blame({"input.max_bytes", "kafka.producer"});
    throw ConfigError(
        locator.where(path) + ": input.max_bytes (" + std::to_string(config.input.max_bytes) +
        ") + " + std::to_string(kRecordHeadroomBytes) +
        " bytes for key and headers exceeds the producer's message.max.bytes (" +
        std::to_string(record_max) +
        "): messages near input.max_bytes could not be republished. Lower input.max_bytes, or "
        "raise "
        "kafka.producer message.max.bytes (and the output topics' max.message.bytes)");
  });
  // One way to name the instance, so that the judge's id follows the input's.
  check({"kafka.instance_id", "kafka.consumer"}, [&] {
    if (config.kafka.instance_id.empty() || !config.kafka.consumer.contains("group.instance.id"))
      return;
    fail_expected(locator.where(blame({"kafka.instance_id", "kafka.consumer"})),
                  "kafka.instance_id or kafka.consumer's group.instance.id, not both "
                  "(kafka.instance_id sets group.instance.id)",
                  quoted(config.kafka.instance_id));
  });
  const auto& sketch = config.dedup.sketch;
  check(
      {"dedup.sketch.band_bins", "dedup.sketch.bands", "dedup.sketch.bits", "dedup.sketch.enabled"},
      [&] {
        if (!sketch.enabled || sketch.bands * sketch.band_bins <= 128 / sketch.bits) return;
        const std::string path = blame({"dedup.sketch.band_bins", "dedup.sketch.bands",
                                        "dedup.sketch.bits", "dedup.sketch.enabled"});
        fail_expected(
            locator.where(path),
            "dedup.sketch.bands * dedup.sketch.band_bins <= " + std::to_string(128 / sketch.bits) +
                " (the bins of a " + std::to_string(sketch.bits) + "-bit sketch)",
            quoted(std::to_string(sketch.bands) + " * " + std::to_string(sketch.band_bins)));
      });
  check({"dedup.scope", "input.format"}, [&] {
    if (!config.scope.starts_with("/") || config.input.format != InputFormat::text) return;
    const std::string path = blame({"dedup.scope", "input.format"});
    fail_expected(locator.where(path),
                  path == "dedup.scope" ? "global or key, or input.format auto or json (" +
                                              config.scope + " is a field of a JSON record)"
                                        : "auto or json (dedup.scope " + config.scope +
                                              " is a field of a JSON record)",
                  quoted(path == "dedup.scope" ? config.scope : std::string("text")));
  });
  check({"dedup.idf_file", "dedup.idf_source", "dedup.weighting"}, [&] {
    const auto& text = config.dedup.text;
    if (text.weighting != dedup::Weighting::tf_idf || text.idf_source != dedup::IdfSource::file ||
        !text.idf_file.empty())
      return;
    std::string path = blame({"dedup.idf_file", "dedup.idf_source", "dedup.weighting"});
    std::string got = path == "dedup.idf_file"     ? "''"
                      : path == "dedup.idf_source" ? "'file'"
                                                   : "'tf_idf'";
    std::string expected =
        path == "dedup.idf_file"
            ? "a file path (required when idf_source is file and weighting is tf_idf)"
            : "dedup.idf_file to be set (idf_source file with weighting tf_idf reads it)";
    fail_expected(locator.where(path), expected, got);
  });
  check({"metrics.page_user", "metrics.page_password_file"}, [&] {
    const auto& metrics = config.metrics;
    if (metrics.page_user.empty() == metrics.page_password_file.empty()) return;
    const bool user_set = !metrics.page_user.empty();
    fail_expected(locator.where(user_set ? "metrics.page_user" : "metrics.page_password_file"),
                  user_set ? "metrics.page_password_file set as well (the file holding the "
                             "password of metrics.page_user)"
                           : "metrics.page_user set as well (the user whose password this is)",
                  quoted(user_set ? metrics.page_user : metrics.page_password_file));
  });
  const auto& kafka = config.kafka;
  check({"kafka.group_id", "kafka.changelog_topic", "kafka.judge_topic", "kafka.verdict_topic"},
        [&] {
          for (const auto& [named, topic] :
               {std::pair{kafka.changelog_topic_named, &kafka.changelog_topic},
                std::pair{kafka.judge_topic_named, &kafka.judge_topic},
                std::pair{kafka.verdict_topic_named, &kafka.verdict_topic}}) {
            if (named || is_topic_name(*topic)) continue;
            if (topic == &kafka.verdict_topic && kafka.judge_topic.empty()) continue;  // (unused)
            fail_expected(locator.where("kafka.group_id"),
                          "a group id that makes topic names (" + quoted(*topic) +
                              " is not: [a-zA-Z0-9._-], at most 249), or kafka.changelog_topic, "
                              "judge_topic and verdict_topic named",
                          quoted(kafka.group_id));
          }
        });
  const std::pair<const char*, const std::string*> outputs[] = {
      {"kafka.output_topic", &kafka.output_topic},
      {"kafka.duplicates_topic", &kafka.duplicates_topic},
      {"kafka.dead_letter_topic", &kafka.dead_letter_topic},
      {"kafka.changelog_topic", &kafka.changelog_topic},
      {"kafka.judge_topic", &kafka.judge_topic},
      {"kafka.verdict_topic", &kafka.verdict_topic},
      {"kafka.summary_topic", &kafka.summary_topic}};
  for (const auto& [path, topic] : outputs) {
    check({path, "kafka.input_topics"}, [&, path = path, topic = topic] {
      if (std::find(kafka.input_topics.begin(), kafka.input_topics.end(), *topic) ==
          kafka.input_topics.end())
        return;
      std::string blamed = blame({path, "kafka.input_topics"});
      if (blamed == path) {
        fail_expected(locator.where(path),
                      "a topic that is not one of kafka.input_topics (it would loop)",
                      quoted(*topic));
      }
      fail_expected(locator.where(blamed),
                    "input topics other than " + std::string(path) + " (it would loop)",
                    quoted(*topic));
    });
  }
  // The changelog, judge and verdict topics are read back as neardup's own
  // records: a topic that also carries anything else would mix the two (and
  // its readers would skip the other records as corrupt). Each pair once.
  std::set<std::pair<std::string_view, std::string_view>> reported;
  for (const char* own : {"kafka.changelog_topic", "kafka.judge_topic", "kafka.verdict_topic",
                          "kafka.summary_topic"}) {
    const std::string* own_topic = nullptr;
    for (const auto& [path, topic] : outputs)
      if (std::string_view(path) == own) own_topic = topic;
    if (own_topic->empty()) continue;
    if (std::string_view(own) == "kafka.verdict_topic" && kafka.judge_topic.empty()) continue;
    for (const auto& [path, topic] : outputs) {
      if (std::string_view(path) == own || *topic != *own_topic) continue;
      if (!reported
               .emplace(std::min<std::string_view>(own, path),
                        std::max<std::string_view>(own, path))
               .second)
        continue;
      check({own, path}, [&, path = path, topic = topic] {
        const std::string blamed = blame({own, path});
        const std::string other = blamed == path ? own : path;
        fail_expected(locator.where(blamed),
                      "a topic other than " + other + " (" + own + " needs a topic of its own)",
                      quoted(*topic));
      });
    }
  }
  return errors;
}

// ---- YAML -------------------------------------------------------------------

std::string kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return quoted(node.Scalar());
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

class YamlReader final : public Locator {
 public:
  YamlReader(std::string origin, Config& config, const PropertyCheck& check_property)
      : origin_(std::move(origin)), config_(config), check_property_(check_property) {}

  /// Throws ConfigError with every error of the document.
  void read_root(const YAML::Node& root) {
    if (root.IsNull()) return;  // empty file: all defaults
    if (!root.IsMap()) {
      throw ConfigError(at(root.Mark(), root.Mark()) +
                        ": expected a mapping of sections (kafka, input, action, "
                        "dedup, window, metrics, log), got " +
                        kind_of(root));
    }
    read_map(root, "");
    derive_group_topics(config_.kafka);
    for (auto& error : check_cross(config_, *this)) errors_.push_back(std::move(error));
    if (!errors_.empty()) throw ConfigError(std::move(errors_));
  }

  bool was_set(const std::string& path) const override { return set_at_.count(path) > 0; }
  std::string where(const std::string& path) const override {
    auto it = set_at_.find(path);
    return (it == set_at_.end() ? origin_ : it->second) + ": " + path;
  }

 private:
  // "file:L:C" from a mark, 1-based; `fallback` when the mark is unknown (nulls).
  std::string at(const YAML::Mark& mark, const YAML::Mark& fallback) const {
    const YAML::Mark& use = mark.is_null() ? fallback : mark;
    if (use.is_null()) return origin_;
    return origin_ + ":" + std::to_string(use.line + 1) + ":" + std::to_string(use.column + 1);
  }

  // The mark of a value: yaml-cpp gives a null value the position of the next
  // token, so nulls point at their key instead.
  std::string value_at(const YAML::Node& value, const YAML::Node& key) const {
    return value.IsNull() ? at(key.Mark(), key.Mark()) : at(value.Mark(), key.Mark());
  }

  // An error of the value of `path` (which then keeps its default, and the
  // cross-key checks that involve it are skipped).
  void refuse(const std::string& path, std::string message) {
    errors_.push_back(std::move(message));
    mark_failed(path);
  }

  void read_map(const YAML::Node& map, const std::string& prefix) {
    std::map<std::string, std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      const std::string key_at = at(key_node.Mark(), map.Mark());
      if (!key_node.IsScalar()) {
        errors_.push_back(key_at + ": " + (prefix.empty() ? "(top level)" : prefix) +
                          ": expected a key name, got " + kind_of(key_node));
        continue;
      }
      const std::string& name = key_node.Scalar();
      const std::string path = prefix.empty() ? name : prefix + "." + name;
      if (auto [first, fresh] = seen.emplace(name, key_at); !fresh) {
        errors_.push_back(key_at + ": " + printable(path) + ": duplicate key (first set at " +
                          first->second + ")");
        continue;
      }
      if (const Key* key = find_key(path)) {
        // The same key in dotted and nested form ("dedup.k" and "dedup: {k}") is a duplicate too.
        if (auto [first, fresh] = keys_at_.emplace(path, key_at); !fresh) {
          errors_.push_back(key_at + ": " + path + ": duplicate key (first set at " +
                            first->second + ")");
          continue;
        }
        set_at_[path] = value_at(value, key_node);
        read_value(*key, key_node, value);
      } else if (is_section(path)) {
        if (value.IsNull()) continue;  // "dedup:" with nothing under it keeps the defaults
        if (!value.IsMap()) {
          refuse(path, value_at(value, key_node) + ": " + path + ": expected a mapping with keys " +
                           join(children(path)) + ", got " + kind_of(value));
          continue;
        }
        read_map(value, path);
      } else {
        auto valid = children(prefix);
        std::string message = key_at + ": " + printable(path) + ": unknown key";
        if (auto suggestion = nearest(name, valid)) {
          message += " (did you mean '" + *suggestion + "'?)";
        } else {
          message += " (valid keys" + (prefix.empty() ? std::string() : " under " + prefix) + ": " +
                     join(valid) + ")";
        }
        errors_.push_back(std::move(message));
      }
    }
  }

  void read_value(const Key& key, const YAML::Node& key_node, const YAML::Node& value) {
    const std::string where = value_at(value, key_node) + ": " + key.path;
    switch (key.shape) {
      case Shape::scalar: {
        if (value.IsNull() && key.nullable) {
          key.set(config_, std::nullopt);
        } else if (!value.IsScalar() || !key.set(config_, value.Scalar())) {
          std::string got = kind_of(value);
          if (value.IsScalar() && key.reason) {
            refuse(key.path, where + ": " + key.reason(value.Scalar()) + ", got " + got);
            return;
          }
          if (value.IsScalar() && key.hint) got += key.hint(value.Scalar());
          refuse(key.path, expected_message(where, key.expected, got));
        }
        return;
      }
      case Shape::list: {
        if (!value.IsSequence()) {
          refuse(key.path, expected_message(where, key.list_expected, kind_of(value)));
          return;
        }
        std::vector<std::string> items;
        std::size_t index = 0;
        bool refused = false;
        for (const auto& item : value) {
          if (!item.IsScalar() || !key.item_ok(item.Scalar())) {
            refuse(key.path, expected_message(at(item.Mark(), value.Mark()) + ": " + key.path +
                                                  "[" + std::to_string(index) + "]",
                                              key.expected, kind_of(item)));
            refused = true;
          } else {
            items.push_back(item.Scalar());
          }
          ++index;
        }
        if (!refused && !key.set_list(config_, items))
          refuse(key.path, expected_message(where, key.list_expected, "an empty list"));
        return;
      }
      case Shape::map: {
        if (value.IsNull()) {
          key.map(config_).clear();
          return;
        }
        if (!value.IsMap()) {
          refuse(key.path, expected_message(where, key.expected, kind_of(value)));
          return;
        }
        Map properties;
        for (auto it = value.begin(); it != value.end(); ++it) {
          const YAML::Node name_node = it->first;
          const YAML::Node property = it->second;
          const std::string name_at = at(name_node.Mark(), value.Mark());
          if (!name_node.IsScalar() || name_node.Scalar().empty()) {
            refuse(key.path, expected_message(name_at + ": " + key.path, "a property name",
                                              kind_of(name_node)));
            continue;
          }
          const std::string name = name_node.Scalar();
          if (!property.IsScalar()) {
            refuse(
                key.path,
                expected_message(
                    value_at(property, name_node) + ": " + key.path + "." + printable(name),
                    "a scalar property value (passed to librdkafka as text)", kind_of(property)));
            continue;
          }
          if (!properties.emplace(name, property.Scalar()).second) {
            refuse(key.path, name_at + ": " + key.path + "." + printable(name) + ": duplicate key");
            continue;
          }
          // As the Kafka client reads it: a misspelled name or a bad value
          // would otherwise pass here and stop `neardup run` later.
          if (check_property_) {
            if (std::string why = check_property_(name, property.Scalar()); !why.empty())
              refuse(key.path, name_at + ": " + key.path + ": " + printable(why, 1024));
          }
        }
        key.map(config_) = std::move(properties);
        return;
      }
    }
  }

  static std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
  }

  std::string origin_;
  Config& config_;
  const PropertyCheck& check_property_;
  std::vector<std::string> errors_;             // in the order of the file
  std::map<std::string, std::string> set_at_;   // path -> "file:L:C" of its value
  std::map<std::string, std::string> keys_at_;  // path -> "file:L:C" of its key (duplicates)
};

class EnvLocator final : public Locator {
 public:
  bool was_set(const std::string& path) const override { return set_.count(path) > 0; }
  std::string where(const std::string& path) const override {
    return set_.count(path) ? "environment " + env_name(path) : "configuration: " + path;
  }
  void mark(const std::string& path) { set_.insert(path); }

 private:
  std::set<std::string> set_;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto first = item.find_first_not_of(' ');
    auto last = item.find_last_not_of(' ');
    items.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

// Walks the YAML events without building nodes, to count documents before
// YAML::Load builds the first one. yaml-cpp 0.7's LoadAll never ends on some
// malformed inputs (it yields empty documents without consuming anything), so
// parsing stops at the second document start.
class DocumentCounter final : public YAML::EventHandler {
 public:
  struct SecondDocument {
    YAML::Mark first;
    YAML::Mark second;
  };

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) throw SecondDocument{first_, mark};
    first_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  int documents_ = 0;
  YAML::Mark first_;
};

std::string position(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

ConfigError::ConfigError(const std::string& message)
    : std::runtime_error(message), errors_{message} {}

ConfigError::ConfigError(std::vector<std::string> messages)
    : std::runtime_error([&] {
        std::string lines;
        for (const auto& message : messages) lines += (lines.empty() ? "" : "\n") + message;
        return lines;
      }()),
      errors_(std::move(messages)) {}

Config parse_config(const std::string& yaml_text, const std::string& origin,
                    const PropertyCheck& check_property) {
  Config config;
  YAML::Node root;
  try {
    std::istringstream stream(yaml_text);
    YAML::Parser parser(stream);
    DocumentCounter counter;
    while (parser.HandleNextDocument(counter)) {
    }
    root = YAML::Load(yaml_text);
  } catch (const DocumentCounter::SecondDocument& second) {
    if (second.second.pos <=
        second.first.pos) {  // the parser is stuck: yaml-cpp cannot read what is here
      auto pos = static_cast<std::size_t>(std::max(second.second.pos, 0));
      std::string got = pos < yaml_text.size() ? quoted(yaml_text.substr(pos, 1)) : "the end";
      throw ConfigError(position(origin, second.second) +
                        ": invalid YAML: expected a mapping of sections, got " + got);
    }
    throw ConfigError(position(origin, second.second) + ": expected one YAML document, got more");
  } catch (const YAML::Exception& e) {
    throw ConfigError(position(origin, e.mark) + ": invalid YAML: " + e.msg);
  }
  try {
    YamlReader reader(origin, config, check_property);
    reader.read_root(root);
  } catch (const YAML::Exception& e) {  // defensive: a node access that yaml-cpp refuses
    throw ConfigError(origin + ": invalid YAML: " + e.msg);
  }
  return config;
}

void derive_group_topics(KafkaOptions& kafka) {
  if (!kafka.changelog_topic_named) kafka.changelog_topic = kafka.group_id + "-window";
  if (!kafka.judge_topic_named) kafka.judge_topic = kafka.group_id + "-judge";
  if (!kafka.verdict_topic_named) kafka.verdict_topic = kafka.group_id + "-verdicts";
}

Config load_config(const std::string& path, const PropertyCheck& check_property) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ConfigError(path + ": cannot open: " + std::strerror(errno));
  std::string text;
  char buffer[65536];
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(file.gcount()));
    if (text.size() > kMaxConfigFileBytes) {
      throw ConfigError(path + ": expected a configuration file of at most 4 MiB, got more");
    }
  }
  if (file.bad()) throw ConfigError(path + ": cannot read: " + std::strerror(errno));
  return parse_config(text, path, check_property);
}

void apply_env_overrides(Config& config, const EnvLookup& lookup) {
  Config updated = config;  // all or nothing: a bad variable leaves `config` untouched
  EnvLocator locator;
  std::vector<std::string> errors;
  for (const auto& key : keys()) {
    if (key.shape == Shape::map) continue;
    const std::string name = env_name(key.path);
    auto value = lookup(name);
    if (!value) continue;
    locator.mark(key.path);
    const std::string where = "environment " + name;
    auto refuse = [&](std::string message) {
      errors.push_back(std::move(message));
      locator.mark_failed(key.path);
    };
    if (key.shape == Shape::scalar) {
      if (!key.set(updated, *value)) {
        refuse(key.reason ? where + ": " + key.reason(*value) + ", got " + quoted(*value)
                          : expected_message(where, key.expected,
                                             quoted(*value) + (key.hint ? key.hint(*value) : "")));
      }
      continue;
    }
    auto items = split_list(*value);
    bool refused = false;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!key.item_ok(items[i])) {
        refuse(expected_message(where + "[" + std::to_string(i) + "]", key.expected,
                                quoted(items[i])));
        refused = true;
      }
    }
    if (!refused && !key.set_list(updated, items)) {
      refuse(expected_message(where, key.list_expected + " (comma-separated)", quoted(*value)));
    }
  }
  derive_group_topics(updated.kafka);
  for (auto& error : check_cross(updated, locator)) errors.push_back(std::move(error));
  if (!errors.empty()) throw ConfigError(std::move(errors));
  config = std::move(updated);
}

std::vector<std::pair<std::string, std::string>> misspelled_env_variables(
    const std::vector<std::string>& names) {
  constexpr std::string_view kPrefix = "NEARDUP_";
  std::vector<std::string> suffixes;  // "ACTION", "KAFKA_BROKERS", ...
  for (const auto& key : keys())
    if (key.shape != Shape::map) suffixes.push_back(env_name(key.path).substr(kPrefix.size()));
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : names) {
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view suffix = std::string_view(name).substr(kPrefix.size());
    if (std::find(suffixes.begin(), suffixes.end(), suffix) != suffixes.end()) continue;
    // (compared without the prefix: every name shares it, which would let
    // anything pass for near)
    if (auto near = nearest(suffix, suffixes)) out.emplace_back(name, std::string(kPrefix) + *near);
  }
  return out;
}

void apply_env_overrides(Config& config) {
  apply_env_overrides(config, [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

bool is_secret_property(const std::string& name) {
  return name.find("password") != std::string::npos || name.find("secret") != std::string::npos ||
         name == "ssl.key.pem" || name == "sasl.oauthbearer.config" || name == "ssl_key";
}

std::string to_yaml(const Config& config, Secrets secrets) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string section;    // the open section ("" = top level)
  std::string following;  // comment lines: the keys that follow kafka.group_id
  for (const auto& key : keys()) {
    auto dot = key.path.find('.');
    std::string key_section = dot == std::string::npos ? "" : key.path.substr(0, dot);
    std::string name = dot == std::string::npos ? key.path : key.path.substr(dot + 1);
    if (key_section != section) {
      if (!section.empty()) out << YAML::EndMap;
      section = key_section;
      if (!section.empty()) out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    }
    if (key.follows && key.follows(config)) {
      following +=
          "  # " + name + ": " + key.show(config).value_or("") + " (follows kafka.group_id)\n";
      continue;
    }
    out << YAML::Key << name << YAML::Value;
    switch (key.shape) {
      case Shape::scalar: {
        auto value = key.show(config);
        if (value) {
          out << *value;
        } else {
          out << YAML::Null;
        }
        break;
      }
      case Shape::list:
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& item : key.show_list(config)) out << item;
        out << YAML::EndSeq;
        break;
      case Shape::map: {
        const Map& map = key.show_map(config);
        out << YAML::Block << YAML::BeginMap;
        for (const auto& [property, value] : map) {
          bool hide = secrets == Secrets::redact && is_secret_property(property);
          out << YAML::Key << property << YAML::Value << (hide ? std::string("<redacted>") : value);
        }
        out << YAML::EndMap;
        break;
      }
    }
  }
  if (!section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) throw ConfigError("configuration: cannot write YAML: " + out.GetLastError());
  std::string text = std::string(out.c_str()) + "\n";
  // Under the group id (kafka's keys are indented by 2): what follows it, as comments.
  if (const auto at = text.find("\n  group_id: "); !following.empty() && at != std::string::npos)
    text.insert(text.find('\n', at + 1) + 1, following);
  return text;
}

namespace {

// `key`'s value in `config` as to_yaml writes it, on one line (flow style).
std::string flow_value(const Key& key, const Config& config) {
  YAML::Emitter out;
  out << YAML::Flow;
  switch (key.shape) {
    case Shape::scalar:
      if (auto value = key.show(config)) {
        out << *value;
      } else {
        out << YAML::Null;
      }
      break;
    case Shape::list:
      out << YAML::BeginSeq;
      for (const auto& item : key.show_list(config)) out << item;
      out << YAML::EndSeq;
      break;
    case Shape::map:
      out << YAML::BeginMap;
      for (const auto& [property, value] : key.show_map(config))
        out << YAML::Key << property << YAML::Value << value;
      out << YAML::EndMap;
      break;
  }
  return out.c_str();
}

// A Markdown table cell: a '|' would end it.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::vector<KeyInfo> schema() {
  const Config defaults;
  std::vector<KeyInfo> out;
  for (const auto& key : keys()) {
    out.push_back({.path = key.path,
                   .env = key.shape == Shape::map ? "" : env_name(key.path),
                   .expected = key.shape == Shape::list ? key.list_expected : key.expected,
                   .default_value = flow_value(key, defaults),
                   .follows_group_id = key.follows && key.follows(defaults),
                   .doc = key.doc});
  }
  return out;
}

std::string schema_markdown() {
  std::string table =
      "| key | default | accepts | environment |\n"
      "|---|---|---|---|\n";
  for (const KeyInfo& key : schema()) {
    std::string value = "`" + key.default_value + "`";
    if (key.follows_group_id) value += " (follows kafka.group_id)";
    std::string env = key.env.empty() ? "—" : key.env;
    if (!key.env.empty() && find_key(key.path)->shape == Shape::list) env += " (comma-separated)";
    table += "| " + key.path + " | " + cell(value) + " | " + cell(key.doc) + " | " + env + " |\n";
  }
  return table;
}

std::size_t producer_message_max_bytes(const KafkaOptions& kafka) {
  return producer_message_max_bytes_impl(kafka);
}

}  // namespace neardup::config
