#pragma once
// Plain option structs of the dedup engine. Defaults here are the product's
// defaults: `neardup scan` with no config uses exactly these. config/ fills
// them from YAML; nothing in dedup/ knows YAML.

#include <chrono>
#include <cstddef>
#include <string>

namespace neardup::dedup {

enum class Weighting {
  unit,    ///< every distinct feature weighs 1 (the classic baseline)
  tf,      ///< damped term frequency: 1 + ln(tf)
  tf_idf,  ///< damped tf times inverse document frequency
};

enum class IdfSource {
  stream,  ///< learned online from the documents seen (bounded count-min sketch)
  file,    ///< loaded from `idf_file` (lines "term<TAB>idf")
};

/// What must be the same in two texts for them to be duplicates, besides
/// their shingles (dedup.must_match): a template's slots. Checked between
/// short texts that both sit in the recent-text cache (SketchOptions::recent).
enum class MustMatch {
  none,
  numbers,            ///< tokens with a digit: counts, times, flight and host numbers
  names,              ///< words written with a capital first letter and a lower-case one
  numbers_and_names,  ///< both
};

struct TextOptions {
  bool normalize = true;  ///< NFKC + case fold + punctuation/space folding
  /// Remove URLs, @mentions, hashtags (#tag, #话题#) and a "via", "RT" or 转发
  /// before a mention before anything else (dedup/text/normalize.h strip_boilerplate).
  /// Off, a short text's exact set still leaves out its repost markers ("RT @x:").
  bool strip_boilerplate = false;
  MustMatch must_match = MustMatch::numbers_and_names;
  /// A file of words (one per line, any script; lines starting with # are
  /// comments) that must match too: two
  /// recent texts that each contain a listed word the other lacks are not
  /// duplicates (the places or names a template varies). "" = none.
  std::string must_match_words;
  std::size_t cjk_ngram = 2;     ///< character n-gram length for Han, kana and Hangul runs
  std::size_t word_shingle = 1;  ///< 1 = single words; n >= 2 adds n-word shingles
  Weighting weighting = Weighting::tf;
  IdfSource idf_source = IdfSource::stream;
  std::string idf_file;  ///< used when idf_source == file
};

struct IndexOptions {
  int max_distance = 3;  ///< k: fingerprints within k bits are near-duplicates (0..8)
  int blocks = 0;        ///< m: pigeonhole blocks, k+1..16; 0 picks the default for k
};

struct WindowOptions {
  std::chrono::milliseconds duration = std::chrono::hours(24);  ///< event-time horizon
  /// How far past the wall clock a message's timestamp may be (stream/pipeline/event_time.h):
  /// a later one counts as the wall clock plus this (window.max_future).
  std::chrono::milliseconds max_future = std::chrono::minutes(1);
  /// How often a story with new duplicates gets an interim summary
  /// (window.summary_interval, with kafka.summary_topic); 0 = final ones only.
  std::chrono::milliseconds summary_interval = std::chrono::minutes(1);
  std::size_t max_entries = 10'000'000;  ///< memory bound, in entries
  /// A bound in bytes on what the window's structures hold (window.max_memory):
  /// the pigeonhole index, and in an Engine also the sketch index and the
  /// recent-text cache (dedup/index/memory.h). The window then holds at most the
  /// entries that fit (fewer than max_entries when that is the tighter bound)
  /// and evicts the oldest to stay within it. 0 = no bound in bytes.
  std::size_t max_memory = 0;
  /// What a rebuild from the changelog may hold beyond the window itself
  /// while it reads (stream/changelog/window_restore.h): entries that need
  /// more are read twice, the second time in slices of this size
  /// (window.rebuild_memory). The engine does not use it.
  std::size_t rebuild_memory = std::size_t{64} << 20;
  /// Entries carry a ScopeId (4 bytes each) and probes match only their own
  /// scope (dedup.scope other than global). Off: every entry has the zero scope.
  bool scoped = false;
  /// A duplicate renews its original: the window keeps the duplicate in the
  /// original's place (its ref and count) with the duplicate's time, so a story
  /// that keeps coming stays in the window (window.refresh_on_duplicate).
  bool refresh_on_duplicate = false;
};

/// The second stage (dedup/fingerprint/sketch.h, dedup/index/sketch_index.h): every kept text
/// also stores a 16-byte MinHash sketch of its character shingles; candidates
/// come from the SimHash index (within max_distance) and from LSH bands over the
/// sketch, and a candidate is a duplicate only when the sketches estimate a
/// Jaccard similarity >= threshold. Off: the classic SimHash-only decision.
struct SketchOptions {
  bool enabled = true;
  int bits = 2;            ///< bits per MinHash bin: 1, 2, 4 or 8 (bins = 128 / bits)
  double threshold = 0.7;  ///< estimated shingle Jaccard needed to call a duplicate
  int bands = 3;           ///< LSH bands (0 = SimHash candidates only), at most 8
  int band_bins = 4;       ///< MinHash bins hashed into one band key
  /// Short kept texts (at most kMaxExactShingles distinct shingles) whose exact
  /// shingle sets are kept, the newest `recent` of them (dedup/index/recent_texts.h):
  /// between two of them the exact Jaccard decides instead of the estimate,
  /// and their own band index (more, narrower bands) finds the pairs near the
  /// threshold. 0 = off.
  std::size_t recent = 8192;
  /// Exact shingle Jaccard needed between two recent texts (the exact
  /// counterpart of `threshold`).
  double exact_threshold = 0.8;
};

struct DedupOptions {
  TextOptions text;
  IndexOptions index;
  WindowOptions window;
  SketchOptions sketch;
};

}  // namespace neardup::dedup
