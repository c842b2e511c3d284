#include "dedup/engine/explain.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "dedup/engine/engine.h"

namespace neardup::dedup {
namespace {

// Texts and the edits of the quality streams' kinds (words and CJK characters
// swapped, inserted, dropped; tails appended), from a fixed seed.
std::vector<std::pair<std::string, std::string>> sample_pairs() {
  const std::vector<std::string> english = {
      "Just finished my first marathon in under four hours, legs are gone but so happy",
      "The committee will meet on Thursday to discuss the budget for next year",
      "A fool and his money are soon parted, but a wise man keeps the receipt",
      "Breaking: markets rally as the central bank signals lower rates ahead",
      "Never trust a computer you cannot throw out of a window",
      "New bike lanes open downtown this weekend",
  };
  const std::vector<std::u32string> chinese = {
      U"床前明月光，疑是地上霜。举头望明月，低头思故乡。",
      U"春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
      U"白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
      U"今天天气很好，我们一起去公园散步吧",
      U"千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。",
  };
  const std::u32string han = U"风花雪月山水云天人心春秋日夜江河";
  const std::vector<std::string> words = {"really", "the", "today", "news", "big", "rain"};
  auto utf8 = [](const std::u32string& s) {
    std::string out;
    for (const char32_t c : s) {
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
      } else {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    return out;
  };
  std::mt19937 rng(19);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int round = 0; round < 300; ++round) {
    const int edits = 1 + static_cast<int>(pick(4));
    if (round % 2 == 0) {
      const std::string& a = english[pick(english.size())];
      std::vector<std::string> w;
      for (std::size_t at = 0, next; at <= a.size(); at = next + 1) {
        next = a.find(' ', at);
        if (next == std::string::npos) next = a.size();
        w.push_back(a.substr(at, next - at));
      }
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = pick(w.size());
        switch (pick(3)) {
          case 0:
            w[at] = words[pick(words.size())];
            break;
          case 1:
            w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), words[pick(words.size())]);
            break;
          default:
            if (w.size() > 3) w.erase(w.begin() + static_cast<std::ptrdiff_t>(at));
        }
      }
      std::string b;
      for (const auto& x : w) b += (b.empty() ? "" : " ") + x;
      pairs.emplace_back(a, b);
    } else {
      const std::u32string& a = chinese[pick(chinese.size())];
      std::u32string b = a;
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = pick(b.size());
        switch (pick(3)) {
          case 0:
            b[at] = han[pick(han.size())];
            break;
          case 1:
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), han[pick(han.size())]);
            break;
          default:
            b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
        }
      }
      pairs.emplace_back(utf8(a), utf8(b));
    }
  }
  pairs.emplace_back("only words here", "!!! ???");  // the second has no features
  pairs.emplace_back("same text twice", "same text twice");
  // One template filled in twice (J 0.87), and a repost of it.
  pairs.emplace_back("Perth: the city council approves the new flood barrier for the harbour",
                     "Dakar: the city council approves the new flood barrier for the harbour");
  pairs.emplace_back("Alert: disk usage on db-12.prod.example.net is high, check the cleanup job",
                     "Alert: disk usage on db-13.prod.example.net is high, check the cleanup job");
  pairs.emplace_back("Perth: the city council approves the new flood barrier for the harbour",
                     "via @CityWire: Perth: the city council approves the new flood barrier for "
                     "the harbour #news");
  return pairs;
}

DedupOptions small_window(DedupOptions o) {
  o.window.max_entries = 1024;
  return o;
}

// The explanation is what the window would decide: for every pair of the
// sample, a fresh engine holding only A judges B, and the verdict, the path
// (a band-only match is counted as a sketch match) and the similarity agree.
TEST(ExplainPair, AgreesWithTheEngineOnEveryPairOfASample) {
  DedupOptions classic;
  classic.sketch.enabled = false;
  DedupOptions no_recent;  // the sketch paths alone
  no_recent.sketch.recent = 0;
  DedupOptions strict;  // templated texts: numbers and names must match
  strict.text.must_match = MustMatch::numbers_and_names;
  strict.text.strip_boilerplate = true;
  for (const DedupOptions& options : {small_window(DedupOptions{}), small_window(no_recent),
                                      small_window(strict), small_window(classic)}) {
    std::map<PairDecision, int> seen;
    for (const auto& [a, b] : sample_pairs()) {
      Engine engine(options);
      const Analysis first = engine.analyze(a);
      const Analysis second = engine.analyze(b);
      engine.decide(first, EventTime{0}, RecordRef{1});
      const Verdict verdict = engine.decide(second, EventTime{0}, RecordRef{2});
      const PairExplanation why =
          explain_pair(options, first.summary, second.summary, !invalid_reason(first).empty(),
                       !invalid_reason(second).empty());
      ++seen[why.decision];
      SCOPED_TRACE(a + " | " + b + " | " + describe(why, options));
      if (why.decision == PairDecision::invalid) {
        EXPECT_EQ(verdict.kind, VerdictKind::invalid);
        continue;
      }
      ASSERT_EQ(verdict.kind == VerdictKind::duplicate, why.duplicate());
      EXPECT_EQ(engine.stats().sketch_matches,
                why.decision == PairDecision::band_verified ? 1u : 0u);
      if (why.duplicate() && why.similarity) {
        ASSERT_TRUE(verdict.similarity);
        EXPECT_DOUBLE_EQ(*verdict.similarity, why.exact ? *why.exact : *why.similarity);
      }
    }
    if (options.sketch.enabled) {
      // the sample reaches every path, including a similar pair that is never compared
      EXPECT_GT(seen[PairDecision::simhash_verified], 0);
      EXPECT_GT(seen[PairDecision::band_verified], 0);
      if (options.sketch.recent > 0) {
        EXPECT_GT(seen[PairDecision::exact_verified], 0);
      }
      if (options.text.must_match != MustMatch::none && options.sketch.recent > 0) {
        EXPECT_GT(seen[PairDecision::must_match_differs], 0);
      }
      EXPECT_GT(seen[PairDecision::below_threshold], 0);
      EXPECT_GT(seen[PairDecision::not_a_candidate], 0);
      EXPECT_GT(seen[PairDecision::invalid], 0);
    } else {
      EXPECT_GT(seen[PairDecision::simhash], 0);
      EXPECT_GT(seen[PairDecision::not_a_candidate], 0);
    }
  }
}

TEST(ExplainPair, SaysWhyASimilarPairOnNoPathIsDifferent) {
  PairExplanation e;
  e.decision = PairDecision::not_a_candidate;
  e.distance = 9;
  e.sketches = true;
  e.similarity = 0.792;
  EXPECT_EQ(describe(e, DedupOptions{}),
            "never compared: distance 9 > k=3 bits and no shared LSH band (of 3), so the window "
            "does not find it (the sketch would estimate 0.792)");
  e.decision = PairDecision::band_verified;
  e.shared_bands = 0b101;
  EXPECT_EQ(describe(e, DedupOptions{}),
            "shares LSH bands 1, 3 of 3 (distance 9 > k=3) and the sketch estimates 0.792 >= 0.70");
}

TEST(ExplainPair, SaysWhichMustMatchTokenKeptTwoStoriesApart) {
  const DedupOptions options;  // must_match numbers_and_names
  Fingerprinter fp(options.text, options.sketch);
  const auto why = [&](std::string_view a, std::string_view b) {
    const PairExplanation e = explain_pair(options, fp.analyze(a), fp.analyze(b));
    return std::make_pair(e.decision, describe(e, options));
  };
  const auto places = why("Perth: the police department reviews a flood barrier near the harbour",
                          "Dakar: the police department reviews a flood barrier near the harbour");
  EXPECT_EQ(places.first, PairDecision::must_match_differs);
  EXPECT_EQ(places.second,
            "exact Jaccard 0.879 >= 0.80, but each has a must-match token the other lacks "
            "(dedup.must_match numbers_and_names): a name more than a typo from each of the "
            "other's");
  const auto numbers =
      why("Weather warning for Zagreb: wind gusts up to 130 km/h expected on Sunday",
          "Weather warning for Zagreb: wind gusts up to 17 km/h expected on Sunday");
  EXPECT_EQ(numbers.first, PairDecision::must_match_differs);
  EXPECT_EQ(numbers.second,
            "exact Jaccard 0.847 >= 0.80, but each has a must-match token the other lacks "
            "(dedup.must_match numbers_and_names): a number, two numbers in another order, or a "
            "listed word");
  PairExplanation typo;
  typo.decision = why("Perth: the police department reviews a flood barrier",
                      "Pertth: the police department reviews a flood barrier")
                      .first;
  EXPECT_TRUE(typo.duplicate()) << "a typo in a name";
}

}  // namespace
}  // namespace neardup::dedup
