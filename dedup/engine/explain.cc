#include "dedup/engine/explain.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>

#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

PairExplanation explain_pair(const DedupOptions& options, const TextSummary& kept,
                             const TextSummary& incoming, bool kept_invalid,
                             bool incoming_invalid) {
  PairExplanation e;
  e.distance = hamming_distance(kept.fingerprint, incoming.fingerprint);
  e.within_distance = e.distance <= options.index.max_distance;
  if (kept_invalid || incoming_invalid) {
    e.decision = PairDecision::invalid;
    return e;
  }
  const SketchOptions& so = options.sketch;
  // Engine::decide uses the sketch stage when the incoming text has shingles;
  // the kept entry then has a sketch only if it had shingles too.
  const bool stage = so.enabled && incoming.sketch.shingles != 0;
  e.sketches = stage && kept.sketch.shingles != 0;
  if (e.sketches) {
    e.similarity = estimate_jaccard(kept.sketch.sketch, incoming.sketch.sketch, so.bits);
    for (int band = 0; band < so.bands; ++band) {
      const auto b = static_cast<std::size_t>(band);
      if (kept.sketch.band_keys[b] == incoming.sketch.band_keys[b]) e.shared_bands |= 1U << band;
    }
  }
  if (!e.sketches) {
    e.decision = e.within_distance ? PairDecision::simhash : PairDecision::not_a_candidate;
    return e;
  }
  const bool passes = *e.similarity >= so.threshold;
  if (so.recent > 0 && !kept.exact.empty() && !incoming.exact.empty()) {
    const ExactSimilarity exact = exact_similarity(kept.exact, incoming.exact);
    e.exact = exact.value;
    e.typo = exact.typo && exact.value < so.exact_threshold;
    if (exact.value > exact.whole || e.typo) e.exact_whole = exact.texts;
    const MustMatchDifference difference = must_match_difference(kept.exact, incoming.exact);
    const bool conflict = difference.hashed || difference.names;
    e.must_match_hashed = difference.hashed;
    e.must_match_names = difference.names;
    const int bands = std::min(kRecentBands, kSketchBits / so.bits / kRecentBandBins);
    for (int band = 0; band < bands; ++band)
      e.shared_recent_band |= kept.exact.band_key(band) == incoming.exact.band_key(band);
    // Engine::decide_exact: every candidate of any path (SimHash, a sketch
    // band, a recent-text band) is judged by the exact sets, whatever the estimate.
    const bool sketch_match = passes && (e.within_distance || e.shared_bands != 0);
    const bool exact_passes = exact_duplicate(exact, so.exact_threshold);
    if (!e.within_distance && e.shared_bands == 0 && !e.shared_recent_band)
      e.decision = PairDecision::not_a_candidate;
    else if (!exact_passes)
      e.decision = PairDecision::below_threshold;
    else if (conflict)
      e.decision = PairDecision::must_match_differs;
    else if (sketch_match)
      e.decision = e.within_distance ? PairDecision::simhash_verified : PairDecision::band_verified;
    else
      e.decision = PairDecision::exact_verified;
    return e;
  }
  if (e.within_distance)
    e.decision = passes ? PairDecision::simhash_verified : PairDecision::below_threshold;
  else if (e.shared_bands != 0)
    e.decision = passes ? PairDecision::band_verified : PairDecision::below_threshold;
  else
    e.decision = PairDecision::not_a_candidate;
  return e;
}

std::string describe(const PairExplanation& explanation, const DedupOptions& options) {
  // Three decimals rounded half up, as `neardup scan` and the
  // neardup-similarity header print them (0.8125 -> 0.813, where %.3f alone
  // rounds to even).
  PairExplanation e = explanation;
  if (e.similarity) e.similarity = std::floor(*e.similarity * 1000.0 + 0.5) / 1000.0;
  const int k = options.index.max_distance;
  const double threshold = options.sketch.threshold;
  const int bands = options.sketch.bands;
  char buffer[512];
  // Between two recent short texts the exact Jaccard decides (and is the similarity);
  // the story rule's figure is the one without URLs, hashtags and mentions.
  auto rounded = [](double x) { return std::floor(x * 1000.0 + 0.5) / 1000.0; };
  // (the figure that made them near-duplicates, with its comparison)
  auto exact_figure = [&]() -> std::string {
    char figure[192];
    if (e.typo)
      std::snprintf(figure, sizeof figure,
                    "the same words but one, a typo apart (exact Jaccard %.3f < %.2f, whole "
                    "texts %.3f >= %.2f)",
                    rounded(*e.exact), options.sketch.exact_threshold, rounded(*e.exact_whole),
                    kStoryGuard);
    else if (e.exact_whole)
      std::snprintf(figure, sizeof figure,
                    "exact Jaccard without URLs, hashtags and mentions %.3f >= %.2f (whole texts "
                    "%.3f >= %.2f)",
                    rounded(*e.exact), options.sketch.exact_threshold, rounded(*e.exact_whole),
                    kStoryGuard);
    else
      std::snprintf(figure, sizeof figure, "exact Jaccard %.3f >= %.2f", rounded(*e.exact),
                    options.sketch.exact_threshold);
    return figure;
  };
  auto exact_part = [&]() -> std::string {
    return e.exact ? "; both recent short texts: " + exact_figure() : "";
  };
  auto band_list = [&] {
    std::string list;
    for (int band = 0; band < bands; ++band)
      if ((e.shared_bands >> band) & 1)
        list += (list.empty() ? "" : ", ") + std::to_string(band + 1);
    return list;
  };
  switch (e.decision) {
    case PairDecision::invalid:
      return "one of the texts is invalid";
    case PairDecision::simhash:
      std::snprintf(buffer, sizeof buffer,
                    "within k=%d bits (distance %d); no sketch to compare, so the distance decides",
                    k, e.distance);
      return buffer;
    case PairDecision::simhash_verified:
      std::snprintf(
          buffer, sizeof buffer,
          "a SimHash candidate (distance %d <= k=%d) and the sketch estimates %.3f >= %.2f",
          e.distance, k, *e.similarity, threshold);
      return buffer + exact_part();
    case PairDecision::band_verified:
      std::snprintf(buffer, sizeof buffer,
                    "shares LSH band%s %s of %d (distance %d > k=%d) and the sketch estimates "
                    "%.3f >= %.2f",
                    std::popcount(e.shared_bands) > 1 ? "s" : "", band_list().c_str(), bands,
                    e.distance, k, *e.similarity, threshold);
      return buffer + exact_part();
    case PairDecision::exact_verified:
      std::snprintf(buffer, sizeof buffer, "two recent short texts, a candidate (%s), %s",
                    e.shared_recent_band ? "a shared recent-text band"
                    : e.within_distance  ? "within k bits, the estimate below the threshold"
                                         : "a shared LSH band, the estimate below the threshold",
                    exact_figure().c_str());
      return buffer;
    case PairDecision::must_match_differs:
      std::snprintf(buffer, sizeof buffer,
                    "%s, but each has a must-match token the other "
                    "lacks (dedup.must_match %s%s): %s",
                    exact_figure().c_str(),
                    options.text.must_match == MustMatch::none      ? "none"
                    : options.text.must_match == MustMatch::numbers ? "numbers"
                    : options.text.must_match == MustMatch::names   ? "names"
                                                                    : "numbers_and_names",
                    options.text.must_match_words.empty() ? "" : ", must_match_words",
                    e.must_match_names && e.must_match_hashed
                        ? "a number or listed word, and a name more than a typo apart"
                    : e.must_match_names ? "a name more than a typo from each of the other's"
                                         : "a number, two numbers in another order, or a listed "
                                           "word");
      return buffer;
    case PairDecision::below_threshold:
      if (e.exact)
        std::snprintf(buffer, sizeof buffer,
                      "two recent short texts, but their exact Jaccard %.3f < %.2f",
                      rounded(*e.exact), options.sketch.exact_threshold);
      else if (e.within_distance)
        std::snprintf(buffer, sizeof buffer,
                      "a SimHash candidate (distance %d <= k=%d), but the sketch estimates "
                      "%.3f < %.2f",
                      e.distance, k, *e.similarity, threshold);
      else
        std::snprintf(buffer, sizeof buffer,
                      "a candidate through LSH band%s %s of %d, but the sketch estimates %.3f < "
                      "%.2f",
                      std::popcount(e.shared_bands) > 1 ? "s" : "", band_list().c_str(), bands,
                      *e.similarity, threshold);
      return buffer;
    case PairDecision::not_a_candidate:
      if (e.sketches)
        std::snprintf(buffer, sizeof buffer,
                      "never compared: distance %d > k=%d bits and no shared LSH band (of %d), so "
                      "the window does not find it (the sketch would estimate %.3f)",
                      e.distance, k, bands, *e.similarity);
      else
        std::snprintf(buffer, sizeof buffer, "distance %d > k=%d bits", e.distance, k);
      return buffer;
  }
  return "unknown";
}

}  // namespace neardup::dedup
