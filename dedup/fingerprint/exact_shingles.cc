// ExactShingles (dedup/fingerprint/sketch.h) and what compares two of them:
// exact Jaccard similarity and must-match tokens.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

void ExactShingles::assign(std::span<const std::uint32_t> hashes,
                           const std::array<std::uint64_t, kRecentBands>& band_keys) {
  data_.assign(kHashes + hashes.size(), 0);
  data_[0] = static_cast<std::uint32_t>(hashes.size());
  for (std::size_t b = 0; b < band_keys.size(); ++b) {
    data_[kBandKeys + 2 * b] = static_cast<std::uint32_t>(band_keys[b] >> 32);
    data_[kBandKeys + 2 * b + 1] = static_cast<std::uint32_t>(band_keys[b]);
  }
  std::copy(hashes.begin(), hashes.end(), data_.begin() + kHashes);
  std::uint32_t marked = 0;
  for (const std::uint32_t h : hashes) marked += h & kBoilerplateShingle;
  data_[1] = marked << 16;
}

void ExactShingles::set_keys(std::span<const std::uint32_t> keys) {
  if (empty()) return;
  const std::size_t n = std::min(keys.size(), kMaxMustMatch);
  data_[1] = (data_[1] & ~std::uint32_t{0xff}) | static_cast<std::uint32_t>(n);
  std::copy_n(keys.begin(), n, data_.begin() + kKeys);
}

void ExactShingles::set_markers(std::size_t count) {
  if (empty()) return;
  data_[1] = (data_[1] & ~std::uint32_t{0xff00}) |
             (static_cast<std::uint32_t>(std::min<std::size_t>(count, 255)) << 8);
}

void ExactShingles::set_words(std::string_view words) {
  if (empty()) return;
  const std::size_t count = data_[0] & 0xffff;
  const std::size_t bytes = words.size() <= kMaxWordBytes ? words.size() : 0;
  data_.reserve(kHashes + count + (bytes + 3) / 4);  // (exactly: resize alone may double)
  data_.resize(kHashes + count + (bytes + 3) / 4);
  if (bytes != 0)
    std::memcpy(reinterpret_cast<char*>(data_.data() + kHashes + count), words.data(), bytes);
  data_[0] = static_cast<std::uint32_t>(count | (bytes << 16));
}

void ExactShingles::mark_boilerplate(const ExactShingles& story) {
  if (empty() || story.empty()) return;
  const auto theirs = story.hashes();
  // Marking sets bit 0 of an even hash: the order stays.
  std::uint32_t* mine = data_.data() + kHashes;
  const std::size_t n = data_[0] & 0xffff;
  std::uint32_t marked = 0;
  std::size_t j = 0;
  for (std::size_t i = 0; i < n; ++i) {
    while (j < theirs.size() && theirs[j] < mine[i]) ++j;
    if (j == theirs.size() || theirs[j] != mine[i]) {
      mine[i] |= kBoilerplateShingle;
      ++marked;
    }
  }
  data_[1] = (data_[1] & 0xffff) | (marked << 16);
  // The second half of the bands from the story: a repost with a link shares
  // them with its source, and the first half still finds the texts that have
  // the same words outside a mention or a hashtag.
  constexpr std::size_t kFrom = kBandKeys + 2 * (kRecentBands / 2);
  std::copy_n(story.data_.begin() + kFrom, 2 * (kRecentBands - kRecentBands / 2),
              data_.begin() + kFrom);
}

double exact_jaccard(const ExactShingles& a, const ExactShingles& b) {
  const auto x = a.hashes(), y = b.hashes();
  std::size_t i = 0, j = 0, common = 0;
  while (i < x.size() && j < y.size()) {
    common += x[i] == y[j];
    const bool step_i = x[i] <= y[j], step_j = y[j] <= x[i];
    i += step_i;
    j += step_j;
  }
  const std::size_t together = x.size() + y.size() - common;
  return together == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(together);
}

namespace {

// Jaccard of two set sizes and their common count (0 for two empty sets).
double jaccard_of(std::size_t x, std::size_t y, std::size_t common) {
  const std::size_t together = x + y - common;
  return together == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(together);
}

// Whether two different words are a typo apart: at least 4 bytes each, no digit, and
// one byte replaced, added or left out, or two neighbours swapped.
bool typo_apart(std::string_view u, std::string_view v) {
  if (u.size() < 4 || v.size() < 4 || u.find_first_of("0123456789") != std::string_view::npos ||
      v.find_first_of("0123456789") != std::string_view::npos)
    return false;
  if (u.size() < v.size()) std::swap(u, v);
  if (u.size() - v.size() > 1) return false;
  std::size_t i = 0;
  while (i < v.size() && u[i] == v[i]) ++i;
  if (u.size() != v.size()) return u.substr(i + 1) == v.substr(i);  // one left out
  if (i == u.size()) return false;                                  // the same
  if (u.substr(i + 1) == v.substr(i + 1)) return true;              // one replaced
  return i + 1 < u.size() && u[i] == v[i + 1] && u[i + 1] == v[i] &&
         u.substr(i + 2) == v.substr(i + 2);  // two swapped
}

// Whether two texts' words are the same but for one word at the same place, a typo apart.
bool one_typo(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  bool found = false;
  while (!a.empty() || !b.empty()) {
    if (a.empty() || b.empty()) return false;  // more words on one side
    const std::size_t x = a.find(' '), y = b.find(' ');
    const std::string_view u = a.substr(0, x), v = b.substr(0, y);
    a = x == std::string_view::npos ? std::string_view{} : a.substr(x + 1);
    b = y == std::string_view::npos ? std::string_view{} : b.substr(y + 1);
    if (u == v) continue;
    if (found || !typo_apart(u, v)) return false;
    found = true;
  }
  return found;
}

// The figures in one merge. With `early`, all 0 as soon as the shingles left cannot
// make the pair a duplicate by any rule at `threshold`. A hash's mark is its bit 0,
// so clearing it keeps the order. The typo rule is tried only below `threshold`.
ExactSimilarity similarity_merge(const ExactShingles& a, const ExactShingles& b, double threshold,
                                 bool early) {
  const auto x = a.hashes(), y = b.hashes();
  const std::size_t story_x = x.size() - a.boilerplate(), story_y = y.size() - b.boilerplate();
  const bool story_rule = story_x != x.size() || story_y != y.size();
  const bool typo_rule = !a.words().empty() && !b.words().empty();
  std::size_t needed = 0;
  if (early) {
    // Sizes alone: J <= small / large, and a typo moves each story's size by at most
    // kTypoShingles.
    const double small = static_cast<double>(std::min(x.size(), y.size())),
                 large = static_cast<double>(std::max(x.size(), y.size()));
    const std::size_t apart = story_x > story_y ? story_x - story_y : story_y - story_x;
    if (small < threshold * large &&
        (small < kStoryGuard * large || (!story_rule && (!typo_rule || apart > kTypoShingles))))
      return {};
    const double total = static_cast<double>(x.size() + y.size());
    auto common_for = [total](double j) { return std::max(0.0, j * total / (1.0 + j) - 1e-9); };
    double least = common_for(threshold);
    if (story_rule) least = std::min(least, common_for(kStoryGuard));
    // (a typo leaves each story all but kTypoShingles of its shingles; with boilerplate
    // inside a text, its story also has shingles across the gap that the set lacks)
    if (typo_rule)
      least =
          std::min(least, story_rule ? common_for(kStoryGuard)
                                     : std::max(common_for(kStoryGuard),
                                                static_cast<double>(std::max(story_x, story_y)) -
                                                    static_cast<double>(kTypoShingles)));
    needed = static_cast<std::size_t>(least);
  }
  std::size_t i = 0, j = 0, common = 0, common_story = 0;
  if (!story_rule) {
    while (i < x.size() && j < y.size()) {
      if (common + std::min(x.size() - i, y.size() - j) < needed) return {};
      common += x[i] == y[j];
      const bool step_i = x[i] <= y[j], step_j = y[j] <= x[i];
      i += step_i;
      j += step_j;
    }
    common_story = common;
  } else {
    constexpr std::uint32_t kHash = ~kBoilerplateShingle;
    while (i < x.size() && j < y.size()) {
      if (common + std::min(x.size() - i, y.size() - j) < needed) return {};
      const std::uint32_t u = x[i] & kHash, v = y[j] & kHash;
      const bool same = u == v;
      common += same;
      common_story += same && ((x[i] | y[j]) & kBoilerplateShingle) == 0;
      i += u <= v;
      j += v <= u;
    }
  }
  ExactSimilarity s;
  s.whole = jaccard_of(x.size(), y.size(), common);
  s.story = jaccard_of(story_x, story_y, common_story);
  s.texts = jaccard_of(x.size() + a.markers(), y.size() + b.markers(), common);
  s.value = s.texts >= kStoryGuard ? std::max(s.whole, s.story) : s.whole;
  s.typo = typo_rule && s.value < threshold && s.texts >= kStoryGuard &&
           (story_rule ||
            (story_x - common_story <= kTypoShingles && story_y - common_story <= kTypoShingles)) &&
           one_typo(a.words(), b.words());
  return s;
}

}  // namespace

ExactSimilarity exact_similarity(const ExactShingles& a, const ExactShingles& b) {
  return similarity_merge(a, b, 1.0, false);
}

ExactSimilarity exact_similarity_at_least(const ExactShingles& a, const ExactShingles& b,
                                          double threshold) {
  return similarity_merge(a, b, threshold, true);
}

namespace {

// Two name keys (kNameKeyBit) that one typo may turn into each other: lengths at most one apart
// and at most two letters in one set only (two letters swapped: none; one substituted: two).
bool names_near(std::uint32_t x, std::uint32_t y) {
  const int length_x = static_cast<int>((x >> 26) & 31),
            length_y = static_cast<int>((y >> 26) & 31);
  constexpr std::uint32_t kLetters = (1U << 26) - 1;
  return std::abs(length_x - length_y) <= 1 && std::popcount((x ^ y) & kLetters) <= 2;
}

// Whether some key of `names` (name keys) is near none of `others` (name keys).
bool name_alone(std::span<const std::uint32_t> names, std::span<const std::uint32_t> others) {
  for (const std::uint32_t x : names) {
    bool near = false;
    for (const std::uint32_t y : others) near = near || names_near(x, y);
    if (!near) return true;
  }
  return false;
}

}  // namespace

MustMatchDifference must_match_difference(const ExactShingles& a, const ExactShingles& b) {
  const auto x = a.keys(), y = b.keys();
  // hashed keys first (top bit clear), then names
  const auto split = [](std::span<const std::uint32_t> keys) {
    return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), kNameKeyBit) -
                                    keys.begin());
  };
  const std::size_t hashed_x = split(x), hashed_y = split(y);
  bool x_hashed = false, y_hashed = false;
  std::size_t i = 0, j = 0;
  while (i < hashed_x || j < hashed_y) {
    if (j == hashed_y || (i < hashed_x && x[i] < y[j])) {
      x_hashed = true;
      ++i;
    } else if (i == hashed_x || y[j] < x[i]) {
      y_hashed = true;
      ++j;
    } else {
      ++i;
      ++j;
    }
  }
  const auto names_x = x.subspan(hashed_x), names_y = y.subspan(hashed_y);
  const bool x_name = name_alone(names_x, names_y), y_name = name_alone(names_y, names_x);
  MustMatchDifference d;
  if ((x_hashed || x_name) && (y_hashed || y_name)) {
    d.hashed = x_hashed || y_hashed;
    d.names = x_name || y_name;
  }
  return d;
}

bool must_match_conflict(const ExactShingles& a, const ExactShingles& b) {
  const MustMatchDifference d = must_match_difference(a, b);
  return d.hashed || d.names;
}

}  // namespace neardup::dedup
