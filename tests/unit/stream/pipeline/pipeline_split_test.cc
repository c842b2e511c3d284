// The two steps of the pipeline (Analyzer::prepare, possibly on another thread
// or a record ahead with Classifier::prefetch, then Classifier::decide) decide
// exactly like a Decoder and a dedup::Engine doing everything in one step. No
// broker needed.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dedup/engine/engine.h"
#include "stream/pipeline/decode.h"
#include "stream/pipeline/pipeline.h"

namespace neardup::stream {
namespace {

std::vector<std::string> feed() {
  std::mt19937_64 rng(7);
  const std::vector<std::string> words = {"market",  "energy", "prices", "fall",  "rise",
                                          "council", "votes",  "budget", "river", "flood",
                                          "storm",   "city",   "school", "news"};
  std::vector<std::string> out;
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int w = 0; w < 12; ++w) text += (w ? " " : "") + words[rng() % words.size()];
    out.push_back(text);
    if (i % 5 == 0) out.push_back(text + " again");  // near-duplicates
  }
  out.push_back("");         // invalid: empty
  out.push_back("!!! ...");  // invalid: no features
  out.push_back(std::string("\xff\xfe\xfd\xfc", 4));
  return out;
}

// The scan's pattern: record i + 1 is prepared and prefetched before record i
// is judged.
void expect_same_decisions(const config::Config& cfg, const std::vector<std::string>& raws) {
  Decoder decoder(cfg.input);
  dedup::Engine engine(cfg.dedup);
  Classifier split(cfg);
  Analyzer analyzer(cfg);
  std::vector<Prepared> prepared(2);
  analyzer.prepare(raws[0], prepared[0]);
  int duplicates = 0, invalid = 0;
  for (std::size_t i = 0; i < raws.size(); ++i) {
    if (i + 1 < raws.size()) {
      analyzer.prepare(raws[i + 1], prepared[(i + 1) % 2]);
      split.prefetch(prepared[(i + 1) % 2]);
    }
    const Prepared& p = prepared[i % 2];
    const dedup::EventTime time{1'700'000'000'000 + static_cast<std::int64_t>(i)};
    const dedup::RecordRef ref{i + 1};
    const Decoded d = decoder.decode(raws[i]);
    dedup::Verdict a;
    std::string_view a_error;
    if (d.ok) {
      a = engine.process(d.text, time, ref);
      a_error = a.error;
    } else {
      a.kind = dedup::VerdictKind::invalid;
      a_error = d.error;
    }
    std::string_view error;
    const dedup::Verdict b = split.decide(p, time, ref, &error);
    ASSERT_EQ(a.kind, b.kind) << raws[i];
    EXPECT_EQ(a.fingerprint, b.fingerprint) << raws[i];
    EXPECT_EQ(a.similarity, b.similarity) << raws[i];
    ASSERT_EQ(a.match.has_value(), b.match.has_value()) << raws[i];
    if (a.match) {
      EXPECT_EQ(a.match->of, b.match->of) << raws[i];
    }
    EXPECT_EQ(a_error, error) << raws[i];
    EXPECT_EQ(d.id, p.id) << raws[i];
    duplicates += b.kind == dedup::VerdictKind::duplicate;
    invalid += b.kind == dedup::VerdictKind::invalid;
  }
  EXPECT_GT(duplicates, 0);
  EXPECT_GT(invalid, 0);
}

TEST(PipelineSplit, PrepareAheadThenJudgeDecidesLikeTheEngineForText) {
  expect_same_decisions(config::Config{}, feed());
}

TEST(PipelineSplit, PrepareAheadThenJudgeDecidesLikeTheEngineForJsonWithALearnedIdf) {
  config::Config cfg;
  cfg.input.format = config::InputFormat::json;
  cfg.dedup.text.idf_source = dedup::IdfSource::stream;
  std::vector<std::string> raws;
  for (const auto& text : feed())
    raws.push_back("{\"id\":" + std::to_string(raws.size()) + ",\"text\":\"" + text + "\"}");
  raws.push_back("not json");
  raws.push_back("{\"other\":1}");
  expect_same_decisions(cfg, raws);
}

}  // namespace
}  // namespace neardup::stream
