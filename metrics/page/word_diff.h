#pragma once
// The word diff of the page's pairs (metrics/page/page.h): which words of an
// original and its duplicate the other lacks. Pure functions, safe from any thread.

#include <cstddef>
#include <string_view>
#include <vector>

namespace neardup::metrics {

/// A piece of one side of a pair: `changed` when the other side lacks it.
struct DiffSegment {
  std::string_view text;
  bool changed = false;
};
struct WordDiff {
  std::vector<DiffSegment> original, duplicate;  ///< each covers its whole text, in order
};

/// Word-level difference (longest common subsequence of tokens): a token is a
/// run of letters and digits, one CJK/kana/hangul character, or one
/// punctuation character; whitespace only separates. Tokens compare ignoring
/// ASCII case, as the fingerprint does (so a repost in capitals shows no marks).
/// The segments view the arguments. O(n * m) in the tokens between the common
/// prefix and suffix; each side beyond kMaxDiffTokens tokens is marked changed.
WordDiff word_diff(std::string_view original, std::string_view duplicate);
inline constexpr std::size_t kMaxDiffTokens = 2000;

}  // namespace neardup::metrics
