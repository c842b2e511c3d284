// Internal to config/: what its files share (the key table's entry, where a
// key was set, the text of errors). Not part of the public config/config.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace neardup::config::internal {

// ---- the schema table (keys.cc, key_builders.h) -----------------------------

enum class Shape { scalar, list, map };

using Map = std::map<std::string, std::string>;

/// One entry of the schema table: a key's path, its doc for users and how a
/// value is read, checked and shown.
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

/// The schema, in the order of `config check` output (keys.cc).
const std::vector<Key>& keys();
/// The key at `path`, or nullptr.
const Key* find_key(const std::string& path);
/// The names allowed directly under `prefix` ("" = the top level), in schema order.
std::vector<std::string> children(const std::string& prefix);
/// Whether `path` is a section (some key's path starts with "path.").
bool is_section(const std::string& path);
/// The environment variable of `path`: "kafka.brokers" -> "NEARDUP_KAFKA_BROKERS".
std::string env_name(const std::string& path);

// ---- errors (errors.cc) ------------------------------------------------------

/// A key or value as an error message shows it: control characters escaped,
/// long ones cut after `max` bytes.
std::string printable(std::string_view value, std::size_t max = 80);
/// A value quoted for an error message (printable(), in quotes).
std::string quoted(std::string_view value);
/// "where: expected X, got Y"
std::string expected_message(const std::string& where, const std::string& expected,
                             const std::string& got);
/// Throws ConfigError(expected_message(...)).
[[noreturn]] void fail_expected(const std::string& where, const std::string& expected,
                                const std::string& got);

// ---- cross checks (cross_checks.cc) -------------------------------------------

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

/// Checks that involve more than one key; returns their errors. Blames a key
/// the user set, if any. A check whose keys already failed on their own is
/// skipped (its verdict would be on a default, not on what was written).
std::vector<std::string> check_cross(const Config& config, const Locator& locator);

}  // namespace neardup::config::internal
