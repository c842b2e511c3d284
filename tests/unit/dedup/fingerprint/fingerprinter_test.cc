#include "dedup/fingerprint/fingerprinter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

namespace neardup::dedup {
namespace {

TextOptions with(Weighting weighting) {
  TextOptions options;
  options.weighting = weighting;
  return options;
}

Fingerprint fp(std::string_view text, const TextOptions& options = {}) {
  return Fingerprinter(options).analyze(text).fingerprint;
}

int distance(std::string_view a, std::string_view b, const TextOptions& options = {}) {
  Fingerprinter f(options);
  return hamming_distance(f.analyze(a).fingerprint, f.analyze(b).fingerprint);
}

// ~1 KB of English prose, written for this test.
constexpr std::string_view kArticle =
    "The city council met on Tuesday evening to discuss the proposed budget for the coming year. "
    "Residents filled the hall and many of them spoke about the state of the roads, the price of "
    "public transport and the long waiting lists at the municipal swimming pool. The mayor said "
    "that "
    "the council would have to choose between repairing the old bridge over the river and building "
    "a new library in the northern district, because the money available would not cover both. "
    "Several members argued that the bridge was a matter of safety and could not wait another "
    "winter, "
    "while others pointed out that the northern district had no library at all and that children "
    "there "
    "travelled for an hour to borrow a book. After three hours of debate the council agreed to ask "
    "the "
    "regional government for additional funds and to postpone the final vote until the next "
    "meeting in "
    "March. A local engineer presented a report showing cracks in two of the supporting pillars, "
    "and "
    "the room fell silent as photographs of the damage appeared on the screen behind the speakers.";

constexpr std::string_view kOther =
    "Our small team spent the weekend hiking along the coast, where the cliffs drop straight into "
    "a "
    "cold green sea and seabirds nest in every crack of the rock. We carried tents, a stove and "
    "far too "
    "much chocolate, and on the second night a storm blew in from the west so hard that we had to "
    "hold "
    "the poles with both hands until sunrise. Breakfast was instant coffee and porridge eaten in "
    "silence.";

TEST(Fingerprinter, IdenticalTextGivesIdenticalFingerprint) {
  Fingerprinter a{TextOptions{}}, b{TextOptions{}};
  const TextSummary first = a.analyze(kArticle);
  EXPECT_EQ(first.fingerprint, b.analyze(kArticle).fingerprint);
  EXPECT_EQ(first.fingerprint, a.analyze(kArticle).fingerprint);  // buffers reused
  EXPECT_GT(first.features, 100u);
  EXPECT_GT(first.chars, 800u);
  EXPECT_EQ(first.invalid_bytes, 0u);
}

TEST(Fingerprinter, CasePunctuationWhitespaceAndWidthDoNotMatter) {
  const Fingerprint base = fp("Breaking news: the ABC market rallies 3 percent today");
  EXPECT_EQ(fp("breaking NEWS the abc market rallies 3 percent today!!!"), base);
  EXPECT_EQ(fp("  Breaking\tnews --- the ABC market, rallies 3 percent... today  \n"), base);
  EXPECT_EQ(fp("Ｂｒｅａｋｉｎｇ ｎｅｗｓ： ｔｈｅ ＡＢＣ ｍａｒｋｅｔ ｒａｌｌｉｅｓ ３ "
               "ｐｅｒｃｅｎｔ ｔｏｄａｙ"),
            base);
  EXPECT_EQ(fp("ＡＢＣ"), fp("ABC"));
  EXPECT_EQ(fp("ＡＢＣ"), fp("abc"));
}

TEST(Fingerprinter, NfkcAndCombiningMarks) {
  EXPECT_EQ(fp("cafe\xCC\x81 au lait"), fp("caf\xC3\xA9 au lait"));  // e + U+0301 vs é
  EXPECT_EQ(fp("ﬁnal ofﬁce"), fp("final office"));
  EXPECT_EQ(fp("STRASSE"), fp("straße"));
  EXPECT_NE(fp("cafe au lait"), fp("café au lait"));  // accents are kept, not stripped
}

TEST(Fingerprinter, CjkTextYieldsCharacterNgrams) {
  Fingerprinter f{TextOptions{}};
  EXPECT_EQ(f.analyze("今天天气很好").features, 5u);  // 6 chars -> 5 bigrams, all distinct
  EXPECT_EQ(f.analyze("中").features, 1u);            // a 1-char run is one feature
  EXPECT_EQ(f.analyze("中，国").features, 2u);        // punctuation splits runs
  EXPECT_EQ(f.analyze("哈哈哈哈").features, 1u);      // repeated bigram counts once
  EXPECT_EQ(f.analyze("iPhone手机").features, 2u);    // a word and a 2-char run
  EXPECT_EQ(f.analyze("ひらがなカタカナ한국어").features, 10u);  // one run of 11 chars
  TextOptions trigram;
  trigram.cjk_ngram = 3;
  EXPECT_EQ(Fingerprinter(trigram).analyze("今天天气很好").features, 4u);
  EXPECT_EQ(Fingerprinter(trigram).analyze("今天").features, 1u);
}

TEST(Fingerprinter, CjkNearDuplicateIsCloserThanUnrelated) {
  const std::string a =
      "北京时间今天上午，国家统计局发布了最新一季度的经济数据，国内生产总值同比增长百分之五点三。";
  const std::string b =
      "北京时间今天上午，国家统计局公布了最新一季度的经济数据，国内生产总值同比增长百分之五点三。";
  const std::string c = "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。床前明月光，疑是地上霜。";
  EXPECT_LT(distance(a, b), distance(a, c));
  EXPECT_LE(distance(a, b), 8);
}

TEST(Fingerprinter, EmojiDoNotCrashAndCount) {
  Fingerprinter f{TextOptions{}};
  const TextSummary only = f.analyze("🍕🎉👍🏽❤️");
  EXPECT_GE(only.features, 3u);
  EXPECT_EQ(only.invalid_bytes, 0u);
  EXPECT_EQ(f.analyze("party 🎉").features, 2u);
  EXPECT_NE(f.analyze("party 🎉").fingerprint, f.analyze("party").fingerprint);
}

TEST(Fingerprinter, InvalidUtf8IsReplacedCountedAndNeverCrashes) {
  Fingerprinter f{TextOptions{}};
  EXPECT_EQ(f.analyze("hello \x80 world").invalid_bytes, 1u);
  EXPECT_EQ(f.analyze("hello \xE4\xB8").invalid_bytes, 2u);
  EXPECT_EQ(f.analyze("hello \xC0\xAF world").invalid_bytes, 2u);
  EXPECT_EQ(f.analyze(std::string("\xFF\xFF\xFF", 3)).invalid_bytes, 3u);
  EXPECT_EQ(f.analyze(std::string("\xFF\xFF\xFF", 3)).features, 0u);
  // The replacement is a separator: the words around it still count.
  EXPECT_EQ(f.analyze("hello\x80world").fingerprint, f.analyze("hello world").fingerprint);
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(f.analyze(with_nul).features, 2u);
}

TEST(Fingerprinter, EmptyOrFeaturelessTextHasNoFeatures) {
  Fingerprinter f{TextOptions{}};
  EXPECT_EQ(f.analyze("").features, 0u);
  EXPECT_EQ(f.analyze("   \t\n").features, 0u);
  EXPECT_EQ(f.analyze("!?.,;:--()[]{}").features, 0u);
  EXPECT_EQ(f.analyze("，。！？「」").features, 0u);
}

TEST(Fingerprinter, SmallEditOfLongTextIsNearAndUnrelatedTextIsFar) {
  std::string edited(kArticle);
  edited.replace(edited.find("Tuesday"), 7, "Wednesday");
  edited.replace(edited.find("three hours"), 11, "four hours");
  for (Weighting w : {Weighting::unit, Weighting::tf, Weighting::tf_idf}) {
    SCOPED_TRACE(static_cast<int>(w));
    EXPECT_LE(distance(kArticle, edited, with(w)), 3);
    EXPECT_GT(distance(kArticle, kOther, with(w)), 10);
  }
}

TEST(Fingerprinter, UnitWeightingIgnoresRepetition) {
  EXPECT_EQ(fp("spam spam spam spam eggs", with(Weighting::unit)),
            fp("spam eggs", with(Weighting::unit)));
  EXPECT_EQ(Fingerprinter(with(Weighting::unit)).analyze("spam spam spam spam eggs").features, 2u);
}

TEST(Fingerprinter, TfWeightingCountsRepetition) {
  // With many repeats, "spam" outweighs everything else and the fingerprint
  // moves towards the hash of "spam" alone.
  const std::string many =
      "spam spam spam spam spam spam spam spam spam spam spam spam eggs ham toast beans";
  const std::string once = "spam eggs ham toast beans";
  const Fingerprint alone = fp("spam");
  EXPECT_LT(hamming_distance(fp(many), alone), hamming_distance(fp(once), alone));
  EXPECT_EQ(fp(many, with(Weighting::unit)), fp(once, with(Weighting::unit)));
}

TEST(Fingerprinter, WordShinglesAddFeatures) {
  TextOptions shingles;
  shingles.word_shingle = 2;
  EXPECT_EQ(Fingerprinter(shingles).analyze("one two three four").features, 4u + 3u);
  EXPECT_EQ(Fingerprinter(TextOptions{}).analyze("one two three four").features, 4u);
  // Word order matters with shingles, not without.
  EXPECT_EQ(fp("dog bites man"), fp("man bites dog"));
  EXPECT_NE(fp("dog bites man", shingles), fp("man bites dog", shingles));
}

TEST(Fingerprinter, RejectsBadOptions) {
  TextOptions bad;
  bad.cjk_ngram = 0;
  EXPECT_THROW(Fingerprinter{bad}, std::invalid_argument);
  bad = {};
  bad.word_shingle = 9;
  EXPECT_THROW(Fingerprinter{bad}, std::invalid_argument);
  bad = with(Weighting::tf_idf);
  bad.idf_source = IdfSource::file;
  EXPECT_THROW(Fingerprinter{bad}, std::invalid_argument);  // no file named
}

class IdfFile : public testing::Test {
 protected:
  std::string write(const std::string& content) {
    const auto path =
        std::filesystem::temp_directory_path() /
        ("neardup_idf_" + std::to_string(::getpid()) + "_" + std::to_string(files_++) + ".tsv");
    std::ofstream(path) << content;
    paths_.push_back(path);
    return path.string();
  }
  TextOptions options(const std::string& path) {
    TextOptions o = with(Weighting::tf_idf);
    o.idf_source = IdfSource::file;
    o.idf_file = path;
    return o;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::filesystem::path> paths_;
  int files_ = 0;
};

std::string error_of(const TextOptions& options) {
  try {
    Fingerprinter f(options);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(IdfFile, MissingFileIsNamedInTheError) {
  const std::string message = error_of(options("/nonexistent/dir/idf.tsv"));
  EXPECT_NE(message.find("/nonexistent/dir/idf.tsv"), std::string::npos) << message;
}

TEST_F(IdfFile, BadLinesAreReportedWithFileAndLine) {
  const std::string no_tab = write("the\t1.0\n# comment\n\nbroken line\n");
  std::string message = error_of(options(no_tab));
  EXPECT_NE(message.find(no_tab + ":4:"), std::string::npos) << message;
  const std::string bad_number = write("the\t1.0\nmarket\tlots\n");
  message = error_of(options(bad_number));
  EXPECT_NE(message.find(bad_number + ":2:"), std::string::npos) << message;
  EXPECT_NE(message.find("lots"), std::string::npos) << message;
  const std::string negative = write("the\t-1\n");
  EXPECT_NE(error_of(options(negative)).find(negative + ":1:"), std::string::npos);
  const std::string empty = write("# nothing here\n");
  EXPECT_NE(error_of(options(empty)).find(empty), std::string::npos);
}

TEST_F(IdfFile, RareTermsWeighMoreAndTermsAreNormalized) {
  // "The" is listed in upper case: the file's terms are normalized like text.
  const std::string path = write("The\t0.01\nof\t0.01\nzebra\t9.0\n");
  Fingerprinter f(options(path));
  // Common words barely count, so adding many of them hardly moves the fingerprint.
  const Fingerprint zebra = f.analyze("zebra").fingerprint;
  EXPECT_EQ(f.analyze("the zebra of the of the").fingerprint, zebra);
  // A word missing from the file gets the largest idf (9.0), like zebra.
  EXPECT_GT(f.analyze("unknownword").features, 0u);
}

TEST(Fingerprinter, StreamIdfLearnsThatCommonWordsMatterLess) {
  Fingerprinter f(with(Weighting::tf_idf));
  // Teach the sketch that "filler" is in every document.
  for (int i = 0; i < 200; ++i) f.analyze("filler filler filler unique" + std::to_string(i));
  const Fingerprint target = f.analyze("rareword").fingerprint;
  const TextSummary s = f.analyze("rareword filler filler filler filler");
  EXPECT_EQ(s.features, 2u);
  EXPECT_EQ(s.fingerprint, target);
}

TEST(Fingerprinter, RandomBytesNeverCrash) {
  std::mt19937_64 rng(12345);
  Fingerprinter f{TextOptions{}};
  Fingerprinter shingled{[] {
    TextOptions o = with(Weighting::tf_idf);
    o.word_shingle = 3;
    o.cjk_ngram = 3;
    return o;
  }()};
  for (int i = 0; i < 2000; ++i) {
    std::string buffer(rng() % 300, '\0');
    // Mix of raw bytes and bytes biased towards UTF-8 lead/continuation ranges.
    for (char& c : buffer) {
      const auto r = rng();
      c = static_cast<char>(r % 4 == 0 ? 0x80 + (r >> 8) % 0x80 : (r >> 8) & 0xFF);
    }
    const TextSummary s = f.analyze(buffer);
    EXPECT_LE(s.invalid_bytes, buffer.size());
    EXPECT_LE(s.chars, buffer.size());
    EXPECT_EQ(s.fingerprint, Fingerprinter(TextOptions{}).analyze(buffer).fingerprint);
    shingled.analyze(buffer);
  }
}

}  // namespace
}  // namespace neardup::dedup
