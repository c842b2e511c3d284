#pragma once
// The fingerprint schema: what a fingerprint and a sketch mean. Entries kept
// elsewhere (the window changelog, a judge request) carry the schema id of
// the options that made them, so that a reader with other options does not
// compare its texts with fingerprints or sketches that mean something else.
//
// In the schema, every option that changes the features of a text, their
// weights or the sketch:
//   normalize, cjk_ngram, word_shingle  which features a text has
//   strip_boilerplate                   (when on) what of a text has features at all
//   weighting                           their weights in the SimHash
//   idf                                 with tf_idf: "stream" (learned online) or
//                                       "file:<xxh3 of the file's bytes, 16 hex>"
//   sketch.bits, sketch.bands, sketch.band_bins, sketch.scheme
//                                       the MinHash sketch and its band keys
//                                       (dedup::kSketchScheme: the build's definition)
// Not in it, because a fingerprint means the same under any of them: the
// decision thresholds (index.max_distance, sketch.threshold,
// sketch.exact_threshold), what must match (must_match, must_match_words), the
// recent-text ring (sketch.recent), the index layout
// (index.blocks: entries are re-indexed when remembered) and the window's
// bounds and scoping (window.*; the scope travels with each entry).

#include <cstdint>
#include <string>
#include <string_view>

#include "dedup/core/options.h"

namespace neardup::dedup {

struct FingerprintSchema {
  std::uint32_t id = 0;     ///< the low 32 bits of xxh3(description); never 0
  std::string description;  ///< "key=value" pairs separated by spaces, in a fixed order
  SketchOptions sketch;     ///< the sketch options named in it

  /// The id as 8 lower-case hex digits.
  std::string hex() const;
};

/// The schema of `options`. Reads text.idf_file when weighting is tf_idf from a
/// file; throws std::runtime_error when it cannot be read. O(options + idf file).
FingerprintSchema fingerprint_schema(const DedupOptions& options);

/// 8 lower-case hex digits.
std::string schema_hex(std::uint32_t id);

/// The pairs of `theirs` and `ours` that differ, as "key theirs -> ours", comma
/// separated ("cjk_ngram 2 -> 3"); a key missing on one side reads "-". O(size).
std::string schema_differences(std::string_view theirs, std::string_view ours);

}  // namespace neardup::dedup
