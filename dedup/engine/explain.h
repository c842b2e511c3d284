#pragma once
// Why the engine calls one text a near-duplicate of another, or not: the
// decision of Engine::decide for a window that holds only `kept`, spelled out
// path by path, for `neardup compare` and for people tuning a threshold.
//
// The engine finds candidates on two paths and then verifies them:
//   SimHash  the fingerprints are within index.max_distance bits (the
//            pigeonhole index is exact, so every such entry is found);
//   band     the two sketches share an LSH band key (sketch.bands bands of
//            sketch.band_bins MinHash bins; dedup/fingerprint/sketch.h).
//   recent   both texts are short and the kept one is among the recent texts
//            (sketch.recent; dedup/index/recent_texts.h) and they share a band of
//            the recent-text index.
// With the sketch stage on, a candidate is a duplicate only when the sketches
// estimate a shingle Jaccard >= sketch.threshold; a SimHash candidate without
// a sketch (a text with no shingles) keeps the classic rule. Between two
// recent texts the exact Jaccard (>= sketch.exact_threshold) and
// text.must_match decide instead. A pair that is on no path is never compared
// by the window, whatever its similarity. explain_pair assumes the kept text
// is still among the recent ones (the newest sketch.recent short texts).

#include <cstdint>
#include <optional>
#include <string>

#include "dedup/core/options.h"
#include "dedup/fingerprint/fingerprinter.h"

namespace neardup::dedup {

enum class PairDecision {
  invalid,             ///< one of the texts would be judged invalid (see invalid_reason)
  simhash,             ///< duplicate: within max_distance bits, the classic rule (no sketches)
  simhash_verified,    ///< duplicate: within max_distance bits and the sketch estimate >= threshold
  band_verified,       ///< duplicate: a shared band and the sketch estimate >= threshold
  exact_verified,      ///< duplicate: a shared recent-text band and the exact Jaccard >=
                       ///< exact_threshold
  below_threshold,     ///< different: a candidate, but the sketch estimate < threshold (or,
                       ///< between recent texts, the exact Jaccard < exact_threshold)
  must_match_differs,  ///< different: similar enough, but each has a must-match token the
                       ///< other lacks (text.must_match)
  not_a_candidate,     ///< different: more than max_distance bits apart and no shared band
};

struct PairExplanation {
  PairDecision decision = PairDecision::not_a_candidate;
  int distance = 0;              ///< SimHash distance in bits
  bool within_distance = false;  ///< distance <= index.max_distance
  bool sketches = false;         ///< the sketch stage compares this pair (on, both have shingles)
  std::optional<double> similarity;  ///< the estimated Jaccard, when `sketches`
  std::uint32_t shared_bands = 0;    ///< bit j set: band j's keys are equal (when `sketches`)
  /// Both are recent texts: their exact similarity (ExactSimilarity::value), which the
  /// engine decides by and reports as the similarity.
  std::optional<double> exact;
  /// Both recent and the story rule gave `exact` (or the typo rule decided): the
  /// Jaccard of the whole texts (ExactSimilarity::texts, at least kStoryGuard);
  /// `exact` is then, for the story rule, that of the texts without their URLs,
  /// hashtags and mentions.
  std::optional<double> exact_whole;
  /// Both recent, `exact` below the threshold, and a typo apart (ExactSimilarity::typo):
  /// the typo rule made them near-duplicates.
  bool typo = false;
  bool shared_recent_band = false;  ///< they share a band of the recent-text index
  /// Both recent: what one of them has alone of its must-match tokens (text.must_match; both
  /// false when neither conflicts): a number, a pair of numbers or a listed word / a name.
  bool must_match_hashed = false;
  bool must_match_names = false;
  bool duplicate() const {
    return decision == PairDecision::simhash || decision == PairDecision::simhash_verified ||
           decision == PairDecision::band_verified || decision == PairDecision::exact_verified;
  }
};

/// The decision for `incoming` judged against a window holding only `kept`,
/// in the same scope (dedup.scope: entries of another scope are never
/// candidates), both analyzed with `options` (a Fingerprinter made from options.text and
/// options.sketch). Mirrors Engine::decide; tests check that the two agree.
/// (One difference, by design of the band index: the engine may also verify an
/// entry whose band key differs but shares the probe's bucket and tag bits,
/// at odds of about 2^-18 per band; see dedup/index/sketch_index.h.)
/// `kept_invalid` / `incoming_invalid`: whether either text is invalid
/// (dedup::invalid_reason non-empty). O(1); never throws.
PairExplanation explain_pair(const DedupOptions& options, const TextSummary& kept,
                             const TextSummary& incoming, bool kept_invalid = false,
                             bool incoming_invalid = false);

/// One line a person can read: which path decided, or why neither did, e.g.
/// "shares LSH band 2 of 3 and the sketch estimates 0.81 >= 0.70".
std::string describe(const PairExplanation& explanation, const DedupOptions& options);

}  // namespace neardup::dedup
