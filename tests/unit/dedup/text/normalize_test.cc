#include "dedup/text/normalize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace neardup::dedup {
namespace {

struct Tokens {
  std::vector<std::string> text;
  std::vector<TokenKind> kinds;
  std::uint32_t chars = 0;
  std::uint32_t invalid_bytes = 0;
};

Tokens tokenize(std::string_view input, bool unicode = true) {
  Normalizer normalizer(unicode);
  const NormalizedText norm = normalizer.run(input);
  Tokens out;
  for (std::size_t i = 0; i < norm.token_count; ++i) {
    out.text.emplace_back(norm.text.substr(norm.tokens[i].offset, norm.tokens[i].size));
    out.kinds.push_back(norm.tokens[i].kind);
  }
  out.chars = norm.chars;
  out.invalid_bytes = norm.invalid_bytes;
  return out;
}

using Words = std::vector<std::string>;

TEST(Normalize, FoldsCaseAndPunctuationAndSpaceRuns) {
  EXPECT_EQ(normalize("  Hello,   WORLD!!  It's\t\n42. "), "hello world it s 42");
  EXPECT_EQ(normalize("...---!!!"), "");
  EXPECT_EQ(normalize(""), "");
}

TEST(Normalize, FullWidthLettersAndDigitsBecomeAscii) {
  EXPECT_EQ(normalize("ＡＢＣ　ｄｅｆ１２３"), "abc def123");
  EXPECT_EQ(normalize("ＡＢＣ"), normalize("abc"));
}

TEST(Normalize, NfkcCompatibilityForms) {
  EXPECT_EQ(normalize("ﬁle"), "file");        // ligature
  EXPECT_EQ(normalize("x²"), "x2");           // superscript
  EXPECT_EQ(normalize("Ⅻ"), "xii");           // roman numeral
  EXPECT_EQ(normalize("\u212A"), "k");        // Kelvin sign
  EXPECT_EQ(normalize("ｶﾀｶﾅ"), "カタカナ");   // half-width katakana
  EXPECT_EQ(normalize("Straße"), "strasse");  // full case fold
  EXPECT_EQ(normalize("ΣΊΣΥΦΟΣ"), normalize("σίσυφος"));
}

TEST(Normalize, CombiningMarkComposesWithAsciiLetter) {
  EXPECT_EQ(normalize("cafe\xCC\x81"), "caf\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(normalize("CAFE\xCC\x81"), normalize("café"));
}

TEST(Normalize, IgnorablesVanishAndUnicodePunctuationSeparates) {
  EXPECT_EQ(normalize("soft\u00ADhyphen"), "softhyphen");
  EXPECT_EQ(normalize("zero\u200Bwidth"),
            "zerowidth");  // default-ignorable, dropped by NFKC_Casefold
  EXPECT_EQ(normalize("a\u00A0b\u2014c\u3002d"), "a b c d");
  EXPECT_EQ(normalize("\u201Cquoted\u201D"), "quoted");
}

TEST(Normalize, CjkRunsAreSeparateTokensFromWords) {
  const Tokens t = tokenize("iPhone手机，很好用。Seoul서울");
  EXPECT_EQ(t.text, (Words{"iphone", "手机", "很好用", "seoul", "서울"}));
  EXPECT_EQ(t.kinds, (std::vector<TokenKind>{TokenKind::word, TokenKind::cjk, TokenKind::cjk,
                                             TokenKind::word, TokenKind::cjk}));
  EXPECT_EQ(t.chars, 6u + 2 + 3 + 5 + 2);
}

TEST(Normalize, ChineseFastPathAgreesWithUtf8proc) {
  // Han and common CJK punctuation skip utf8proc; anything else in the segment
  // (a compatibility ideograph, a combining mark) sends it through utf8proc.
  EXPECT_EQ(normalize("北京，“天气”「很好」。ABC12"), "北京 天气 很好 abc12");
  EXPECT_EQ(normalize("北京\uF900天"), "北京\u8C48天");  // U+F900 -> U+8C48 by NFKC
  EXPECT_EQ(normalize("北京\uFF21天"), "北京 a 天");     // full-width A inside a Han run
  EXPECT_EQ(tokenize("中\xE4\xB8").invalid_bytes, 2u);   // truncated sequence after Han
}

TEST(Normalize, EmojiAreSymbolTokensOfTheirOwn) {
  const Tokens t = tokenize("I love🍕🍕 pizza 👍🏽!");
  EXPECT_EQ(t.text, (Words{"i", "love", "🍕", "🍕", "pizza", "👍"}));
  EXPECT_EQ(t.kinds[2], TokenKind::symbol);
}

TEST(Normalize, InvalidUtf8IsReplacedAndCounted) {
  struct Case {
    std::string bytes;
    std::uint32_t invalid;
    Words words;
  };
  const std::vector<Case> cases = {
      {"ab\x80"
       "cd",
       1,
       {"ab", "cd"}},  // lone continuation byte
      {"ab\xE4\xB8"
       " cd",
       2,
       {"ab", "cd"}},             // truncated 3-byte sequence
      {"ab\xE4\xB8", 2, {"ab"}},  // truncated at the end
      {"ab\xC0\xAF"
       "cd",
       2,
       {"ab", "cd"}},  // overlong '/'
      {"ab\xE0\x80\xAF"
       "cd",
       3,
       {"ab", "cd"}},  // overlong 3-byte
      {"\xFF"
       "ab\xFE",
       2,
       {"ab"}},  // bytes never valid
      {"\xED\xA0\x80"
       "x",
       3,
       {"x"}},  // UTF-16 surrogate
      {"\xF4\x90\x80\x80"
       "x",
       4,
       {"x"}},                           // above U+10FFFF
      {"caf\xC3\xA9\xC3", 1, {"café"}},  // valid then truncated
  };
  for (const Case& c : cases) {
    const Tokens t = tokenize(c.bytes);
    EXPECT_EQ(t.invalid_bytes, c.invalid) << testing::PrintToString(c.bytes);
    EXPECT_EQ(t.text, c.words) << testing::PrintToString(c.bytes);
  }
}

TEST(Normalize, WithoutUnicodeFoldingKeepsCaseButStillSplits) {
  EXPECT_EQ(normalize("Hello, ＡＢＣ World", false), "Hello ＡＢＣ World");
  EXPECT_EQ(tokenize("x\xFFy", false).invalid_bytes, 1u);
}

TEST(Normalize, ClassifiesCjkByCodePoint) {
  EXPECT_TRUE(is_cjk(U'中'));
  EXPECT_TRUE(is_cjk(U'の'));
  EXPECT_TRUE(is_cjk(U'カ'));
  EXPECT_TRUE(is_cjk(U'한'));
  EXPECT_TRUE(is_cjk(0x20000));
  EXPECT_FALSE(is_cjk(U'a'));
  EXPECT_FALSE(is_cjk(U'，'));
  EXPECT_FALSE(is_cjk(0x30FB));  // katakana middle dot is punctuation
  EXPECT_FALSE(is_cjk(U'é'));
}

TEST(Normalize, ReusedNormalizerGivesTheSameResult) {
  Normalizer normalizer;
  auto joined = [&](std::string_view input) {
    const NormalizedText norm = normalizer.run(input);
    std::string out;
    for (std::size_t i = 0; i < norm.token_count; ++i)
      out.append(norm.text.substr(norm.tokens[i].offset, norm.tokens[i].size)).append("|");
    return out;
  };
  const std::string first = joined("Ｈello wörld 中文");
  EXPECT_EQ(first, "hello|wörld|中文|");
  EXPECT_EQ(joined(std::string(5000, 'x') + " Tail"), std::string(5000, 'x') + "|tail|");
  EXPECT_EQ(joined("\xFF\xFE garbage \x80"), "garbage|");
  EXPECT_EQ(joined("Ｈello wörld 中文"), first);
}

TEST(Normalize, TokensAcrossSimdBlockBoundaries) {
  // Words of every length at every offset around the 16- and 64-byte blocks.
  for (std::size_t pad = 0; pad < 70; ++pad) {
    for (std::size_t len : {1u, 15u, 16u, 17u, 63u, 64u, 65u, 130u}) {
      const std::string word(len, 'Q');
      const std::string text = std::string(pad, ' ') + word + "," + word + "é";
      EXPECT_EQ(normalize(text), std::string(len, 'q') + " " + std::string(len, 'q') + "é")
          << pad << " " << len;
    }
  }
}

TEST(Normalize, AsciiFlagOnlyForTextsWhoseTokensAreAllAscii) {
  Normalizer normalizer;
  EXPECT_TRUE(normalizer.run("Plain, ASCII text!").ascii);
  EXPECT_TRUE(normalizer.run("").ascii);
  EXPECT_FALSE(normalizer.run("caf\xc3\xa9 au lait").ascii);
  EXPECT_FALSE(normalizer.run("\xe5\xba\x8a\xe5\x89\x8d").ascii);  // 床前
  EXPECT_FALSE(normalizer.run("ok \xF0\x9F\x98\x80").ascii);       // an emoji is a symbol token
  EXPECT_TRUE(normalizer.run("again ascii").ascii);  // a reused normalizer resets the flag
}

TEST(Normalize, PaddingAfterTheTextIsReadable) {
  // Consumers copy tokens 16 bytes at a time; under ASan a missing pad is a crash.
  Normalizer normalizer;
  for (const std::string& text :
       {std::string("a"), std::string(64, 'z'), std::string("x\xc3\xa9")}) {
    const NormalizedText norm = normalizer.run(text);
    char copy[kNormalizedPadding];
    std::memcpy(copy, norm.text.data() + norm.text.size(), sizeof copy);
    EXPECT_GE(norm.token_count, 1U);
  }
}

}  // namespace
}  // namespace neardup::dedup

namespace neardup::dedup {
namespace {

std::string stripped(std::string_view text) {
  std::string buffer;
  return std::string(strip_boilerplate(text, buffer));
}

TEST(StripBoilerplate, RemovesAnAppendedUrlFromAChinesePost) {
  EXPECT_EQ(normalize(stripped("床前明月光，疑是地上霜 http://t.cn/A6xYz9")),
            normalize("床前明月光，疑是地上霜"));
  EXPECT_EQ(stripped("see www.example.com/a?b=1 now"), "see   now");
}

TEST(StripBoilerplate, RemovesHashtagsBothKinds) {
  EXPECT_EQ(normalize(stripped("春眠不觉晓 #唐诗# #早安#")), normalize("春眠不觉晓"));
  EXPECT_EQ(normalize(stripped("Good morning #MondayMotivation #fun")), normalize("Good morning"));
  EXPECT_EQ(stripped("I code in C# daily"), "I code in C# daily") << "# after a letter is no tag";
}

TEST(StripBoilerplate, RemovesAViaPrefixAndMentions) {
  EXPECT_EQ(normalize(stripped("via @newsdesk: Storm closes the north bridge")),
            normalize("Storm closes the north bridge"));
  EXPECT_EQ(normalize(stripped("RT @jdoe42: Storm closes the north bridge")),
            normalize("Storm closes the north bridge"));
  EXPECT_EQ(normalize(stripped("转发 @人民日报：今日有雨")), normalize("今日有雨"));
  EXPECT_EQ(normalize(stripped("今日有雨 //@每日一句:")), normalize("今日有雨"));
  EXPECT_EQ(normalize(stripped("Storm closes the bridge (via @CityWire)")),
            normalize("Storm closes the bridge"));
}

TEST(StripBoilerplate, KeepsEmailAddressesAndWordsThatOnlyLookLikeVia) {
  EXPECT_EQ(stripped("write to ops@example.com"), "write to ops@example.com");
  EXPECT_EQ(normalize(stripped("trivia @quizbot")), "trivia");
  EXPECT_EQ(stripped("a lone @ and a lone ＠ stay"), "a lone @ and a lone ＠ stay");
  EXPECT_EQ(normalize(stripped("＠小明同学 你好")), normalize("你好"));
}

std::string unmarked(std::string_view text) {
  std::string buffer;
  return std::string(strip_boilerplate(text, buffer, Boilerplate::repost_markers));
}

TEST(StripBoilerplate, RepostMarkersAloneRemovesTheMentionsThatMarkARepost) {
  EXPECT_EQ(normalize(unmarked("RT @jdoe42: Storm closes the north bridge")),
            normalize("Storm closes the north bridge"));
  EXPECT_EQ(normalize(unmarked("via @newsdesk: Storm closes the north bridge")),
            normalize("Storm closes the north bridge"));
  EXPECT_EQ(normalize(unmarked("Storm closes the bridge (via @CityWire)")),
            normalize("Storm closes the bridge"));
  EXPECT_EQ(normalize(unmarked("转发 @人民日报：今日有雨")), normalize("今日有雨"));
  EXPECT_EQ(normalize(unmarked("@人民日报：今日有雨")), normalize("今日有雨")) << "a colon follows";
  EXPECT_EQ(normalize(unmarked("今日有雨 //@每日一句:")), normalize("今日有雨"));
}

TEST(StripBoilerplate, RepostMarkersAloneKeepsAddressedMentionsUrlsAndHashtags) {
  EXPECT_EQ(unmarked("@bob see the north bridge"), "@bob see the north bridge");
  EXPECT_EQ(unmarked("Storm closes the bridge https://t.co/xyz #news"),
            "Storm closes the bridge https://t.co/xyz #news");
  EXPECT_EQ(normalize(unmarked("RT @bob: ask @alice https://t.co/xyz")),
            normalize("ask @alice https://t.co/xyz"));
  EXPECT_EQ(unmarked("RT @bob:"), "RT @bob:") << "nothing but the marker: kept whole";
}

TEST(StripBoilerplate, TextThatIsOnlyBoilerplateIsKept) {
  EXPECT_EQ(stripped("https://t.co/abc #news @bob"), "https://t.co/abc #news @bob");
  const std::string_view plain = "nothing to strip here";
  std::string buffer;
  EXPECT_EQ(strip_boilerplate(plain, buffer).data(), plain.data()) << "returns the text itself";
}

}  // namespace
}  // namespace neardup::dedup
