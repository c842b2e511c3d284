#pragma once
// Text -> 64-bit SimHash: normalize, extract features, weigh, hash (xxh3), sign;
// optionally also the MinHash sketch of the same normalized text (dedup/fingerprint/sketch.h).

#include <cstdint>
#include <memory>
#include <string_view>

#include "dedup/core/options.h"
#include "dedup/core/types.h"
#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {

/// What analyze() learned about one text.
struct TextSummary {
  Fingerprint fingerprint;
  std::uint32_t features = 0;       ///< distinct features that went into the fingerprint
  std::uint32_t chars = 0;          ///< code points after normalization
  std::uint32_t invalid_bytes = 0;  ///< bytes of invalid UTF-8 that were replaced by U+FFFD
  SketchResult sketch;  ///< MinHash sketch and band keys (zero unless the sketch is enabled)
  /// A short text's exact shingle set and must-match tokens (count 0 unless
  /// sketch.recent > 0 and the text has at most kMaxExactShingles shingles). The
  /// set is of the text without its repost markers (Boilerplate::repost_markers)
  /// even when strip_boilerplate is off; the fingerprint and sketch keep them.
  ExactShingles exact;
};

/// Not thread-safe (the learned IDF sketch is updated by analyze): one per pipeline thread.
/// Never throws on any input bytes; the constructor throws std::invalid_argument
/// (bad options) or std::runtime_error (unreadable idf_file).
class Fingerprinter {
 public:
  explicit Fingerprinter(const TextOptions& options);
  /// Also computes the MinHash sketch of every text when `sketch.enabled`
  /// (dedup/fingerprint/sketch.h); throws std::invalid_argument for invalid sketch options.
  Fingerprinter(const TextOptions& options, const SketchOptions& sketch);
  ~Fingerprinter();
  Fingerprinter(Fingerprinter&&) noexcept;
  Fingerprinter& operator=(Fingerprinter&&) noexcept;

  /// O(bytes). Identical text always gives the identical fingerprint for the same
  /// options (and, with a learned IDF, the same stream history).
  TextSummary analyze(std::string_view utf8);

  /// Whether analyze() makes exact shingle sets (TextSummary::exact) at all:
  /// the sketch is enabled with sketch.recent > 0. Without them every text's
  /// set is empty, long or short. O(1).
  bool makes_exact_sets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::dedup
