// Unicode library choice: utf8proc, not ICU. utf8proc is a small C library with
// its tables compiled in (no data files to ship or find at run time), it does
// NFKC + case folding + dropping default-ignorables in one decompose/compose
// call, and it has no global state, so every pipeline thread can use it freely.
// ICU would bring ~30 MB of data and a far larger API for the same result here.
#include "dedup/text/normalize.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "dedup/core/cpu.h"

#if NEARDUP_X86_KERNELS && defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace neardup::dedup {
namespace {

// Byte classes of the fast path: 0 = separator, 1 = not ASCII (slow path),
// anything else = the byte a word keeps (lower-cased when folding case).
constexpr std::uint8_t kSeparator = 0;
constexpr std::uint8_t kNonAscii = 1;

constexpr std::array<std::uint8_t, 256> make_table(bool fold_case) {
  std::array<std::uint8_t, 256> table{};
  for (int b = 0; b < 256; ++b) {
    if (b >= 0x80)
      table[b] = kNonAscii;
    else if (b >= 'a' && b <= 'z')
      table[b] = static_cast<std::uint8_t>(b);
    else if (b >= '0' && b <= '9')
      table[b] = static_cast<std::uint8_t>(b);
    else if (b >= 'A' && b <= 'Z')
      table[b] = static_cast<std::uint8_t>(fold_case ? b - 'A' + 'a' : b);
    else
      table[b] = kSeparator;
  }
  return table;
}
constexpr auto kFoldTable = make_table(true);
constexpr auto kKeepTable = make_table(false);

constexpr char32_t kReplacement = 0xFFFD;

// NFKC + case fold + drop default-ignorables (ZWJ, variation selectors, soft
// hyphen): utf8proc's NFKC_Casefold, without the NUL-terminated allocation.
constexpr auto kUnicodeOptions = static_cast<utf8proc_option_t>(
    UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_IGNORE);

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Appends `begin..end` to `out` as valid UTF-8: each maximal ill-formed
// subsequence (Unicode 15, section 3.9, U+FFFD substitution of maximal
// subparts) becomes one U+FFFD. Returns the number of bytes replaced.
std::uint32_t sanitize_utf8(const unsigned char* p, const unsigned char* end, std::string& out) {
  std::uint32_t invalid = 0;
  out.clear();
  while (p < end) {
    const unsigned char b = *p;
    int length = 0;
    unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
    if (b < 0x80)
      length = 1;
    else if (b >= 0xC2 && b <= 0xDF)
      length = 2;
    else if (b == 0xE0) {
      length = 3;
      low = 0xA0;
    } else if (b == 0xED) {
      length = 3;
      high = 0x9F;
    }  // no surrogates
    else if (b >= 0xE1 && b <= 0xEF)
      length = 3;
    else if (b == 0xF0) {
      length = 4;
      low = 0x90;
    } else if (b >= 0xF1 && b <= 0xF3)
      length = 4;
    else if (b == 0xF4) {
      length = 4;
      high = 0x8F;
    }  // <= U+10FFFF
    // Count how many bytes of the sequence are well formed.
    int good = length == 0 ? 0 : 1;
    if (length > 1 && p + 1 < end && p[1] >= low && p[1] <= high) {
      good = 2;
      while (good < length && p + good < end && is_continuation(p[good])) ++good;
    }
    if (length > 0 && good == length) {
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(length));
      p += length;
    } else {
      const int bad = good == 0 ? 1 : good;  // a bad lead byte alone, or the truncated prefix
      out.append("\xEF\xBF\xBD");
      invalid += static_cast<std::uint32_t>(bad);
      p += bad;
    }
  }
  return invalid;
}

}  // namespace

bool is_cjk(char32_t cp) {
  if (cp < 0x1100) return false;
  if (cp <= 0x11FF) return true;  // Hangul Jamo
  if (cp < 0x2E80) return false;
  if (cp <= 0x2FDF) return true;                          // CJK radicals, Kangxi radicals
  if (cp >= 0x3005 && cp <= 0x3007) return true;          // 々 〆 〇
  if (cp >= 0x3041 && cp <= 0x309F) return true;          // Hiragana
  if (cp >= 0x30A1 && cp <= 0x30FF) return cp != 0x30FB;  // Katakana (not the middle dot)
  if (cp >= 0x3131 && cp <= 0x318F) return true;          // Hangul compatibility jamo
  if (cp >= 0x31F0 && cp <= 0x31FF) return true;          // Katakana phonetic extensions
  if (cp >= 0x3400 && cp <= 0x4DBF) return true;          // CJK extension A
  if (cp >= 0x4E00 && cp <= 0x9FFF) return true;          // CJK unified ideographs
  if (cp >= 0xA960 && cp <= 0xA97F) return true;          // Hangul Jamo extended A
  if (cp >= 0xAC00 && cp <= 0xD7FF) return true;          // Hangul syllables, Jamo extended B
  if (cp >= 0xF900 && cp <= 0xFAFF) return true;          // CJK compatibility ideographs
  if (cp >= 0xFF66 && cp <= 0xFFDC) return true;          // half-width katakana and Hangul
  if (cp >= 0x1B000 && cp <= 0x1B16F) return true;        // kana supplement, extended
  if (cp >= 0x20000 && cp <= 0x3FFFF) return true;        // CJK extensions B..H
  return false;
}

Normalizer::Normalizer(bool unicode) : unicode_(unicode) {}

void Normalizer::reserve_out(std::size_t extra) {
  if (out_len_ + extra > out_.size()) out_.resize((out_len_ + extra) * 2);
}

// Fills the mirror out_[0, size) with the input, ASCII upper case folded when
// unicode_, and one bit per byte in segment_bits_ / non_ascii_bits_. Bytes past
// `size` up to the next multiple of 64 classify as separators.
void Normalizer::classify(const unsigned char* in, std::size_t size) {
  const std::size_t chunks = (size + 63) / 64;
  segment_bits_.resize(chunks + 1);
  non_ascii_bits_.resize(chunks + 1);
  auto* out = reinterpret_cast<unsigned char*>(out_.data());
  alignas(16) unsigned char tail[64];
  for (std::size_t c = 0; c < chunks; ++c) {
    const unsigned char* src = in + 64 * c;
    if (64 * c + 64 > size) {  // last, partial chunk: zeros are separators
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, src, size - 64 * c);
      src = tail;
    }
    std::uint64_t segment = 0, high = 0;
#if NEARDUP_X86_KERNELS && defined(__SSE2__)
    const __m128i upper_lo = _mm_set1_epi8('A' - 1), upper_hi = _mm_set1_epi8('Z' + 1);
    const __m128i lower_lo = _mm_set1_epi8('a' - 1), lower_hi = _mm_set1_epi8('z' + 1);
    const __m128i digit_lo = _mm_set1_epi8('0' - 1), digit_hi = _mm_set1_epi8('9' + 1);
    const __m128i case_bit = _mm_set1_epi8(unicode_ ? 0x20 : 0);
    for (int k = 0; k < 4; ++k) {
      // Signed compares: bytes >= 0x80 are negative, so they fall in no ASCII range.
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * k));
      const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, upper_lo), _mm_cmplt_epi8(v, upper_hi));
      const __m128i lower = _mm_and_si128(_mm_cmpgt_epi8(v, lower_lo), _mm_cmplt_epi8(v, lower_hi));
      const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, digit_lo), _mm_cmplt_epi8(v, digit_hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 64 * c + 16 * k),
                       _mm_add_epi8(v, _mm_and_si128(upper, case_bit)));
      const auto word = static_cast<std::uint64_t>(static_cast<unsigned>(
          _mm_movemask_epi8(_mm_or_si128(upper, _mm_or_si128(lower, digit)))));
      const auto non_ascii =
          static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(v)));
      segment |= (word | non_ascii) << (16 * k);
      high |= non_ascii << (16 * k);
    }
#else
    const std::uint8_t* table = unicode_ ? kFoldTable.data() : kKeepTable.data();
    for (int i = 0; i < 64; ++i) {
      const std::uint8_t cls = table[src[i]];
      out[64 * c + i] = cls > kNonAscii ? cls : src[i];
      segment |= static_cast<std::uint64_t>(cls != kSeparator) << i;
      high |= static_cast<std::uint64_t>(cls == kNonAscii) << i;
    }
#endif
    segment_bits_[c] = segment;
    non_ascii_bits_[c] = high;
  }
  segment_bits_[chunks] = 0;  // a sentinel: every segment ends
  non_ascii_bits_[chunks] = 0;
}

NormalizedText Normalizer::run(std::string_view utf8) {
  const std::size_t size = utf8.size();
  const std::size_t mirror = (size + 63) / 64 * 64;
  tokens_.clear();
  open_ = false;
  chars_ = 0;
  invalid_bytes_ = 0;
  out_len_ = 0;
  reserve_out(mirror + 64);
  out_len_ = mirror;  // the slow path appends after the mirror
  const auto* in = reinterpret_cast<const unsigned char*>(utf8.data());
  classify(in, size);

  const std::uint64_t* segment = segment_bits_.data();
  const std::uint64_t* high = non_ascii_bits_.data();
  const std::size_t chunks = mirror / 64;
  // Segment boundaries from the bit map, word by word: a start is a segment
  // byte after a separator, an end the first separator after a segment (the
  // sentinel word closes the last one). Popping set bits costs a loop exit per
  // word, not the unpredictable per-token branches of a bit-by-bit search.
  // At most one start per two bytes, the same for ends. (Grown, never shrunk:
  // a resize down and up again would zero-fill.)
  if (bounds_.size() < mirror + 2) bounds_.resize(mirror + 2);
  std::uint32_t* starts = bounds_.data();
  std::uint32_t* ends = starts + (mirror / 2 + 1);
  std::size_t n_starts = 0, n_ends = 0;
  std::uint64_t carry = 0, any_high = 0;  // carry: the previous byte is in a segment
  for (std::size_t w = 0; w <= chunks; ++w) {
    const std::uint64_t seg = segment[w];
    const std::uint64_t before = (seg << 1) | carry;
    carry = seg >> 63;
    any_high |= high[w];
    for (std::uint64_t b = seg & ~before; b != 0; b &= b - 1)
      starts[n_starts++] =
          static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(b)));
    for (std::uint64_t b = ~seg & before; b != 0; b &= b - 1)
      ends[n_ends++] =
          static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(b)));
  }
  bool ascii = true;
  for (std::size_t t = 0; t < n_starts; ++t) {
    const std::size_t start = starts[t];
    const std::size_t end = std::min<std::size_t>(size, ends[t]);
    bool non_ascii = false;
    if (any_high != 0) {
      for (std::size_t i = start >> 6; i <= (end - 1) >> 6; ++i) {
        std::uint64_t m = high[i];
        if (i == start >> 6) m &= ~0ULL << (start & 63);
        if (i == (end - 1) >> 6 && (end & 63) != 0) m &= ~(~0ULL << (end & 63));
        non_ascii |= m != 0;
      }
    }
    if (non_ascii) {
      // A combining mark can change the ASCII letter before it: the whole
      // segment goes through utf8proc.
      slow_segment(in + start, in + end);
      ascii = false;  // conservative: NFKC may have produced ASCII only
    } else {
      tokens_.push_back(Token{static_cast<std::uint32_t>(start),
                              static_cast<std::uint32_t>(end - start), TokenKind::word});
      chars_ += static_cast<std::uint32_t>(end - start);
    }
  }

  reserve_out(kNormalizedPadding);
  NormalizedText result;
  result.text = std::string_view(out_.data(), out_len_);
  result.ascii = ascii;
  result.tokens = tokens_.data();
  result.token_count = tokens_.size();
  result.chars = chars_;
  result.invalid_bytes = invalid_bytes_;
  return result;
}

// Code points that NFKC + case folding leave alone and that never compose with
// a neighbour, so a segment made only of them (and ASCII letters and digits)
// needs no utf8proc: most Chinese and Japanese text.
namespace {
enum class Inert { no, cjk, separator };
Inert inert(char32_t cp) {
  if (cp == 0x2017) return Inert::no;  // NFKC: space + combining double low line
  if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF)) return Inert::cjk;
  if (cp >= 0x3001 && cp <= 0x3003) return Inert::separator;  // 、。〃
  if (cp >= 0x3008 && cp <= 0x3011) return Inert::separator;  // 〈〉《》「」『』【】
  if (cp >= 0x2010 && cp <= 0x2027) return Inert::separator;  // dashes, quotes, dots
  if (cp >= 0xFF01 && cp <= 0xFF0F) return Inert::separator;  // full-width ! " # ... /
  if (cp >= 0xFF1A && cp <= 0xFF20) return Inert::separator;  // full-width : ; < = > ? @
  return Inert::no;
}
}  // namespace

bool Normalizer::inert_segment(const unsigned char* p, const unsigned char* end) {
  const std::size_t tokens = tokens_.size(), out_len = out_len_;
  const std::uint32_t chars = chars_;
  const std::uint8_t* table = unicode_ ? kFoldTable.data() : kKeepTable.data();
  while (p < end) {
    const unsigned char b = *p;
    if (b < 0x80) {
      push_code_point(table[b]);  // a letter or digit: segments hold no ASCII separators
      ++p;
      continue;
    }
    // Only well-formed 3-byte sequences can be inert.
    if (b < 0xE1 || b > 0xEF || b == 0xED || end - p < 3 || !is_continuation(p[1]) ||
        !is_continuation(p[2]))
      break;
    const char32_t cp =
        static_cast<char32_t>((b & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F));
    const Inert kind = inert(cp);
    if (kind == Inert::no) break;
    if (kind == Inert::separator)
      close_token();
    else
      push_code_point(cp);
    p += 3;
  }
  if (p == end) {
    close_token();
    return true;
  }
  tokens_.resize(tokens);  // roll back: the general path starts over
  out_len_ = out_len;
  chars_ = chars;
  open_ = false;
  return false;
}

void Normalizer::slow_segment(const unsigned char* begin, const unsigned char* end) {
  if (unicode_ && inert_segment(begin, end)) return;
  invalid_bytes_ += sanitize_utf8(begin, end, sanitized_);
  const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(sanitized_.data());
  const auto src_len = static_cast<utf8proc_ssize_t>(sanitized_.size());
  utf8proc_ssize_t count = 0;
  if (unicode_) {
    if (cps_.size() < sanitized_.size() + 16) cps_.resize(sanitized_.size() * 2 + 16);
    count = utf8proc_decompose(src, src_len, cps_.data(),
                               static_cast<utf8proc_ssize_t>(cps_.size()), kUnicodeOptions);
    if (count > static_cast<utf8proc_ssize_t>(cps_.size())) {
      cps_.resize(static_cast<std::size_t>(count));
      count = utf8proc_decompose(src, src_len, cps_.data(), count, kUnicodeOptions);
    }
    if (count >= 0) count = utf8proc_normalize_utf32(cps_.data(), count, kUnicodeOptions);
  } else {
    if (cps_.size() < sanitized_.size()) cps_.resize(sanitized_.size());
    for (utf8proc_ssize_t at = 0; at < src_len;) {
      utf8proc_int32_t cp = 0;
      const utf8proc_ssize_t used = utf8proc_iterate(src + at, src_len - at, &cp);
      if (used <= 0) {
        cp = kReplacement;
        at += 1;
      } else {
        at += used;
      }
      cps_[static_cast<std::size_t>(count++)] = cp;
    }
  }
  // utf8proc rejects nothing that sanitize_utf8 lets through; should it ever,
  // the segment is dropped as one separator rather than trusted.
  if (count < 0) return;
  for (utf8proc_ssize_t i = 0; i < count; ++i)
    push_code_point(static_cast<char32_t>(cps_[static_cast<std::size_t>(i)]));
  close_token();
}

void Normalizer::push_code_point(char32_t cp) {
  TokenKind kind = TokenKind::word;
  if (cp < 0x80) {
    const std::uint8_t c = (unicode_ ? kFoldTable : kKeepTable)[cp];
    if (c == kSeparator) return close_token();
    cp = c;
  } else if (is_cjk(cp)) {
    kind = TokenKind::cjk;
  } else {
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
      case UTF8PROC_CATEGORY_LU:
      case UTF8PROC_CATEGORY_LL:
      case UTF8PROC_CATEGORY_LT:
      case UTF8PROC_CATEGORY_LM:
      case UTF8PROC_CATEGORY_LO:
      case UTF8PROC_CATEGORY_MN:
      case UTF8PROC_CATEGORY_MC:
      case UTF8PROC_CATEGORY_ME:
      case UTF8PROC_CATEGORY_ND:
      case UTF8PROC_CATEGORY_NL:
      case UTF8PROC_CATEGORY_NO:
        kind = TokenKind::word;
        break;
      case UTF8PROC_CATEGORY_SO:
        if (cp == kReplacement) return close_token();  // undecodable bytes are not content
        kind = TokenKind::symbol;
        break;
      default:  // punctuation, other symbols, spaces, controls, unassigned
        return close_token();
    }
  }
  if (open_ && (open_kind_ != kind || kind == TokenKind::symbol)) close_token();
  reserve_out(8);
  if (!open_) {
    open_ = true;
    open_kind_ = kind;
    open_offset_ = static_cast<std::uint32_t>(out_len_);
  }
  out_len_ += static_cast<std::size_t>(
      utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp),
                           reinterpret_cast<utf8proc_uint8_t*>(out_.data() + out_len_)));
  ++chars_;
}

void Normalizer::close_token() {
  if (!open_) return;
  tokens_.push_back(
      Token{open_offset_, static_cast<std::uint32_t>(out_len_ - open_offset_), open_kind_});
  open_ = false;
}

std::string normalize(std::string_view utf8, bool unicode) {
  Normalizer normalizer(unicode);
  const NormalizedText norm = normalizer.run(utf8);
  std::string joined;
  for (std::size_t i = 0; i < norm.token_count; ++i) {
    if (i != 0) joined += ' ';
    joined.append(norm.text.substr(norm.tokens[i].offset, norm.tokens[i].size));
  }
  return joined;
}

namespace {

bool ascii_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_';
}

// Bytes that end a mention or a hashtag: ASCII space and punctuation (but '_',
// '-' and '.' inside a name), and the full-width punctuation a Chinese post puts after one.
std::size_t name_end(std::string_view text, std::size_t at) {
  static constexpr std::string_view kStops[] = {"\xef\xbc\x9a", "\xef\xbc\x8c", "\xe3\x80\x82",
                                                "\xef\xbc\x89", "\xe3\x80\x80", "\xef\xbc\x81",
                                                "\xe3\x80\x91"};  // ： ， 。 ） space ！ 】
  while (at < text.size()) {
    const auto c = static_cast<unsigned char>(text[at]);
    if (c < 0x80) {
      if (!ascii_word_byte(c) && c != '-' &&
          !(c == '.' && at + 1 < text.size() &&
            ascii_word_byte(static_cast<unsigned char>(text[at + 1]))))
        return at;
      ++at;
      continue;
    }
    for (const std::string_view stop : kStops)
      if (text.substr(at, stop.size()) == stop) return at;
    ++at;
  }
  return at;
}

bool starts_with_folded(std::string_view text, std::size_t at, std::string_view lower) {
  if (text.size() - at < lower.size()) return false;
  for (std::size_t i = 0; i < lower.size(); ++i)
    if ((static_cast<unsigned char>(text[at + i]) | 0x20) != static_cast<unsigned char>(lower[i]))
      return false;
  return true;
}

// `out` ends with the word "via" or "rt" (any case) or 转发, then spaces: cut them and
// return true.
bool drop_repost_word(std::string& out) {
  std::size_t end = out.size();
  while (end > 0 && out[end - 1] == ' ') --end;
  for (const std::string_view word : {std::string_view("via"), std::string_view("rt"),
                                      std::string_view("\xe8\xbd\xac\xe5\x8f\x91")}) {  // 转发
    if (end < word.size()) continue;
    const std::size_t start = end - word.size();
    if (!starts_with_folded(out, start, word) && out.compare(start, word.size(), word) != 0)
      continue;
    if (start > 0 && ascii_word_byte(static_cast<unsigned char>(out[start - 1]))) continue;
    out.resize(start);
    return true;
  }
  return false;
}

// `out` ends with "//", then spaces: a Weibo repost chain ("...//@x: ...").
bool ends_with_slashes(std::string_view out) {
  std::size_t end = out.size();
  while (end > 0 && out[end - 1] == ' ') --end;
  return end >= 2 && out.substr(end - 2, 2) == "//";
}

}  // namespace

std::string_view strip_boilerplate(std::string_view text, std::string& buffer, Boilerplate what) {
  const bool all = what == Boilerplate::all;
  buffer.clear();
  bool removed = false;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto c = static_cast<unsigned char>(text[at]);
    const bool word_start = at == 0 || !ascii_word_byte(static_cast<unsigned char>(text[at - 1]));
    std::size_t end = at;
    bool mention = false;
    if (all && word_start &&
        (starts_with_folded(text, at, "http://") || starts_with_folded(text, at, "https://") ||
         starts_with_folded(text, at, "www."))) {
      end = at;
      while (end < text.size() && static_cast<unsigned char>(text[end]) > ' ' &&
             static_cast<unsigned char>(text[end]) < 0x80)
        ++end;
    } else if (word_start && (c == '@' || text.substr(at, 3) == "\xef\xbc\xa0")) {  // @ or ＠
      const std::size_t name = at + (c == '@' ? 1 : 3);
      end = name_end(text, name);
      mention = end > name;
      if (!mention) end = at;
    } else if (all && word_start && c == '#') {
      // #话题#: a closing # before any space, within 64 bytes; else #tag
      const std::size_t close = text.find('#', at + 1);
      const std::size_t space = text.find_first_of(" \t\n\r", at + 1);
      if (close != std::string_view::npos && close - at <= 64 && close > at + 1 &&
          (space == std::string_view::npos || close < space)) {
        end = close + 1;
      } else {
        end = at + 1;
        while (end < text.size() && ascii_word_byte(static_cast<unsigned char>(text[end]))) ++end;
        if (end == at + 1) end = at;
      }
    }
    if (end == at) {
      buffer.push_back(text[at++]);
      continue;
    }
    if (mention) {
      const bool after_word = drop_repost_word(buffer);
      const bool colon =
          end < text.size() && (text[end] == ':' || text.substr(end, 3) == "\xef\xbc\x9a");  // ：
      if (!all && !after_word && !colon && !ends_with_slashes(buffer)) {
        buffer.append(text.substr(at, end - at));  // a mention that addresses someone
        at = end;
        continue;
      }
    }
    buffer.push_back(' ');
    removed = true;
    at = end;
  }
  if (!removed) return text;
  for (const char ch : buffer) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x80 || (ascii_word_byte(b) && b != '_')) return buffer;
  }
  return text;
}

}  // namespace neardup::dedup
