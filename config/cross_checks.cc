// The checks that involve more than one key.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/internal.h"
#include "config/values.h"
#include "dedup/index/memory.h"
#include "dedup/index/window.h"

namespace neardup::config {

std::size_t producer_message_max_bytes(const KafkaOptions& kafka) {
  auto it = kafka.producer.find("message.max.bytes");
  if (it == kafka.producer.end()) return kDefaultProducerMessageMaxBytes;
  std::size_t value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0 ? value : kDefaultProducerMessageMaxBytes;
}

namespace internal {

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

}  // namespace internal

}  // namespace neardup::config
