#include "config/key_builders.h"

#include <algorithm>

namespace neardup::config::internal {

namespace {

constexpr std::int64_t kMaxWindowMs = 365LL * 24 * 3'600'000;  // a year

bool is_bare_number(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

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

}  // namespace neardup::config::internal
