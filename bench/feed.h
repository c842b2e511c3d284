#pragma once
// Deterministic news-like feeds for the benchmarks. Words come from a Zipf
// (s = 1) distribution over a vocabulary of pronounceable pseudo-words, as word
// frequencies do in real text: a handful of very common words, a long tail of
// rare ones. (A vocabulary of a few dozen words would make every text share most
// of its character shingles, which no real feed does, and would turn the
// sketch stage's candidate search into its worst case.)
// About `duplicate_share` of the records are reposts of a recent record with a
// small edit: a word inserted, case or punctuation changed.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace neardup::bench {

/// SplitMix64 (Steele, Lea, Flood 2014): a fast, well-mixed deterministic stream,
/// e.g. random fingerprints for the window benchmarks.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class FeedGenerator {
 public:
  explicit FeedGenerator(std::uint64_t seed = 42, std::size_t vocabulary = 20000) : rng_(seed) {
    static const char* kOnsets[] = {"b", "c",  "d",  "f",  "g",  "h",  "j",  "k",
                                    "l", "m",  "n",  "p",  "r",  "s",  "t",  "v",
                                    "w", "st", "tr", "pl", "gr", "ch", "sh", "th"};
    static const char* kVowels[] = {"a", "e", "i", "o", "u", "ai", "ea", "ou", "io"};
    static const char* kCodas[] = {"", "", "n", "r", "s", "t", "l", "nd", "rk", "st", "ng"};
    words_.reserve(vocabulary);
    while (words_.size() < vocabulary) {
      std::string word;
      const int syllables = 1 + static_cast<int>(rng_() % 3);
      for (int s = 0; s < syllables; ++s) {
        word += kOnsets[rng_() % std::size(kOnsets)];
        word += kVowels[rng_() % std::size(kVowels)];
        word += kCodas[rng_() % std::size(kCodas)];
      }
      words_.push_back(std::move(word));
    }
    // Cumulative Zipf weights 1/rank.
    cumulative_.resize(vocabulary);
    double sum = 0;
    for (std::size_t r = 0; r < vocabulary; ++r)
      cumulative_[r] = sum += 1.0 / static_cast<double>(r + 1);
  }

  /// A fresh text of about `bytes` characters.
  std::string text(std::size_t bytes) {
    std::string out;
    while (out.size() < bytes) {
      if (!out.empty()) out += ' ';
      out += word();
    }
    return out;
  }

  /// `count` texts of about `bytes` characters; about `duplicate_share` of them
  /// are edited reposts of one of the 50 previous originals.
  std::vector<std::string> feed(std::size_t count, std::size_t bytes,
                                double duplicate_share = 0.2) {
    std::vector<std::string> out;
    std::vector<std::size_t> originals;
    out.reserve(count);
    std::uniform_real_distribution<double> coin(0, 1);
    for (std::size_t i = 0; i < count; ++i) {
      if (!originals.empty() && coin(rng_) < duplicate_share) {
        const std::size_t back = std::min<std::size_t>(originals.size(), 50);
        std::string copy = out[originals[originals.size() - 1 - rng_() % back]];
        switch (rng_() % 3) {
          case 0:
            copy.insert(copy.find(' ', copy.size() / 2) + 1, word() + " ");
            break;
          case 1:
            for (std::size_t c = 0; c < copy.size(); c += 5)
              copy[c] = static_cast<char>(std::toupper(copy[c]));
            break;
          default:
            copy += "!";
            break;
        }
        out.push_back(std::move(copy));
      } else {
        originals.push_back(out.size());
        out.push_back(text(bytes));
      }
    }
    return out;
  }

 private:
  const std::string& word() {
    const double u = std::uniform_real_distribution<double>(0, cumulative_.back())(rng_);
    const auto it = std::lower_bound(cumulative_.begin(), cumulative_.end(), u);
    return words_[static_cast<std::size_t>(it - cumulative_.begin())];
  }

  std::mt19937_64 rng_;
  std::vector<std::string> words_;
  std::vector<double> cumulative_;
};

}  // namespace neardup::bench
