#pragma once
// A compact similarity sketch of a text: b-bit one-permutation MinHash over the
// text's character shingles, plus LSH band keys derived from the same minima.
//
// Shingles are exactly the ones of the quality evaluation's ground truth
// (bench/quality/ground_truth.py): the normalized tokens joined by single
// spaces, cut into character 5-grams; when more than half of the characters
// are CJK, the tokens concatenated without spaces and cut into 2-grams. A text
// shorter than n characters is one shingle. Symbol tokens (emoji) are left out.
//
// One-permutation MinHash (Li, Owen, Zhang 2012): every shingle hash falls in
// one of `bins` bins by its top bits and the bin keeps the smallest low 32 bits;
// an empty bin is filled from the first filled bin of its own fixed random
// order of the bins, plus an offset per step (Shrivastava 2017, "optimal
// densification": the sources of neighbouring empty bins are independent). Each bin then keeps
// `bits` bits (b-bit MinHash, Li, Koenig 2010); bins * bits = 128, so a sketch is 16 bytes whatever
// the setting. Two bins agree with probability J + (1 - J) 2^-bits.
//
// Band keys: band j hashes the full 32-bit minima of `band_bins` bins spread
// over the sketch (j, j + bins/band_bins, ...); two texts share band j with
// probability ~J^band_bins.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/core/options.h"
#include "dedup/kernels/sketch_kernels.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup {

inline constexpr int kSketchBits = 128;
/// Which definition of the sketch this build computes, for sketches kept
/// elsewhere (the window changelog): 1 filled empty bins by rotation (the next
/// filled bin to the right), 2 from each bin's own random order (optimal
/// densification). Sketches of different schemes must not be compared.
inline constexpr int kSketchScheme = 2;
inline constexpr int kMaxSketchBands = 8;

/// 128 bits: `bins` codes of `bits` bits, bin i at bits [i*bits, (i+1)*bits).
struct Sketch {
  std::array<std::uint64_t, 2> words{};
  friend constexpr bool operator==(const Sketch&, const Sketch&) = default;
};

/// Throws std::invalid_argument with a reason unless bits is 1, 2, 4 or 8,
/// 0 <= bands <= kMaxSketchBands, 1 <= band_bins, bands * band_bins <= bins and
/// 0 < threshold <= 1. Disabled options are not checked.
void validate(const SketchOptions& options);

/// Estimated Jaccard similarity of the texts behind two sketches made with the
/// same `bits`, in [0, 1]: (agreeing share - 2^-bits) / (1 - 2^-bits). O(1).
double estimate_jaccard(const Sketch& a, const Sketch& b, int bits);

/// What Sketcher::run computes for one text.
struct SketchResult {
  Sketch sketch;
  std::array<std::uint64_t, kMaxSketchBands> band_keys{};  ///< the first `bands` are set
  std::uint32_t shingles = 0;  ///< shingles hashed (with repeats); 0 for a text with no tokens
};

/// A short text's exact shingle set, for the recent-text cache
/// (dedup/index/recent_texts.h), with the band keys of that cache's index and the
/// text's must-match tokens (TextOptions::must_match), in one heap block.
/// Empty, without an allocation, for a text that is not kept: more than
/// kMaxExactShingles shingles, or SketchOptions::recent = 0. Made by
/// Sketcher::exact_of_last. (kMaxExactShingles is in dedup/kernels/sketch_kernels.h,
/// beside the kernel that sorts a set.)
/// Band keys of the recent-text index: kRecentBandBins minima each (fewer bands
/// when the sketch has fewer than kRecentBands * kRecentBandBins bins).
inline constexpr int kRecentBands = 8;
inline constexpr int kRecentBandBins = 3;
/// The most bytes of words an exact set keeps (ExactShingles::words): those of a text
/// of kMaxExactShingles 5-grams.
inline constexpr std::size_t kMaxWordBytes = 132;
/// Must-match tokens kept per text; more are ignored.
inline constexpr std::size_t kMaxMustMatch = 16;
/// A must-match key with this bit set is a name: its length (5 bits) and the set of its
/// letters (26 bits), compared by must_match_conflict up to a typo; other keys are hashes
/// that must be equal.
inline constexpr std::uint32_t kNameKeyBit = 0x80000000U;
class ExactShingles {
 public:
  bool empty() const { return data_.empty(); }
  /// The distinct shingles, sorted: bits 31-1 of each shingle hash's low 32
  /// bits, and bit 0 (kBoilerplateShingle) set for a shingle of the text's URLs,
  /// hashtags or mentions (one the text without them lacks, mark_boilerplate).
  std::span<const std::uint32_t> hashes() const {
    return empty() ? std::span<const std::uint32_t>{}
                   : std::span<const std::uint32_t>(data_).subspan(kHashes, data_[0] & 0xffff);
  }
  /// The words of the text without its boilerplate, normalized and joined by single
  /// spaces, for the typo rule (exact_similarity); empty unless the text is ASCII and
  /// they take at most kMaxWordBytes.
  std::string_view words() const {
    if (empty() || (data_[0] >> 16) == 0) return {};
    return {reinterpret_cast<const char*>(data_.data() + kHashes + (data_[0] & 0xffff)),
            data_[0] >> 16};
  }
  /// How many of hashes() are boilerplate shingles.
  std::size_t boilerplate() const { return empty() ? 0 : data_[1] >> 16; }
  /// How many more shingles the whole text has than this set: those of its repost
  /// markers ("RT @x:", left out of the set), at most 255.
  std::size_t markers() const { return empty() ? 0 : (data_[1] >> 8) & 0xff; }
  /// The must-match token hashes, sorted and distinct.
  std::span<const std::uint32_t> keys() const {
    return empty() ? std::span<const std::uint32_t>{}
                   : std::span<const std::uint32_t>(data_).subspan(kKeys, data_[1] & 0xff);
  }
  std::uint64_t band_key(int band) const {
    const auto at = kBandKeys + 2 * static_cast<std::size_t>(band);
    return empty() ? 0 : (std::uint64_t{data_[at]} << 32) | data_[at + 1];
  }
  /// `hashes`: sorted, distinct, not empty (an odd one is a boilerplate shingle).
  void assign(std::span<const std::uint32_t> hashes,
              const std::array<std::uint64_t, kRecentBands>& band_keys);
  /// Marks the shingles that `story` (the set of this text without its URLs,
  /// hashtags and mentions, not empty) lacks as boilerplate, and takes the second
  /// half of its band keys: a text and its source with a link added share those.
  /// For a non-empty set without marks. O(count).
  void mark_boilerplate(const ExactShingles& story);
  /// `keys`: sorted, distinct, at most kMaxMustMatch; for a non-empty set.
  void set_keys(std::span<const std::uint32_t> keys);
  /// For a non-empty set; more than 255 counts as 255.
  void set_markers(std::size_t count);
  /// For a non-empty set; more than kMaxWordBytes bytes keep none.
  void set_words(std::string_view words);
  void clear() { data_.clear(); }
  /// Heap bytes held (reused by the next assign).
  std::size_t capacity_bytes() const { return data_.capacity() * sizeof(std::uint32_t); }

 private:
  // [shingle count | word bytes << 16, key count | markers << 8 | boilerplate count << 16,
  //  band keys (two words each), keys, hashes, word bytes (4 a word)]
  static constexpr std::size_t kBandKeys = 2;
  static constexpr std::size_t kKeys = kBandKeys + 2 * kRecentBands;
  static constexpr std::size_t kHashes = kKeys + kMaxMustMatch;

 public:
  /// The most capacity_bytes() reaches: a set of kMaxExactShingles (a copy
  /// allocates what it holds; a reused block keeps the largest it held).
  static constexpr std::size_t kMaxBytes =
      (kHashes + kMaxExactShingles) * sizeof(std::uint32_t) + kMaxWordBytes + 1;

 private:
  std::vector<std::uint32_t> data_;
};

/// The bit of a shingle hash in ExactShingles that marks a boilerplate shingle.
inline constexpr std::uint32_t kBoilerplateShingle = 1;
/// The story rule's guard: two short texts whose sets, boilerplate left out, are
/// near-duplicates are judged so only when the whole texts share at least this
/// Jaccard (counted with their repost markers' shingles as not shared), where the
/// ground truth's gray zone begins.
inline constexpr double kStoryGuard = 0.6;

/// The exact Jaccard similarity of two shingle sets (up to 31-bit hash collisions), a
/// shingle marked in one and not in the other counted as two: the same set, marks
/// included, is 1. O(count).
double exact_jaccard(const ExactShingles& a, const ExactShingles& b);
/// Two short texts' exact figures: `whole` the Jaccard of the sets (repost markers
/// left out; a shingle is the same marked or not); `story` that of the sets without
/// their boilerplate shingles (0 when both are empty); `texts` that of the whole
/// texts, their markers' shingles counted as not shared (ExactShingles::markers);
/// `value` the similarity the Engine decides by: the larger of whole and story when
/// texts >= kStoryGuard, else whole; `typo` (tried when value < 1): texts >=
/// kStoryGuard and the two texts' words (ExactShingles::words) are the same but for
/// one word of at least 4 letters and no digit, one typo from the other's (a letter
/// replaced, added or left out, or two neighbours swapped).
struct ExactSimilarity {
  double whole = 0.0;
  double story = 0.0;
  double texts = 0.0;
  double value = 0.0;
  bool typo = false;
};
ExactSimilarity exact_similarity(const ExactShingles& a, const ExactShingles& b);
/// exact_similarity(a, b) when the pair may be a duplicate at `threshold` (by value, or
/// by the typo rule, tried only when value < threshold), else all 0: the merge stops
/// as soon as the shingles left cannot make it one.
ExactSimilarity exact_similarity_at_least(const ExactShingles& a, const ExactShingles& b,
                                          double threshold);
/// The most 5-grams of a story one typo changes (two neighbours swapped: 6).
inline constexpr std::size_t kTypoShingles = 6;
/// Whether two recent short texts are near-duplicates by their exact figures (their
/// must-match tokens aside): value >= `threshold`, or a typo apart.
inline bool exact_duplicate(const ExactSimilarity& s, double threshold) {
  return s.value >= threshold || s.typo;
}
/// Whether each text has a must-match token the other lacks (a template filled
/// in twice). One text's tokens all among the other's is no conflict: a repost
/// may add a signature or lose a word. O(keys).
bool must_match_conflict(const ExactShingles& a, const ExactShingles& b);
/// Which kinds of must-match keys a text has alone when the two conflict (both false when
/// they do not): `hashed` a number, a pair of numbers in a row or a listed word; `names` a
/// name more than a typo from each of the other's. For `neardup compare`. O(keys^2).
struct MustMatchDifference {
  bool hashed = false;
  bool names = false;
};
MustMatchDifference must_match_difference(const ExactShingles& a, const ExactShingles& b);

namespace detail {
/// The sketch of 128 / `bits` minima (bits 1, 2, 4 or 8): bin i at bits
/// [i*bits, (i+1)*bits) of the 128, holding the top `bits` bits of
/// minima[i] * 0x2545f491 (a minimum's own top bits lean to 0). Exposed for tests.
Sketch pack(const std::uint32_t* minima, int bits);
}  // namespace detail

/// Reuses its buffers. Not thread-safe; one per Fingerprinter.
class Sketcher {
 public:
  /// Throws std::invalid_argument (see validate()).
  explicit Sketcher(const SketchOptions& options);

  /// O(bytes + bins). Identical normalized tokens give identical results.
  SketchResult run(const NormalizedText& text);
  /// The exact shingle set and recent-index band keys of the text of the last
  /// run() into `out` (empty when it has more than kMaxExactShingles
  /// shingles, or none, or recent is 0), no must-match tokens. O(shingles log shingles).
  void exact_of_last(ExactShingles& out);

  /// For tests and tools: the hash of each distinct shingle run() would use.
  std::vector<std::uint64_t> shingle_hashes(const NormalizedText& text);

 private:
  /// The hash of every shingle of `text` (with repeats), in a buffer reused by the next call.
  std::span<const std::uint64_t> hash_shingles(const NormalizedText& text);

  SketchOptions options_;
  int bins_;
  int bin_shift_;
  std::string buffer_;
  std::vector<std::uint32_t> starts_;
  std::vector<std::uint64_t> hashes_;  // shingle hashes of one ASCII text
  std::array<std::uint32_t, kSketchBits> minima_{};
  std::array<std::uint32_t, 4 * kSketchBits> ways_{};  // run()'s four sets of bins
  std::span<const std::uint64_t> last_hashes_;         // the last run()'s shingle hashes
};

}  // namespace neardup::dedup
