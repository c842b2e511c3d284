// `neardup fingerprint` and `neardup compare`: the engine on one or two texts.
// compare's exit status is its answer, as cmp(1)'s: 0 near-duplicates, 1 not,
// 2 trouble (a usage or configuration error, a text that cannot be judged).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "app/cli.h"
#include "config/config.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/explain.h"
#include "dedup/fingerprint/fingerprinter.h"
#include "stream/records/json_out.h"

namespace neardup::app {
namespace {

constexpr const char* kFingerprintHelp = R"(usage: neardup fingerprint [--config FILE] [TEXT|-]

Prints the 64-bit SimHash of TEXT (or of stdin with '-' or no TEXT) as 16 hex
digits, with the dedup settings of --config (defaults otherwise).

example:
  neardup fingerprint "Breaking: markets rally as rates fall"
  echo "some text" | neardup fingerprint -
)";

constexpr const char* kCompareHelp = R"(usage: neardup compare [--config FILE] A B

Judges B against a window holding only A, exactly as `scan` and `run` would
with the same dedup settings, and prints both fingerprints, their SimHash
distance (bits of 64), the MinHash sketch's estimated shingle Jaccard and the
LSH bands they share (when the sketch stage is on), and the verdict with the
path that decided it: a SimHash candidate (within k bits) or a shared band,
verified by the sketch threshold; for two short texts, the recent-text stage's
exact shingle Jaccard, that of the texts without their URLs, hashtags and
mentions (the story rule), or one typo between their words (the typo rule),
each when the whole texts share at least 0.6; or why the pair is not a
near-duplicate (below the threshold, or never compared: more than k bits
apart and no shared band, whatever the similarity). A and B are texts, not
records: the input section (fields, input.max_bytes) and dedup.scope do not
apply.

exit status, as cmp(1) and diff(1): 0 the texts are near-duplicates; 1 they
are not; 2 a usage or configuration error, or a text with nothing to judge
(no words or characters: the verdict line says "invalid").

example:
  neardup compare "Markets rally as rates fall" "Markets rally as rates fall!!"
  if neardup compare "$old" "$new" >/dev/null; then echo "near-duplicate"; fi
)";

constexpr int kNearDuplicates = 0;
constexpr int kDifferent = 1;
constexpr int kTrouble = 2;  // as a usage error (app/main.cc)

config::Config load(const cli::Args& args) {
  config::Config config =
      args.get("config") ? config::load_config(*args.get("config")) : config::Config{};
  cli::apply_env(config);
  return config;
}

int run_fingerprint(std::span<const std::string> raw_args) {
  cli::Args args(raw_args, {"config"});
  if (args.positionals().size() > 1) throw cli::UsageError("expected one TEXT (quote it) or '-'");
  std::string text;
  if (args.positionals().empty() || args.positionals()[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (!text.empty() && text.back() == '\n') text.pop_back();
  } else {
    text = args.positionals()[0];
  }
  dedup::Fingerprinter fingerprinter(load(args).dedup.text);
  const auto summary = fingerprinter.analyze(text);
  if (summary.features == 0) {
    std::cerr << "neardup fingerprint: the text has no words or characters to fingerprint\n";
    return 1;
  }
  std::cout << summary.fingerprint.hex() << "\n";
  return 0;
}

int run_compare(std::span<const std::string> raw_args) {
  cli::Args args(raw_args, {"config"});
  if (args.positionals().size() != 2) throw cli::UsageError("expected two texts A and B");
  const config::Config config = load(args);
  dedup::Engine engine(config.dedup);
  const dedup::Analysis a = engine.analyze(args.positionals()[0]);
  const dedup::Analysis b = engine.analyze(args.positionals()[1]);
  const dedup::Verdict first = engine.decide(a, dedup::EventTime{0}, dedup::RecordRef{1});
  const dedup::Verdict second = engine.decide(b, dedup::EventTime{0}, dedup::RecordRef{2});
  std::printf("a          %s (%u features)\nb          %s (%u features)\n",
              a.summary.fingerprint.hex().c_str(), a.summary.features,
              b.summary.fingerprint.hex().c_str(), b.summary.features);
  const dedup::PairExplanation why =
      dedup::explain_pair(config.dedup, a.summary, b.summary, !dedup::invalid_reason(a).empty(),
                          !dedup::invalid_reason(b).empty());
  std::printf("distance   %d bits (k=%d)\n", why.distance, config.dedup.index.max_distance);
  const auto& sketch = config.dedup.sketch;
  if (why.sketches) {
    std::string similarity;
    if (why.exact) {  // two recent short texts: the exact figure decides, and scan prints it
      stream::append_similarity(similarity, *why.exact);
      if (why.typo) {
        std::string whole;
        stream::append_similarity(whole, *why.exact_whole);
        std::printf(
            "similarity %s (exact shingle Jaccard of two recent short texts, below the "
            "threshold %.2f, but their words are the same but one, a typo apart, and the "
            "whole texts share %s >= %.2f)\n",
            similarity.c_str(), sketch.exact_threshold, whole.c_str(), dedup::kStoryGuard);
      } else if (why.exact_whole) {
        std::string whole;
        stream::append_similarity(whole, *why.exact_whole);
        std::printf(
            "similarity %s (exact shingle Jaccard of two recent short texts without their "
            "URLs, hashtags and mentions, as the whole texts share %s >= %.2f; the threshold "
            "is %.2f)\n",
            similarity.c_str(), whole.c_str(), dedup::kStoryGuard, sketch.exact_threshold);
      } else {
        std::printf(
            "similarity %s (exact shingle Jaccard of two recent short texts; the threshold "
            "is %.2f)\n",
            similarity.c_str(), sketch.exact_threshold);
      }
    } else {
      stream::append_similarity(similarity, *why.similarity);  // as scan prints it
      std::printf("similarity %s (estimated shingle Jaccard; the threshold is %.2f)\n",
                  similarity.c_str(), sketch.threshold);
    }
    std::string shared;
    for (int band = 0; band < sketch.bands; ++band)
      if ((why.shared_bands >> band) & 1)
        shared += (shared.empty() ? "" : ", ") + std::to_string(band + 1);
    std::printf("bands      %s of %d shared\n", shared.empty() ? "none" : shared.c_str(),
                sketch.bands);
  }
  if (first.kind == dedup::VerdictKind::invalid || second.kind == dedup::VerdictKind::invalid) {
    std::printf("verdict    invalid: %s\n",
                std::string(first.kind == dedup::VerdictKind::invalid ? first.error : second.error)
                    .c_str());
    return kTrouble;
  }
  const bool duplicate = second.kind == dedup::VerdictKind::duplicate;
  std::printf("verdict    %s: %s\n", duplicate ? "near-duplicate" : "different",
              dedup::describe(why, config.dedup).c_str());
  if (duplicate != why.duplicate()) {
    // explain_pair mirrors Engine::decide; a disagreement is a bug (or the
    // band index's rare bucket-and-tag alias), said rather than hidden.
    std::fprintf(stderr, "neardup compare: the window's verdict and the explanation disagree\n");
    return kTrouble;
  }
  return duplicate ? kNearDuplicates : kDifferent;
}

const cli::Registrar kFingerprint{
    {"fingerprint", "print the SimHash of a text", kFingerprintHelp, run_fingerprint}};
const cli::Registrar kCompare{
    {"compare", "judge B against A: distance, similarity, verdict", kCompareHelp, run_compare}};

}  // namespace
}  // namespace neardup::app
