#include "dedup/fingerprint/fingerprinter.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "dedup/fingerprint/simhash.h"
#include "dedup/text/features.h"
#include "dedup/text/idf.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup {
namespace {

// 1 + ln(tf) in fixed point, precomputed for the common small counts.
struct TfWeights {
  std::array<std::uint32_t, 256> table;
  TfWeights() {
    table[0] = 0;
    for (std::size_t tf = 1; tf < table.size(); ++tf)
      table[tf] = quantize_weight(1.0 + std::log(static_cast<double>(tf)));
  }
  std::uint32_t operator()(std::uint32_t tf) const {
    return tf < table.size() ? table[tf] : quantize_weight(1.0 + std::log(static_cast<double>(tf)));
  }
};

double damped_tf(std::uint32_t tf) { return 1.0 + std::log(static_cast<double>(tf)); }

// The must-match tokens of a text (TextOptions::must_match) into `exact`, as 32-bit keys
// (dedup/fingerprint/sketch.h, must_match_conflict):
// - numbers: the normalized tokens with a digit (a CJK run keeps its digits apart: "540人" is
//   "540"), each a hashed key, and each two numbers in a row a key of the pair, so
//   "Arsenal 2, Celtic 3" and "Arsenal 3, Celtic 2" differ (a number added before or after
//   the others keeps every key of the text without it);
// - names: the ASCII words of `raw` with a capital first letter and a lower-case letter after
//   it ("Perth", not "UTC" or "BREAKING"), except the first word of a sentence (the text's first
//   word, one after '.', '!' or '?', or the first of a line) unless a ':' follows it ("Perth:
//   ..."). A name's key is
//   its letters (a 26-bit set) and length, so that a typo in it can be told from another name;
// - listed words (`words`, normalized): present when the normalized text has one as a whole
//   word, or, for a CJK word, anywhere inside a CJK run; hashed keys.
// Hashed keys have the top bit clear, names have it set.
void must_match_keys(MustMatch kind, const std::vector<std::string>& words, std::string_view raw,
                     const NormalizedText& norm, ExactShingles& exact) {
  std::array<std::uint32_t, 4 * kMaxMustMatch> keys{};
  std::size_t n = 0;
  auto add = [&](std::uint32_t key) {
    if (n < keys.size()) keys[n++] = key;
  };
  auto hashed = [](std::string_view token) {
    return static_cast<std::uint32_t>(feature_hash(token)) & ~kNameKeyBit;
  };
  for (const std::string& word : words) {
    for (std::size_t i = 0; i < norm.token_count; ++i) {
      const Token& t = norm.tokens[i];
      const std::string_view token = norm.text.substr(t.offset, t.size);
      if (t.kind == TokenKind::cjk ? token.find(word) != std::string_view::npos : token == word) {
        add(hashed(word));
        break;
      }
    }
  }
  if (kind == MustMatch::numbers || kind == MustMatch::numbers_and_names) {
    std::uint64_t previous = 0;
    bool after_number = false;
    for (std::size_t i = 0; i < norm.token_count; ++i) {
      const Token& t = norm.tokens[i];
      const std::string_view token = norm.text.substr(t.offset, t.size);
      if (t.kind == TokenKind::word &&
          token.find_first_of("0123456789") != std::string_view::npos) {
        const std::uint64_t h = feature_hash(token);
        add(static_cast<std::uint32_t>(h) & ~kNameKeyBit);
        if (after_number)
          add(static_cast<std::uint32_t>(((previous * 0x9E3779B97F4A7C15ULL) ^ h) >> 32) &
              ~kNameKeyBit);
        previous = h;
        after_number = true;
      }
    }
  }
  if (kind == MustMatch::names || kind == MustMatch::numbers_and_names) {
    auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
    auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
    bool sentence_start = true;  // the next word begins a sentence
    for (std::size_t at = 0; at < raw.size();) {
      const char c = raw[at];
      const bool start = at == 0 || !(lower(raw[at - 1]) || upper(raw[at - 1]) ||
                                      (raw[at - 1] >= '0' && raw[at - 1] <= '9'));
      std::size_t end = at;
      while (end < raw.size() && (lower(raw[end]) || upper(raw[end]))) ++end;
      if (end == at) {
        if (c == '.' || c == '!' || c == '?' || c == '\n')
          sentence_start = true;
        else if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '"' && c != '\'' &&
                 c != '(')
          sentence_start = false;
        ++at;
        continue;
      }
      const bool first = sentence_start;
      sentence_start = false;
      if (start && end - at >= 2 && upper(raw[at]) && lower(raw[at + 1]) &&
          (!first || (end < raw.size() && raw[end] == ':'))) {
        std::uint32_t letters = 0;
        for (std::size_t k = at; k < end; ++k) letters |= 1U << ((raw[k] | 0x20) - 'a');
        const auto length = static_cast<std::uint32_t>(std::min<std::size_t>(end - at, 31));
        add(kNameKeyBit | (length << 26) | letters);
      }
      at = end;
    }
  }
  std::sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
  n = static_cast<std::size_t>(
      std::unique(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n)) - keys.begin());
  exact.set_keys(std::span<const std::uint32_t>(keys.data(), n));
}

}  // namespace

struct Fingerprinter::Impl {
  TextOptions options;
  Normalizer normalizer;
  FeatureExtractor extractor;
  FeatureCounter counter;
  TfWeights tf_weights;
  std::vector<std::uint32_t> weights;
  std::vector<double> idf;
  std::unique_ptr<StreamIdf> stream_idf;
  std::unique_ptr<FileIdf> file_idf;
  std::unique_ptr<Sketcher> sketcher;
  bool exact_sets = false;                    // sketch.enabled && sketch.recent > 0
  std::string stripped;                       // the text without boilerplate (strip_boilerplate)
  std::string keys_text;                      // the same for the must-match tokens alone
  std::string unmarked;                       // the text without its repost markers
  ExactShingles story_exact;                  // the exact set of the text without boilerplate
  std::string words;                          // its words, joined by spaces (ASCII texts)
  std::vector<std::string> must_match_words;  // normalized, from options.must_match_words

  /// Reads options.must_match_words; throws std::runtime_error when it cannot.
  void load_words(const std::string& path);

  Impl(const TextOptions& opts, const SketchOptions& sketch)
      : options(opts), normalizer(opts.normalize), extractor(opts.cjk_ngram, opts.word_shingle) {
    if (sketch.enabled) sketcher = std::make_unique<Sketcher>(sketch);
    exact_sets = sketch.enabled && sketch.recent > 0;
    if (!options.must_match_words.empty()) load_words(options.must_match_words);
    if (options.weighting != Weighting::tf_idf) return;
    if (options.idf_source == IdfSource::stream) {
      stream_idf = std::make_unique<StreamIdf>();
      return;
    }
    if (options.idf_file.empty())
      throw std::invalid_argument("text.idf_file is required when idf_source is file");
    // A term of the file is normalized exactly like text, so "The" and "the"
    // name the same feature; several words name a shingle.
    Normalizer term_normalizer(options.normalize);
    std::vector<std::uint64_t> word_hashes;
    file_idf =
        std::make_unique<FileIdf>(options.idf_file, [&](std::string_view term, std::uint64_t& key) {
          const NormalizedText norm = term_normalizer.run(term);
          if (norm.token_count == 0) return false;
          if (norm.token_count == 1) {
            const Token& t = norm.tokens[0];
            key = feature_hash(norm.text.substr(t.offset, t.size));
            return true;
          }
          word_hashes.clear();
          for (std::size_t i = 0; i < norm.token_count; ++i) {
            const Token& t = norm.tokens[i];
            word_hashes.push_back(feature_hash(norm.text.substr(t.offset, t.size)));
          }
          key = shingle_hash(word_hashes);
          return true;
        });
  }
};

void Fingerprinter::Impl::load_words(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read must_match_words file '" + path +
                             "': " + std::strerror(errno));
  Normalizer word_normalizer(options.normalize);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with('#')) continue;  // a comment
    const NormalizedText norm = word_normalizer.run(line);
    if (norm.token_count == 1)
      must_match_words.emplace_back(norm.text.substr(norm.tokens[0].offset, norm.tokens[0].size));
  }
  std::sort(must_match_words.begin(), must_match_words.end());
  must_match_words.erase(std::unique(must_match_words.begin(), must_match_words.end()),
                         must_match_words.end());
}

Fingerprinter::Fingerprinter(const TextOptions& options)
    : Fingerprinter(options, [] {
        SketchOptions off;
        off.enabled = false;
        return off;
      }()) {}
Fingerprinter::Fingerprinter(const TextOptions& options, const SketchOptions& sketch)
    : impl_(std::make_unique<Impl>(options, sketch)) {}
Fingerprinter::~Fingerprinter() = default;
Fingerprinter::Fingerprinter(Fingerprinter&&) noexcept = default;
Fingerprinter& Fingerprinter::operator=(Fingerprinter&&) noexcept = default;

bool Fingerprinter::makes_exact_sets() const { return impl_->exact_sets; }

TextSummary Fingerprinter::analyze(std::string_view text) {
  Impl& impl = *impl_;
  const std::string_view utf8 =
      impl.options.strip_boilerplate ? strip_boilerplate(text, impl.stripped) : text;
  const NormalizedText norm = impl.normalizer.run(utf8);
  impl.counter.clear();
  impl.extractor.extract(norm, impl.counter);

  TextSummary summary;
  summary.features = static_cast<std::uint32_t>(impl.counter.size());
  summary.chars = norm.chars;
  summary.invalid_bytes = norm.invalid_bytes;
  if (summary.features == 0) return summary;
  if (impl.sketcher) {
    summary.sketch = impl.sketcher->run(norm);
    impl.sketcher->exact_of_last(summary.exact);
    // A short text's exact set (the recent-text stage) leaves out the mentions that
    // mark a repost ("RT @x:", "//@x:"): they say who passed the text on, not what it
    // says. The window's fingerprint and sketch keep them (the schema is unchanged).
    bool renormalized = false;
    const bool look = !summary.exact.empty() && !impl.options.strip_boilerplate;
    const bool has_at = look && (utf8.find('@') != std::string_view::npos ||
                                 utf8.find("\xef\xbc\xa0") != std::string_view::npos);  // ＠
    if (has_at) {
      const std::string_view story =
          strip_boilerplate(utf8, impl.unmarked, Boilerplate::repost_markers);
      if (story.data() != utf8.data()) {
        const std::size_t whole = summary.exact.hashes().size();
        impl.sketcher->run(impl.normalizer.run(story));
        impl.sketcher->exact_of_last(summary.exact);
        const std::size_t left = summary.exact.hashes().size();
        summary.exact.set_markers(whole > left ? whole - left : 0);
        renormalized = true;
      }
    }
    // The story: the text without its URLs, hashtags and mentions. Its shingles
    // decide with the story rule (exact_similarity), and its tokens are the ones
    // that must match: a handle's or a link's digits ("@jdoe42", "t.co/x9Y2") say
    // nothing of the story. (norm is not used after this: the features and the
    // sketch are taken.)
    const bool may_have_boilerplate =
        look && !summary.exact.empty() &&
        (has_at || utf8.find('#') != std::string_view::npos ||
         utf8.find("://") != std::string_view::npos || utf8.find("www.") != std::string_view::npos);
    const std::string_view story =
        may_have_boilerplate ? strip_boilerplate(utf8, impl.keys_text) : utf8;
    std::optional<NormalizedText> story_norm;
    if (story.data() != utf8.data()) {
      story_norm = impl.normalizer.run(story);
      impl.sketcher->run(*story_norm);
      impl.sketcher->exact_of_last(impl.story_exact);
      summary.exact.mark_boilerplate(impl.story_exact);
    }
    if (!summary.exact.empty()) {
      if (!story_norm && renormalized) story_norm = impl.normalizer.run(story);
      const NormalizedText& story_text = story_norm ? *story_norm : norm;
      // An ASCII story's words, for the typo rule.
      if (story_text.ascii) {
        impl.words.clear();
        for (std::size_t i = 0; i < story_text.token_count && impl.words.size() <= kMaxWordBytes;
             ++i) {
          const Token& t = story_text.tokens[i];
          if (i != 0) impl.words += ' ';
          impl.words.append(story_text.text.substr(t.offset, t.size));
        }
        summary.exact.set_words(impl.words);
      }
      if (impl.options.must_match != MustMatch::none || !impl.must_match_words.empty())
        must_match_keys(impl.options.must_match, impl.must_match_words, story, story_text,
                        summary.exact);
    }
  }

  const auto hashes = impl.counter.hashes();
  const auto counts = impl.counter.counts();
  if (impl.options.weighting == Weighting::unit) {
    summary.fingerprint = simhash(hashes);
    return summary;
  }
  impl.weights.resize(hashes.size());
  if (impl.options.weighting == Weighting::tf) {
    for (std::size_t i = 0; i < hashes.size(); ++i) impl.weights[i] = impl.tf_weights(counts[i]);
  } else if (impl.stream_idf) {
    impl.idf.resize(hashes.size());
    impl.stream_idf->weigh_and_learn(hashes, impl.idf);
    for (std::size_t i = 0; i < hashes.size(); ++i)
      impl.weights[i] = quantize_weight(damped_tf(counts[i]) * impl.idf[i]);
  } else {
    for (std::size_t i = 0; i < hashes.size(); ++i)
      impl.weights[i] = quantize_weight(damped_tf(counts[i]) * impl.file_idf->idf(hashes[i]));
  }
  summary.fingerprint = simhash(hashes, impl.weights);
  return summary;
}

}  // namespace neardup::dedup
