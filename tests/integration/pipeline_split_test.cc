// The two steps of the pipeline (Analyzer::prepare, possibly on another thread,
// then Classifier::judge) decide exactly like Classifier::classify, which the
// service relied on before it split them. No broker needed.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "stream/pipeline.h"

namespace neardup::stream {
namespace {

std::vector<std::string> feed() {
  std::mt19937_64 rng(7);
  const std::vector<std::string> words = {"market", "energy", "prices", "fall", "rise", "council", "votes",
                                          "budget", "river", "flood", "storm", "city", "school", "news"};
  std::vector<std::string> out;
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int w = 0; w < 12; ++w) text += (w ? " " : "") + words[rng() % words.size()];
    out.push_back(text);
    if (i % 5 == 0) out.push_back(text + " again");  // near-duplicates
  }
  out.push_back("");        // invalid: empty
  out.push_back("!!! ...");  // invalid: no features
  out.push_back(std::string("\xff\xfe\xfd\xfc", 4));
  return out;
}

void expect_same_decisions(const config::Config& cfg, const std::vector<std::string>& raws) {
  Classifier whole(cfg), split(cfg);
  Analyzer analyzer(cfg);
  Prepared prepared;
  int duplicates = 0, invalid = 0;
  for (std::size_t i = 0; i < raws.size(); ++i) {
    const dedup::EventTime time{1'700'000'000'000 + static_cast<std::int64_t>(i)};
    const dedup::RecordRef ref{i + 1};
    const Judgement a = whole.classify(raws[i], time, ref);
    analyzer.prepare(raws[i], prepared);
    std::string_view error;
    const dedup::Verdict b = split.judge(prepared, time, ref, &error);
    ASSERT_EQ(a.verdict.kind, b.kind) << raws[i];
    EXPECT_EQ(a.verdict.fingerprint, b.fingerprint) << raws[i];
    EXPECT_EQ(a.verdict.similarity, b.similarity) << raws[i];
    ASSERT_EQ(a.verdict.match.has_value(), b.match.has_value()) << raws[i];
    if (a.verdict.match) {
      EXPECT_EQ(a.verdict.match->of, b.match->of) << raws[i];
    }
    EXPECT_EQ(a.error, error) << raws[i];
    if (prepared.ok) {
      EXPECT_EQ(a.decoded->text, prepared.text()) << raws[i];
    }
    duplicates += b.kind == dedup::VerdictKind::duplicate;
    invalid += b.kind == dedup::VerdictKind::invalid;
  }
  EXPECT_GT(duplicates, 0);
  EXPECT_GT(invalid, 0);
}

TEST(PipelineSplit, PrepareThenJudgeDecidesLikeClassifyForText) {
  expect_same_decisions(config::Config{}, feed());
}

TEST(PipelineSplit, PrepareThenJudgeDecidesLikeClassifyForJsonWithALearnedIdf) {
  config::Config cfg;
  cfg.input.format = config::InputFormat::json;
  cfg.dedup.text.idf_source = dedup::IdfSource::stream;
  std::vector<std::string> raws;
  for (const auto& text : feed()) raws.push_back("{\"id\":1,\"text\":\"" + text + "\"}");
  raws.push_back("not json");
  raws.push_back("{\"other\":1}");
  expect_same_decisions(cfg, raws);
}

}  // namespace
}  // namespace neardup::stream
