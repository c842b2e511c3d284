// config/: the key table as users see it. Every key has a doc and a default
// that is the struct's, and config/README.md's key table is the schema's
// (schema_markdown(), printed by `neardup config keys --markdown`).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"

namespace neardup::config {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The cells of a Markdown table row ("| a | b \| c |" -> {"a", "b \| c"}).
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {  // (after the leading '|')
    if (row[i] == '|' && row[i - 1] != '\\') {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

// The table under "## Keys" in config/README.md: its lines that start with '|'.
std::vector<std::string> readme_table() {
  std::ifstream file(std::string(NEARDUP_SOURCE_DIR) + "/config/README.md");
  std::stringstream text;
  text << file.rdbuf();
  std::vector<std::string> table;
  bool in_keys = false;
  for (const std::string& line : lines_of(text.str())) {
    if (line == "## Keys") {
      in_keys = true;
    } else if (in_keys && line.starts_with("|")) {
      table.push_back(line);
    } else if (in_keys && !table.empty()) {
      break;  // the first line after the table
    }
  }
  return table;
}

TEST(ConfigSchema, EveryKeyHasADocOfOneLine) {
  for (const KeyInfo& key : schema()) {
    EXPECT_FALSE(key.doc.empty()) << key.path;
    EXPECT_EQ(key.doc.find('\n'), std::string::npos) << key.path;
    EXPECT_FALSE(key.expected.empty()) << key.path;
  }
}

TEST(ConfigSchema, EveryDefaultReadsBackAsTheDefault) {
  const std::string defaults = to_yaml(Config{});
  for (const KeyInfo& key : schema()) {
    const std::string name = key.path.substr(key.path.rfind('.') + 1);
    if (key.follows_group_id) {
      // Shown as a comment by to_yaml, and not written: it would no longer follow.
      EXPECT_NE(defaults.find("# " + name + ": " + key.default_value + " (follows kafka.group_id)"),
                std::string::npos)
          << key.path << " = " << key.default_value << " in\n"
          << defaults;
      continue;
    }
    // "dedup.sketch.bits" -> "dedup:\n  sketch:\n    bits: 2\n"
    std::string yaml, indent;
    for (std::string rest = key.path;; indent += "  ") {
      const auto next = rest.find('.');
      yaml += indent + rest.substr(0, next) + ":";
      if (next == std::string::npos) break;
      yaml += "\n";
      rest.erase(0, next + 1);
    }
    yaml += " " + key.default_value + "\n";
    Config read;
    ASSERT_NO_THROW(read = parse_config(yaml, "default.yaml")) << key.path << ": " << yaml;
    EXPECT_EQ(to_yaml(read), defaults) << key.path << ": " << yaml;
  }
}

TEST(ConfigSchema, DefaultsAreAsWritten) {
  // A few by hand, so that the derivation itself is checked.
  std::map<std::string, std::string> got;
  for (const KeyInfo& key : schema()) got[key.path] = key.default_value;
  EXPECT_EQ(got.at("kafka.brokers"), "~");
  EXPECT_EQ(got.at("kafka.input_topics"), "[input]");
  EXPECT_EQ(got.at("kafka.transactional_id"), "\"\"");
  EXPECT_EQ(got.at("kafka.instance_id"), "\"\"");
  EXPECT_EQ(got.at("kafka.consumer"), "{}");
  EXPECT_EQ(got.at("dedup.max_distance"), "3");
  EXPECT_EQ(got.at("dedup.sketch.threshold"), "0.7");
  EXPECT_EQ(got.at("window.duration"), "24h");
  EXPECT_EQ(got.at("kafka.changelog_topic"), "neardup-window");
}

TEST(ConfigSchema, MarkdownHasOneRowOfFourCellsPerKey) {
  const std::vector<std::string> rows = lines_of(schema_markdown());
  const std::vector<KeyInfo> keys = schema();
  ASSERT_EQ(rows.size(), keys.size() + 2);  // the header and its rule
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::vector<std::string> row = cells(rows[i + 2]);
    ASSERT_EQ(row.size(), 4U) << rows[i + 2];
    EXPECT_EQ(row[0], keys[i].path);
    EXPECT_EQ(row[3].find(keys[i].env), 0U) << rows[i + 2];
  }
}

TEST(ConfigSchema, ReadmeKeyTableIsTheSchemas) {
  const std::vector<std::string> readme = readme_table();
  const std::vector<std::string> schema_rows = lines_of(schema_markdown());
  ASSERT_GE(readme.size(), 2U) << "config/README.md has no table under '## Keys'";
  const char* regenerate = "; regenerate it: neardup config keys --markdown";
  EXPECT_EQ(readme[0], schema_rows[0]) << "the header" << regenerate;
  EXPECT_EQ(readme[1], schema_rows[1]) << "the header" << regenerate;

  static const char* kColumns[] = {"key", "default", "accepts", "environment"};
  std::map<std::string, std::vector<std::string>> in_readme;  // key -> cells
  std::vector<std::string> readme_order;
  for (std::size_t i = 2; i < readme.size(); ++i) {
    std::vector<std::string> row = cells(readme[i]);
    if (row.empty()) continue;
    readme_order.push_back(row[0]);
    in_readme[row[0]] = std::move(row);
  }
  std::vector<std::string> schema_order;
  for (std::size_t i = 2; i < schema_rows.size(); ++i) {
    const std::vector<std::string> want = cells(schema_rows[i]);
    const std::string& key = want[0];
    schema_order.push_back(key);
    auto it = in_readme.find(key);
    if (it == in_readme.end()) {
      ADD_FAILURE() << key << ": no row in config/README.md" << regenerate << "\n  "
                    << schema_rows[i];
      continue;
    }
    for (std::size_t c = 1; c < want.size(); ++c) {
      const std::string got = c < it->second.size() ? it->second[c] : "(missing)";
      EXPECT_EQ(got, want[c]) << key << ": config/README.md's '" << kColumns[c]
                              << "' differs from the schema (config/keys.cc)" << regenerate;
    }
    in_readme.erase(it);
  }
  for (const auto& [key, row] : in_readme)
    ADD_FAILURE() << key << ": a row in config/README.md, but no such key in the schema";
  if (readme_order.size() == schema_order.size()) {  // (else already reported by key)
    EXPECT_EQ(readme_order, schema_order) << "rows out of schema order";
  }
}

}  // namespace
}  // namespace neardup::config
