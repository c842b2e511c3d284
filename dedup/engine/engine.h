#pragma once
// The near-duplicate engine: text -> fingerprint (+ sketch) -> window probe -> verdict.
// The one piece that `neardup scan` and `neardup run` share; only their
// sources and sinks differ.
//
// With the sketch stage on (the default, DedupOptions::sketch), a decision has
// two stages. Candidates: kept entries within max_distance SimHash bits (the
// pigeonhole index) and entries that share an LSH band of the MinHash sketch
// (dedup/index/sketch_index.h). Verification: a candidate is a duplicate only when the
// two sketches estimate a shingle Jaccard >= sketch.threshold; the best estimate
// wins (ties: the smaller SimHash distance, then the oldest). Entries without a
// sketch (remember() without one: a changelog record written with the sketch
// off) are judged by SimHash distance alone. A long text that matches no
// entry so is compared with the long duplicates dropped lately (the repost
// cache, dedup/index/repost_sketches.h): one whose sketch estimates a Jaccard
// >= sketch.threshold with it makes it a duplicate of the entry that repost
// duplicated. Like the recent-text cache, the repost cache is not in the
// changelog: a rebuilt window (remember()) starts with both empty.
// With the sketch off, the classic rule: the nearest entry within max_distance.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "dedup/core/options.h"
#include "dedup/core/types.h"
#include "dedup/fingerprint/fingerprinter.h"
#include "dedup/index/recent_texts.h"
#include "dedup/index/repost_sketches.h"
#include "dedup/index/sketch_index.h"
#include "dedup/index/window.h"

namespace neardup::dedup {

enum class VerdictKind { unique, duplicate, invalid };
std::string_view to_string(VerdictKind kind);

struct Verdict {
  VerdictKind kind = VerdictKind::unique;
  Fingerprint fingerprint;
  std::optional<Match> match;  ///< set for duplicates: the kept entry it duplicates; distance may
                               ///< exceed max_distance when the match came from a sketch band
  std::optional<double> similarity;  ///< duplicates judged by the sketch: the estimated Jaccard
  std::uint32_t count = 0;  ///< duplicates: how many duplicates of match->of so far, this one
                            ///< included (1 for the first; Window::count_duplicate)
  bool refreshed = false;   ///< duplicates: it took its original's place (refresh_on_duplicate)
  /// unique, or refreshed: the window sequence of the entry this decision inserted
  std::uint64_t sequence = 0;
  std::string_view error;  ///< set for invalid: a static reason
  std::uint32_t features = 0;
  std::uint64_t candidates = 0;  ///< window index cells examined by this decision's probe
};

/// What a decision needs to know about one text: the pure, window-independent
/// part of process(). Made by Engine::analyze or analyze(Fingerprinter&, text)
/// on any thread (with that thread's own Fingerprinter); judged by Engine::decide.
/// One built another way (a judge request, decoded) gets its repost keys from
/// Engine::key_reposts() before it is prefetched or decided.
struct Analysis {
  TextSummary summary;
  std::size_t text_bytes = 0;  ///< the text's size (the invalid-UTF-8 share is relative to it)
  ScopeId scope;  ///< set by the caller (dedup.scope): only entries of this scope match
  /// RepostSketches::keys_of(summary.sketch.sketch), computed once for the
  /// Engine's repost stage (prefetch, prefetch_cells, decide): set for a text
  /// that takes it, one with a sketch and no exact shingle set
  /// (summary.sketch.shingles != 0 and summary.exact.empty()), when an Engine
  /// of these options has a repost cache. Not read otherwise (analyze() leaves
  /// them zero: a short text pays nothing for them).
  RepostSketches::Keys repost_keys{};
};

/// The analysis step with a caller-owned Fingerprinter (e.g. on a worker thread).
/// `fingerprinter` must be made from the deciding Engine's options().text and
/// options().sketch, and see the texts in the order they are decided (a learned
/// IDF depends on the history). Sets repost_keys when the fingerprinter makes
/// exact shingle sets (Fingerprinter::makes_exact_sets; without them no Engine
/// of its options has a repost cache). O(bytes); never throws.
Analysis analyze(Fingerprinter& fingerprinter, std::string_view text);

/// Why Engine::decide would judge `analysis` invalid (a static string), or ""
/// when it would not. Window-independent: callers that analyze elsewhere can
/// tell invalid texts without a window. O(1).
std::string_view invalid_reason(const Analysis& analysis);

struct EngineStats {
  std::uint64_t unique = 0;
  std::uint64_t duplicate = 0;
  std::uint64_t invalid = 0;
  std::uint64_t sketch_matches = 0;  ///< duplicates found only through a sketch band
  std::uint64_t refreshed = 0;       ///< duplicates that took their original's place (refresh)
  std::uint64_t exact_matches = 0;   ///< duplicates decided by an exact shingle set (recent texts)
  std::uint64_t exact_vetoes = 0;    ///< sketch matches the exact sets turned down
  std::uint64_t recent_reposts = 0;  ///< short duplicates kept among the recent texts
  std::uint64_t long_reposts = 0;    ///< long duplicates kept in the repost cache
  std::uint64_t repost_matches = 0;  ///< long duplicates found only through a kept repost
  WindowStats window;
  SketchIndexStats sketch;  ///< zero when the sketch stage is off
  /// Engine::bytes(): the window, the sketch index, the recent-text cache and
  /// the repost cache (what window.max_memory bounds).
  std::size_t bytes = 0;
};

/// Not thread-safe: one Engine per pipeline thread. Never throws from process();
/// the constructor throws std::invalid_argument for unsupported options (a
/// window.max_memory too small for a minimal window among them: dedup/index/memory.h).
/// With window.max_memory set, bytes() never exceeds it after a decision or a
/// remember(): the window holds engine_capacity() entries at most.
class Engine {
 public:
  explicit Engine(const DedupOptions& options);

  /// Judges one text against the window. Unique texts are inserted into the
  /// window (duplicates are not: the window holds kept messages only; with
  /// window.refresh_on_duplicate a duplicate takes its original's place).
  /// Text with no features (empty, only punctuation) or mostly invalid UTF-8 is invalid.
  /// Same as decide(analyze(text), time, ref).
  Verdict process(std::string_view text, EventTime time, RecordRef ref);

  /// The analysis step with this Engine's own Fingerprinter. O(bytes).
  Analysis analyze(std::string_view text);
  /// The decision step: window probe (and sketch verification), insert if
  /// unique, counters. `analysis` carries its repost_keys (made by analyze(),
  /// or given by key_reposts()). O(tables + candidates).
  Verdict decide(const Analysis& analysis, EventTime time, RecordRef ref);

  /// Sets analysis.repost_keys when this Engine's repost stage reads them (it
  /// has a repost cache, and the text a sketch and no exact shingle set), for
  /// an Analysis made another way than by analyze() (a judge request's): call
  /// it once, after the last change to analysis.summary, before prefetch(),
  /// prefetch_cells() or decide(). Leaves other analyses as they are. O(kBands).
  void key_reposts(Analysis& analysis) const;

  /// A hint for callers that analyze ahead: starts loading the window buckets
  /// and sketch band heads that decide(analysis) will read first (random
  /// memory accesses, each a cache miss in a large window). Call it one or two
  /// records before decide() (two when prefetch_cells() follows one before).
  /// Changes no state; never needed for correctness. O(tables + bands).
  void prefetch(const Analysis& analysis) const;
  /// The second stage, for callers two records ahead: reads the (by now
  /// cached) band heads and starts loading the first entry of each band's
  /// chain (its cell, and its sketch when its tag is the probe's), so the walk
  /// in decide() does not wait for them. Call prefetch() two records before
  /// decide(), this one record before. No state change. O(bands).
  void prefetch_cells(const Analysis& analysis) const;

  /// Sizes the window for `entries` entries at once (Window::reserve): call it
  /// before remembering that many (a changelog replay). The sketch index is
  /// sized for capacity() from the start.
  void reserve(std::size_t entries) { window_.reserve(entries); }

  /// prefetch() for a remember() to come (a replay knows its next entries):
  /// starts loading the window buckets and band heads it will write. Call it
  /// about 8 entries ahead. No state change. O(tables + bands).
  void prefetch_remember(Fingerprint fp, const SketchResult& sketch, ScopeId scope = {}) const;

  /// Inserts a fingerprint that was kept elsewhere (window changelog replay).
  void remember(Fingerprint fp, EventTime time, RecordRef ref, ScopeId scope = {});

  /// Inserts an entry kept elsewhere together with its sketch and band keys
  /// (window changelog replay): indexed exactly as process() indexed it when it
  /// was judged unique. `sketch` must come from the same SketchOptions (bits,
  /// bands, band_bins); it is ignored when the sketch stage is off or
  /// sketch.shingles == 0 (then this is remember(fp, time, ref)). O(tables + bands).
  void remember(Fingerprint fp, EventTime time, RecordRef ref, const SketchResult& sketch,
                ScopeId scope = {});

  /// The sketch and band keys of the text that the last process() call judged
  /// unique (all zero with the sketch stage off), for the window changelog.
  /// Valid until the next process() that keeps a text.
  const SketchResult& last_kept_sketch() const { return last_kept_sketch_; }

  EngineStats stats() const;
  /// The window sequence of its oldest live entry (one past the newest when
  /// empty): an entry whose sequence is below it has left the window. O(1).
  std::uint64_t oldest_live() const;
  /// One past the newest entry's window sequence. O(1).
  std::uint64_t next_sequence() const { return next_sequence_; }
  /// The live entry inserted with `sequence` (Window::entry), or nullopt. O(1).
  std::optional<Match> entry(std::uint64_t sequence) const { return window_.entry(sequence); }
  const DedupOptions& options() const { return options_; }

  /// Bytes held by the window, the sketch index, the recent-text cache and the
  /// repost cache together.
  std::size_t bytes() const;
  /// The most entries the window holds: window.max_entries, or fewer when
  /// window.max_memory is the tighter bound (engine_capacity()). O(1).
  std::size_t capacity() const { return window_.capacity(); }

 private:
  /// `sketch` as the sketch index sees it: its band keys mixed with `scope`
  /// when the window is scoped (in `buffer`), else `sketch` itself.
  const SketchResult& keyed(const SketchResult& sketch, ScopeId scope, SketchResult& buffer) const;
  /// window.refresh_on_duplicate: whether a duplicate at `now` renews `original`.
  bool due_for_refresh(const Match& original, EventTime now) const;
  /// Keeps an entry in the window and, with the sketch stage on, its sketch
  /// (nullptr, or one with no shingles: judged by SimHash alone, in no band).
  /// `exact`, if any, is kept among the recent texts as the record `record`'s
  /// (the refreshing duplicate's when `ref` is its original's).
  std::uint64_t insert(Fingerprint fp, EventTime time, RecordRef ref, const SketchResult* sketch,
                       ScopeId scope, std::uint32_t duplicates = 0,
                       const ExactShingles* exact = nullptr, RecordRef record = {});
  /// The recent-text stage of decide() for a short text: finds its best match
  /// by exact Jaccard among the recent texts (those sharing a recent-text band,
  /// and the sketch candidates `fell_short` of the estimate) and re-judges
  /// `match` (a sketch match, `similarity` its estimate) when that one is a
  /// recent text too.
  struct ExactOutcome {
    bool ran = false;        // the stage judged this text
    bool identical = false;  // a live recent text has the very same shingles
  };
  ExactOutcome decide_exact(const TextSummary& summary, RecordRef ref, ScopeId scope,
                            std::span<const std::uint64_t> fell_short, std::optional<Match>& match,
                            std::optional<double>& similarity);

  /// The repost stage of decide() for a long text that matched nothing in the
  /// window: the best live original (by estimate, then SimHash distance, then
  /// the oldest) of a kept long repost whose sketch estimates a Jaccard >=
  /// sketch.threshold with `analysis.summary`'s, found by its repost_keys.
  /// `own_entry`: the window sequence of `ref`'s own entry when the band walk
  /// met one (a record decided again then meets no repost judged after it).
  /// Sets `match` and `similarity`.
  void decide_repost(const Analysis& analysis, RecordRef ref, ScopeId scope,
                     std::uint64_t own_entry, std::optional<Match>& match,
                     std::optional<double>& similarity) const;

  DedupOptions options_;
  Fingerprinter fingerprinter_;
  Window window_;
  std::optional<SketchIndex> sketches_;    // set when options_.sketch.enabled
  std::optional<RecentTexts> recent_;      // set when recent_capacity(options_) > 0
  std::optional<RepostSketches> reposts_;  // as recent_: long reposts
  std::uint64_t next_sequence_ = 0;        // one past the window's newest insert
  bool inserted_ = false;
  EngineStats counts_;
  SketchResult last_kept_sketch_{};
};

}  // namespace neardup::dedup
