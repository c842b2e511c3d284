// metrics/series.cc declares every series once: /metrics serves exactly the
// declared families, each with its declared type and help, and docs/METRICS.md's
// table is series_markdown() (`neardup metrics --markdown`).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/render.h"
#include "metrics/series.h"

namespace neardup::metrics {
namespace {

struct Family {
  std::string type, help;
};

/// The "# HELP" and "# TYPE" lines of an exposition, by family name.
std::map<std::string, Family> families(const std::string& text) {
  std::map<std::string, Family> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    for (const char* kind : {"# HELP ", "# TYPE "}) {
      if (line.rfind(kind, 0) != 0) continue;
      const std::size_t name_end = line.find(' ', 7);
      const std::string name = line.substr(7, name_end - 7);
      const std::string rest = name_end == std::string::npos ? "" : line.substr(name_end + 1);
      (kind[2] == 'H' ? out[name].help : out[name].type) = rest;
    }
  }
  return out;
}

ServiceStats every_label_present() {
  ServiceStats stats;
  stats.consumer_lag[{"input", 0}] = 3;
  stats.kafka_broker_up["127.0.0.1:9092"] = true;
  return stats;
}

TEST(MetricsSeries, MetricsServesExactlyTheDeclaredSeriesWithTheirTypeAndHelp) {
  for (const bool judge : {false, true}) {
    ServiceStats stats = every_label_present();
    stats.judged_by_group = judge;
    stats.summarizing = judge;  // (both off, then both on)
    const std::map<std::string, Family> served =
        families(render_text(stats, BuildInfo{"1.0", {{"k", "3"}}}, true));
    std::set<std::string> declared;
    for (const Series& s : all_series()) {
      if (s.served != Served::always && !judge) {
        EXPECT_EQ(served.count(std::string(s.name)), 0U) << s.name << " served without the judge";
        continue;
      }
      declared.insert(std::string(s.name));
      const auto it = served.find(std::string(s.name));
      ASSERT_NE(it, served.end()) << s.name << " is declared but not served (judge " << judge
                                  << ")";
      EXPECT_EQ(it->second.type, to_string(s.type)) << s.name;
      EXPECT_EQ(it->second.help, s.help) << s.name;
    }
    for (const auto& [name, family] : served)
      EXPECT_EQ(declared.count(name), 1U)
          << name << " is served but not declared in metrics/series.cc";
    EXPECT_EQ(served.size(), declared.size()) << "judge " << judge;
  }
}

TEST(MetricsSeries, EveryNameIsDeclaredOnceAndAnUndeclaredOneThrows) {
  std::set<std::string> names;
  for (const Series& s : all_series()) {
    EXPECT_TRUE(names.insert(std::string(s.name)).second) << s.name << " declared twice";
    EXPECT_EQ(s.name.rfind("neardup_", 0), 0U) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
  }
  EXPECT_THROW(series("neardup_no_such_series"), std::logic_error);
}

// The table under "## Series" in docs/METRICS.md: its lines that start with '|'.
std::vector<std::string> doc_table() {
  std::ifstream file(std::string(NEARDUP_SOURCE_DIR) + "/docs/METRICS.md");
  std::vector<std::string> rows;
  std::string line;
  bool in_section = false;
  while (std::getline(file, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (in_section) break;
      in_section = line == "## Series";
      continue;
    }
    if (in_section && line.rfind("|", 0) == 0) rows.push_back(line);
    if (in_section && !rows.empty() && line.rfind("|", 0) != 0) break;
  }
  return rows;
}

TEST(MetricsSeries, TheDocsTableIsTheGeneratedOne) {
  std::vector<std::string> want;
  std::istringstream lines(series_markdown());
  for (std::string line; std::getline(lines, line);) want.push_back(line);
  const std::vector<std::string> got = doc_table();
  ASSERT_FALSE(got.empty()) << "docs/METRICS.md has no table under '## Series'";
  const char* regenerate = "; regenerate it: neardup metrics --markdown";
  ASSERT_EQ(got.size(), want.size()) << "docs/METRICS.md's series table has " << got.size()
                                     << " rows, the declaration " << want.size() << regenerate;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "row " << i << regenerate;
}

}  // namespace
}  // namespace neardup::metrics
