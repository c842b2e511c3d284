// `neardup metrics`: the Prometheus series /metrics serves (metrics/series.h);
// --markdown prints docs/METRICS.md's table of them.
#include <iostream>
#include <span>
#include <string>

#include "app/cli.h"
#include "metrics/series.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup metrics [--markdown]\n"
    "\n"
    "Lists every Prometheus series `neardup run` serves at /metrics: its type,\n"
    "labels, unit and help. The judge's series appear only with the group judge\n"
    "(kafka.judge_topic set), the stories' with story summaries (kafka.summary_topic\n"
    "set). With --markdown, prints the same as the table of\n"
    "docs/METRICS.md (\"Series\"), which is generated from it.\n"
    "\n"
    "options:\n"
    "  --markdown   one table row per series: series | type | labels | unit | help\n"
    "\n"
    "example:\n"
    "  neardup metrics\n"
    "  neardup metrics --markdown\n";

int run_metrics(std::span<const std::string> raw) {
  cli::Args args(raw, {}, {"markdown"});
  args.expect_no_positionals();
  if (args.has("markdown")) {
    std::cout << metrics::series_markdown();
    return 0;
  }
  for (const metrics::Series& s : metrics::all_series()) {
    std::cout << s.name;
    if (!s.labels.empty()) std::cout << "{" << s.labels << "}";
    std::cout << "  " << metrics::to_string(s.type);
    if (!s.unit.empty()) std::cout << " (" << s.unit << ")";
    if (s.served == metrics::Served::group_judge) std::cout << "  [group judge]";
    if (s.served == metrics::Served::summaries) std::cout << "  [story summaries]";
    std::cout << "\n    " << s.help << "\n";
  }
  return 0;
}

const cli::Registrar kMetrics{{"metrics",
                               "list the Prometheus series /metrics serves (type, labels, help)",
                               kHelp, run_metrics}};

}  // namespace
}  // namespace neardup::app
