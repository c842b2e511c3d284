#include "dedup/fingerprinter.h"

#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "dedup/features.h"
#include "dedup/idf.h"
#include "dedup/normalize.h"
#include "dedup/simhash.h"

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

  Impl(const TextOptions& opts, const SketchOptions& sketch)
      : options(opts), normalizer(opts.normalize), extractor(opts.cjk_ngram, opts.word_shingle) {
    if (sketch.enabled) sketcher = std::make_unique<Sketcher>(sketch);
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

TextSummary Fingerprinter::analyze(std::string_view utf8) {
  Impl& impl = *impl_;
  const NormalizedText norm = impl.normalizer.run(utf8);
  impl.counter.clear();
  impl.extractor.extract(norm, impl.counter);

  TextSummary summary;
  summary.features = static_cast<std::uint32_t>(impl.counter.size());
  summary.chars = norm.chars;
  summary.invalid_bytes = norm.invalid_bytes;
  if (summary.features == 0) return summary;
  if (impl.sketcher) summary.sketch = impl.sketcher->run(norm);

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
