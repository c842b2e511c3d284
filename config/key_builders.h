// Builders of the key table's entries (keys.cc): one per kind of value, each
// fills a Key's validator, printer and "expected" text from one accessor.
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/internal.h"
#include "config/values.h"

namespace neardup::config::internal {

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

/// A Kafka topic name; with `optional`, "" (off) too.
Key topic_key(std::string path, std::string doc, bool optional, std::string KafkaOptions::*member);

/// A window duration from `least` ms to 365 days, with a unit: a bare number
/// ("24") is refused, since 24 seconds is rarely what "duration: 24" means.
Key duration_key(std::string path, std::string doc, const std::string& expected, std::int64_t least,
                 std::chrono::milliseconds dedup::WindowOptions::*member);

/// A topic of the group's own state: once named, it no longer follows group_id.
Key group_topic_key(std::string path, std::string doc, bool optional,
                    std::string KafkaOptions::*member, bool KafkaOptions::*named);

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

}  // namespace neardup::config::internal
