// Reading a YAML document into a Config: every key through the schema
// (keys.cc), every error with its file:line:column.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/internal.h"
#include "config/values.h"

namespace neardup::config {

namespace {

using namespace internal;

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

}  // namespace neardup::config
