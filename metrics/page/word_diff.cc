#include "metrics/page/word_diff.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace neardup::metrics {

namespace {

struct Token {
  std::size_t begin, end;  // bytes in the text
};

/// The code point at `s[i]` and its length (1 for a byte that does not start a
/// valid sequence: texts here are valid UTF-8, but the diff must not trust that).
std::pair<std::uint32_t, std::size_t> decode(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  const std::size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 1;
  if (n == 1 || i + n > s.size()) return {0xFFFD, 1};
  std::uint32_t cp = b0 & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, n};
}

enum class CharClass { space, word, single };

CharClass classify(std::uint32_t cp) {
  if (cp < 0x80) {
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == '\v')
      return CharClass::space;
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
      return CharClass::word;
    return CharClass::single;  // ASCII punctuation, controls
  }
  if (cp == 0xA0 || cp == 0x3000 || (cp >= 0x2000 && cp <= 0x200B)) return CharClass::space;
  if ((cp >= 0xA1 && cp <= 0xBF) || (cp >= 0x2010 && cp <= 0x206F)) return CharClass::single;
  // CJK, kana, hangul, their punctuation and fullwidth forms: one character each.
  if (cp >= 0x2E80) return CharClass::single;
  return CharClass::word;  // Latin, Greek, Cyrillic, ... letters run into words
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    auto [cp, n] = decode(s, i);
    const CharClass c = classify(cp);
    if (c == CharClass::space) {
      i += n;
      continue;
    }
    const std::size_t begin = i;
    i += n;
    if (c == CharClass::word) {
      while (i < s.size()) {
        auto [next, m] = decode(s, i);
        if (classify(next) != CharClass::word) break;
        i += m;
      }
    }
    tokens.push_back({begin, i});
  }
  return tokens;
}

/// Segments covering all of `s`: each token with its flag; the gaps between
/// tokens are changed only when both neighbours are (so a changed phrase is one mark).
std::vector<DiffSegment> segments(std::string_view s, const std::vector<Token>& tokens,
                                  const std::vector<bool>& changed) {
  std::vector<DiffSegment> out;
  auto add = [&out](std::string_view text, bool flag) {
    if (text.empty()) return;
    if (!out.empty() && out.back().changed == flag) {
      out.back().text =
          std::string_view(out.back().text.data(), out.back().text.size() + text.size());
    } else {
      out.push_back({text, flag});
    }
  };
  std::size_t at = 0;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const bool gap_changed = t > 0 && changed[t - 1] && changed[t];
    add(s.substr(at, tokens[t].begin - at), gap_changed);
    add(s.substr(tokens[t].begin, tokens[t].end - tokens[t].begin), changed[t]);
    at = tokens[t].end;
  }
  add(s.substr(at), false);
  return out;
}

}  // namespace

namespace {

/// Equal but for ASCII case (the fingerprint folds case too).
class Folded {
 public:
  explicit Folded(std::string_view s) : s_(s) {}
  bool operator==(const Folded& other) const {
    if (s_.size() != other.s_.size()) return false;
    for (std::size_t i = 0; i < s_.size(); ++i)
      if (lower(s_[i]) != lower(other.s_[i])) return false;
    return true;
  }

 private:
  static char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
  std::string_view s_;
};

}  // namespace

WordDiff word_diff(std::string_view a, std::string_view b) {
  const std::vector<Token> ta = tokenize(a), tb = tokenize(b);
  auto text = [](std::string_view s, const Token& t) {
    return Folded(s.substr(t.begin, t.end - t.begin));
  };
  std::vector<bool> ca(ta.size(), true), cb(tb.size(), true);
  std::size_t prefix = 0;
  while (prefix < ta.size() && prefix < tb.size() && text(a, ta[prefix]) == text(b, tb[prefix])) {
    ca[prefix] = cb[prefix] = false;
    ++prefix;
  }
  std::size_t suffix = 0;
  while (suffix < ta.size() - prefix && suffix < tb.size() - prefix &&
         text(a, ta[ta.size() - 1 - suffix]) == text(b, tb[tb.size() - 1 - suffix])) {
    ca[ta.size() - 1 - suffix] = cb[tb.size() - 1 - suffix] = false;
    ++suffix;
  }
  const std::size_t n = ta.size() - prefix - suffix, m = tb.size() - prefix - suffix;
  if (n > 0 && m > 0 && n <= kMaxDiffTokens && m <= kMaxDiffTokens) {
    // lcs[i][j]: the longest common subsequence of the middles' tails from i and j.
    std::vector<std::uint16_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](std::size_t i, std::size_t j) -> std::uint16_t& { return lcs[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;) {
      for (std::size_t j = m; j-- > 0;) {
        at(i, j) = text(a, ta[prefix + i]) == text(b, tb[prefix + j])
                       ? static_cast<std::uint16_t>(at(i + 1, j + 1) + 1)
                       : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    for (std::size_t i = 0, j = 0; i < n && j < m;) {
      if (text(a, ta[prefix + i]) == text(b, tb[prefix + j])) {
        ca[prefix + i] = cb[prefix + j] = false;
        ++i, ++j;
      } else if (at(i + 1, j) >= at(i, j + 1)) {
        ++i;
      } else {
        ++j;
      }
    }
  }
  return {segments(a, ta, ca), segments(b, tb, cb)};
}

}  // namespace neardup::metrics
