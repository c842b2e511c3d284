// Writes the news-like benchmark feed (bench/feed.h: the texts of
// BM_ScanJsonl200Bytes and BM_ScanSketch feed:0) as JSON Lines, one
// {"id":N,"text":"..."} per record, for runs of the `neardup` binary itself
// (bench/scan_ratio.sh).
//   neardup_make_feed RECORDS > feed.jsonl

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/json.h"
#include "bench/feed.h"
#include "stream/records/json_out.h"

int main(int argc, char** argv) {
  char* end = nullptr;
  const unsigned long long records = argc == 2 ? std::strtoull(argv[1], &end, 10) : 0;
  if (argc != 2 || end == argv[1] || *end != '\0' || records == 0 || records > 100'000'000ULL) {
    std::fprintf(stderr,
                 "usage: neardup_make_feed RECORDS > feed.jsonl  (1 <= RECORDS <= 100000000)\n");
    return 2;
  }
  neardup::bench::FeedGenerator generator;
  const auto texts = generator.feed(static_cast<std::size_t>(records), 170);
  std::string line;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    line = "{\"id\":" + std::to_string(i) + ",\"text\":";
    neardup::base::append_json_string(line, texts[i]);
    line += "}\n";
    if (std::fputs(line.c_str(), stdout) == EOF) {
      std::perror("neardup_make_feed: stdout");
      return 1;
    }
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
