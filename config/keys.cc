// The schema: one table (`keys()`) lists every key with its doc, its
// validator and its printer; parsing, environment overrides, `to_yaml` and the
// "did you mean" suggestions are all driven by it, so a new option is one entry.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "base/listen_address.h"
#include "config/internal.h"
#include "config/key_builders.h"
#include "config/values.h"
#include "dedup/index/memory.h"
#include "dedup/index/window.h"

namespace neardup::config::internal {

namespace {

constexpr std::uint64_t kMaxInputBytes = 64ULL << 20;
constexpr auto kMaxWindowEntries = static_cast<std::int64_t>(dedup::kMaxWindowEntries);

}  // namespace

std::string env_name(const std::string& path) {
  std::string name = "NEARDUP_";
  for (char c : path)
    name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
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
        "left out of the fingerprint; false: recent short texts are still compared without "
        "their repost markers (RT @x:, //@x:), and without URLs, hashtags and mentions (or by "
        "one typo) when the whole texts share at least 0.6 (docs/ACCURACY.md, \"The design\", "
        "point 6)",
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
          "window's structures hold at most (the pigeonhole index, the sketch index, the "
          "recent-text cache and the repost cache, as `neardup_window_bytes` reports them); the "
          "window holds the "
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

}  // namespace neardup::config::internal
