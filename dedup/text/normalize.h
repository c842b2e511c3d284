#pragma once
// Text normalization and tokenization, the first step of the fingerprint.
//
// Unicode NFKC + case fold (utf8proc), every run of punctuation, white space,
// control characters or invalid bytes folded into one separator, invalid UTF-8
// replaced by U+FFFD and counted. The output is a list of tokens over one
// normalized buffer: words (letters, marks, digits of alphabetic scripts),
// CJK runs (Han, Hiragana, Katakana, Hangul: no spaces, cut into n-grams by the
// feature step) and symbols (emoji and other So code points, one per token).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace neardup::dedup {

enum class TokenKind : std::uint8_t {
  word,    ///< letters, marks and digits of an alphabetic script (numbers are words)
  cjk,     ///< a maximal run of Han, kana or Hangul characters
  symbol,  ///< one "other symbol" code point (emoji, dingbats), a token of its own
};

struct Token {
  std::uint32_t offset = 0;  ///< byte offset into NormalizedText::text
  std::uint32_t size = 0;    ///< bytes
  TokenKind kind = TokenKind::word;
};

/// Bytes after the end of NormalizedText::text that are always readable (their
/// values are unspecified), so consumers may copy tokens in whole words.
inline constexpr std::size_t kNormalizedPadding = 16;

/// The result of Normalizer::run. Views stay valid until the next run().
struct NormalizedText {
  std::string_view text;          ///< holds the tokens (bytes between them are unspecified);
                                  ///< kNormalizedPadding readable bytes follow it
  const Token* tokens = nullptr;  ///< `token_count` tokens pointing into `text`
  std::size_t token_count = 0;
  std::uint32_t chars = 0;          ///< code points inside tokens (separators not counted)
  std::uint32_t invalid_bytes = 0;  ///< input bytes that were not valid UTF-8
  /// Every input byte was ASCII. Then `text` is the input (case-folded when
  /// normalizing) followed by zero bytes, and the tokens are exactly its maximal
  /// runs of ASCII letters and digits, in order (so every token is a word).
  bool ascii = true;
};

/// True for the code points neardup cuts into character n-grams: Han (CJK
/// unified ideographs, extensions, compatibility ideographs), Hiragana,
/// Katakana (with the phonetic extensions) and Hangul (syllables and jamo).
bool is_cjk(char32_t cp);

/// Reuses its buffers: after the first few calls, run() allocates only when a
/// text is longer than any before. Not thread-safe; cheap to create one per thread.
class Normalizer {
 public:
  /// `unicode` = false skips NFKC and case folding (tokens keep their bytes,
  /// invalid UTF-8 is still replaced); separators are folded either way.
  explicit Normalizer(bool unicode = true);

  /// O(bytes). Never throws on any input bytes (std::bad_alloc aside).
  /// ASCII is classified and lower-cased 16 bytes at a time (SSE2) into a
  /// mirror of the input, so an ASCII word is a token in place; only segments
  /// (runs between ASCII separators) that contain a non-ASCII byte go through
  /// utf8proc, and their output is appended after the mirror.
  NormalizedText run(std::string_view utf8);

 private:
  void classify(const unsigned char* in, std::size_t size);
  bool inert_segment(const unsigned char* begin, const unsigned char* end);
  void slow_segment(const unsigned char* begin, const unsigned char* end);
  void push_code_point(char32_t cp);
  void close_token();
  void reserve_out(std::size_t extra);

  bool unicode_;
  std::string out_;  // capacity grows, never shrinks; out_len_ is the used part
  std::size_t out_len_ = 0;
  std::vector<Token> tokens_;
  std::vector<std::uint64_t> segment_bits_;    // bit i: byte i is a letter, digit or non-ASCII
  std::vector<std::uint64_t> non_ascii_bits_;  // bit i: byte i is >= 0x80
  std::vector<std::uint32_t> bounds_;          // run(): segment starts, then segment ends
  std::string sanitized_;                      // a segment with invalid bytes replaced
  std::vector<std::int32_t> cps_;              // utf8proc output for one segment
  // The token being built by the slow path.
  bool open_ = false;
  TokenKind open_kind_ = TokenKind::word;
  std::uint32_t open_offset_ = 0;
  std::uint32_t chars_ = 0;
  std::uint32_t invalid_bytes_ = 0;
};

/// What strip_boilerplate removes.
enum class Boilerplate : std::uint8_t {
  /// URLs (http://, https://, www. up to the next space or non-ASCII character),
  /// @mentions (ASCII or full-width @ at the start of a word, up to a space or
  /// punctuation), hashtags (#tag; #话题# up to its closing # within 64 bytes) and a
  /// "via", "RT" or 转发 right before a mention.
  all,
  /// Only the mentions that mark a repost, with their marker word: a mention after
  /// "via", "RT" or 转发 ("RT @x:", "(via @x)"), after "//" ("//@x:") or followed
  /// by a colon ("@x：..."). A mention that addresses someone ("@bob see this"),
  /// URLs and hashtags stay.
  repost_markers,
};

/// `text` without its boilerplate (`what`), for TextOptions::strip_boilerplate and
/// the recent-text stage. Each removed span becomes one space. When nothing but
/// spaces and punctuation would be left, returns `text` itself. The result views
/// `text` or `buffer`. O(bytes); never throws (std::bad_alloc aside).
std::string_view strip_boilerplate(std::string_view text, std::string& buffer,
                                   Boilerplate what = Boilerplate::all);

/// Convenience for tests and tools: the tokens joined by single spaces.
std::string normalize(std::string_view utf8, bool unicode = true);

}  // namespace neardup::dedup
