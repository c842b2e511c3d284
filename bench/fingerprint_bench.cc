// Fingerprinting throughput: English ~1 KB documents and Chinese ~60-character
// texts, for each weighting. Texts come from the fortune files when the
// fortunes / fortunes-zh packages are installed, otherwise from a deterministic
// generator, so the benchmark always runs.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dedup/fingerprint/fingerprinter.h"

namespace {

using neardup::dedup::Fingerprinter;
using neardup::dedup::IdfSource;
using neardup::dedup::TextOptions;
using neardup::dedup::Weighting;

constexpr const char* kFortuneDir = "/usr/share/games/fortunes/";
constexpr std::size_t kDocuments = 512;

// Fortunes of one file (separated by lines "%"), ANSI colour escapes removed.
std::vector<std::string> read_fortunes(const std::string& name) {
  std::ifstream in(kFortuneDir + name);
  std::vector<std::string> out;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line == "%") {
      if (!current.empty()) out.push_back(current);
      current.clear();
      continue;
    }
    std::string clean;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\x1b') {
        while (i < line.size() && line[i] != 'm') ++i;
        continue;
      }
      clean += line[i];
    }
    current += clean;
    current += '\n';
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

std::uint64_t next_random(std::uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return state >> 33;
}

std::vector<std::string> english_documents() {
  std::vector<std::string> fortunes;
  for (const char* file :
       {"fortunes.u8", "literature.u8", "science.u8", "wisdom.u8", "people.u8", "computers.u8"}) {
    auto some = read_fortunes(file);
    fortunes.insert(fortunes.end(), some.begin(), some.end());
  }
  std::vector<std::string> docs;
  std::uint64_t state = 42;
  if (fortunes.size() >= 50) {
    for (std::size_t d = 0; d < kDocuments; ++d) {
      std::string doc;
      while (doc.size() < 1000) doc += fortunes[next_random(state) % fortunes.size()];
      docs.push_back(doc.substr(0, 1024));
    }
    return docs;
  }
  static const char* const kWords[] = {
      "the",     "of",       "and",        "to",      "in",       "a",       "is",      "that",
      "for",     "it",       "as",         "was",     "with",     "be",      "by",      "on",
      "not",     "he",       "this",       "are",     "or",       "his",     "from",    "at",
      "which",   "but",      "have",       "an",      "had",      "they",    "you",     "were",
      "their",   "one",      "all",        "we",      "can",      "her",     "has",     "there",
      "been",    "if",       "more",       "when",    "will",     "would",   "who",     "so",
      "no",      "market",   "government", "company", "report",   "Tuesday", "million", "police",
      "weather", "election", "percent",    "city",    "students", "players"};
  for (std::size_t d = 0; d < kDocuments; ++d) {
    std::string doc;
    while (doc.size() < 1024) {
      doc += kWords[next_random(state) % std::size(kWords)];
      doc += next_random(state) % 12 == 0 ? ". " : " ";
    }
    docs.push_back(doc);
  }
  return docs;
}

std::vector<std::string> chinese_texts() {
  std::u32string all;
  for (const char* file : {"chinese.u8", "tang300.u8", "song100.u8"}) {
    for (const std::string& fortune : read_fortunes(file)) {
      // Decode (the files are valid UTF-8) keeping only non-ASCII code points
      // and the CJK punctuation, so each text is ~60 Chinese characters.
      for (std::size_t i = 0; i < fortune.size();) {
        const auto b = static_cast<unsigned char>(fortune[i]);
        const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        char32_t cp = len == 1 ? b : b & (0x3F >> (len - 1));
        for (int k = 1; k < len && i + k < fortune.size(); ++k)
          cp = cp << 6 | (fortune[i + k] & 0x3F);
        if (cp >= 0x2E80) all += cp;
        i += len;
      }
    }
  }
  std::uint64_t state = 7;
  if (all.size() < 1000) {  // fortunes-zh absent: common Han characters with some punctuation
    for (int i = 0; i < 100000; ++i)
      all += next_random(state) % 15 == 0 ? U'，' : char32_t(0x4E00 + next_random(state) % 3000);
  }
  auto encode = [](char32_t cp, std::string& out) {
    if (cp < 0x800) {
      out += char(0xC0 | cp >> 6);
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | cp >> 12);
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | cp >> 18);
      out += char(0x80 | (cp >> 12 & 0x3F));
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  };
  std::vector<std::string> texts;
  for (std::size_t d = 0; d < kDocuments; ++d) {
    const std::size_t from = next_random(state) % (all.size() - 60);
    std::string text;
    for (std::size_t i = from; i < from + 60; ++i) encode(all[i], text);
    texts.push_back(text);
  }
  return texts;
}

void run(benchmark::State& state, const std::vector<std::string>& docs, Weighting weighting) {
  TextOptions options;
  options.weighting = weighting;
  options.idf_source = IdfSource::stream;
  Fingerprinter fingerprinter(options);
  std::size_t bytes = 0, i = 0;
  for (auto _ : state) {
    const std::string& doc = docs[i++ % docs.size()];
    benchmark::DoNotOptimize(fingerprinter.analyze(doc));
    bytes += doc.size();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}

void BM_FingerprintEnglish(benchmark::State& state, Weighting weighting) {
  static const std::vector<std::string> docs = english_documents();
  run(state, docs, weighting);
}

void BM_FingerprintChinese(benchmark::State& state, Weighting weighting) {
  static const std::vector<std::string> texts = chinese_texts();
  run(state, texts, weighting);
}

}  // namespace

BENCHMARK_CAPTURE(BM_FingerprintEnglish, unit, Weighting::unit);
BENCHMARK_CAPTURE(BM_FingerprintEnglish, tf, Weighting::tf);
BENCHMARK_CAPTURE(BM_FingerprintEnglish, tf_idf_stream, Weighting::tf_idf);
BENCHMARK_CAPTURE(BM_FingerprintChinese, unit, Weighting::unit);
BENCHMARK_CAPTURE(BM_FingerprintChinese, tf, Weighting::tf);
BENCHMARK_CAPTURE(BM_FingerprintChinese, tf_idf_stream, Weighting::tf_idf);
