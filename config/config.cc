// The public functions of config.h over the schema (keys.cc): loading a file,
// environment overrides, the dump as YAML and the schema for users.
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "config/internal.h"
#include "config/values.h"

namespace neardup::config {

using namespace internal;

namespace {

constexpr std::size_t kMaxConfigFileBytes = 4U << 20;

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

}  // namespace

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

}  // namespace neardup::config
