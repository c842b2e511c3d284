#include "dedup/engine/engine.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <span>

#include "dedup/index/memory.h"

namespace neardup::dedup {

std::string_view to_string(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::unique:
      return "unique";
    case VerdictKind::duplicate:
      return "duplicate";
    case VerdictKind::invalid:
      return "invalid";
  }
  return "unknown";
}

namespace {

const DedupOptions& checked(const DedupOptions& options) {
  validate_memory(options);
  return options;
}

/// Whether decide() takes `summary` down the repost stage (given a repost
/// cache): a text with a sketch and no exact shingle set. Long texts have
/// none; a short one may too (its repost markers stripped, nothing was left).
bool takes_repost_stage(const TextSummary& summary) {
  return summary.exact.empty() && summary.sketch.shingles != 0;
}

}  // namespace

Engine::Engine(const DedupOptions& options)
    : options_(checked(options)),
      fingerprinter_(options.text, options.sketch),
      window_(options.index, engine_window_options(options)) {
  // The sketch ring holds what the window holds (max_entries, or what max_memory leaves).
  if (options_.sketch.enabled) sketches_.emplace(options_.sketch, window_.capacity());
  if (const std::size_t texts = recent_capacity(options_); texts > 0) {
    recent_.emplace(texts,
                    std::min(kRecentBands, kSketchBits / options_.sketch.bits / kRecentBandBins));
    reposts_.emplace(texts);
  }
}

std::uint64_t Engine::oldest_live() const {
  // Entries leave the window in FIFO order, so the live ones are the newest size().
  return inserted_ ? next_sequence_ - window_.size() : next_sequence_;
}

const SketchResult& Engine::keyed(const SketchResult& sketch, ScopeId scope,
                                  SketchResult& buffer) const {
  // A scoped window keys each band by scope too (as Window spreads its
  // buckets): a text kept in K scopes is not K entries in one band chain.
  if (!options_.window.scoped) return sketch;
  buffer = sketch;
  const std::uint64_t mix = (scope.value + 1) * 0x9e3779b97f4a7c15ULL;
  for (std::size_t b = 0; b < buffer.band_keys.size(); ++b)
    buffer.band_keys[b] ^= std::rotr(mix, static_cast<int>(9 * b + 1));
  return buffer;
}

std::uint64_t Engine::insert(Fingerprint fp, EventTime time, RecordRef ref,
                             const SketchResult* sketch, ScopeId scope, std::uint32_t duplicates,
                             const ExactShingles* exact, RecordRef record) {
  const std::uint64_t sequence = window_.insert(fp, time, ref, scope, duplicates);
  if (recent_ && exact && !exact->empty()) recent_->insert(sequence, record.value, *exact);
  next_sequence_ = sequence + 1;
  inserted_ = true;
  if (sketches_) {
    SketchResult buffer;
    // no sketch or no shingles: in no band
    sketches_->insert(sequence, oldest_live(), sketch ? &keyed(*sketch, scope, buffer) : nullptr);
  }
  return sequence;
}

bool Engine::due_for_refresh(const Match& original, EventTime now) const {
  // Only an original in the older half of the window (by time, or by entries
  // when max_entries or max_memory is the bound) is renewed: a story that keeps coming still
  // never leaves the window (each repost within the window finds it, and one
  // past half its life renews it), while a flood of copies retires at most one
  // entry per half window instead of one per copy (each retired entry keeps
  // its cells until it is evicted, and costs a slot).
  const std::int64_t half_duration = options_.window.duration.count() / 2;
  std::int64_t age = 0;
  if (__builtin_sub_overflow(now.ms, original.time.ms, &age))
    age = now.ms > 0 ? std::numeric_limits<std::int64_t>::max() : 0;
  const bool old_by_time = age >= half_duration;
  const bool old_by_entries = next_sequence_ - original.sequence >= window_.capacity() / 2;
  return old_by_time || old_by_entries;
}

Analysis analyze(Fingerprinter& fingerprinter, std::string_view text) {
  Analysis analysis;
  analysis.summary = fingerprinter.analyze(text);
  analysis.text_bytes = text.size();
  if (takes_repost_stage(analysis.summary) && fingerprinter.makes_exact_sets())
    analysis.repost_keys = RepostSketches::keys_of(analysis.summary.sketch.sketch);
  return analysis;
}

Analysis Engine::analyze(std::string_view text) { return dedup::analyze(fingerprinter_, text); }

void Engine::key_reposts(Analysis& analysis) const {
  if (reposts_ && takes_repost_stage(analysis.summary))
    analysis.repost_keys = RepostSketches::keys_of(analysis.summary.sketch.sketch);
}

Verdict Engine::process(std::string_view text, EventTime time, RecordRef ref) {
  // No record ahead here: the prefetch overlaps the band heads' misses with the window probe.
  const Analysis analysis = analyze(text);
  prefetch(analysis);
  return decide(analysis, time, ref);
}

void Engine::prefetch(const Analysis& analysis) const {
  const TextSummary& summary = analysis.summary;
  if (summary.features == 0) return;
  prefetch_remember(summary.fingerprint, summary.sketch, analysis.scope);
  if (recent_ && !summary.exact.empty()) recent_->prefetch(summary.exact);
  if (reposts_ && takes_repost_stage(summary)) reposts_->prefetch(analysis.repost_keys);
}

void Engine::prefetch_remember(Fingerprint fp, const SketchResult& sketch, ScopeId scope) const {
  window_.prefetch(fp, scope);
  SketchResult buffer;
  if (sketches_ && sketch.shingles != 0) sketches_->prefetch(keyed(sketch, scope, buffer));
}

void Engine::prefetch_cells(const Analysis& analysis) const {
  const TextSummary& summary = analysis.summary;
  SketchResult buffer;
  if (sketches_ && summary.features != 0 && summary.sketch.shingles != 0)
    sketches_->prefetch_cells(keyed(summary.sketch, analysis.scope, buffer), oldest_live());
  if (recent_ && summary.features != 0 && !summary.exact.empty())
    recent_->prefetch_slots(summary.exact);
  if (reposts_ && summary.features != 0 && takes_repost_stage(summary))
    reposts_->prefetch_slots(analysis.repost_keys);
}

std::string_view invalid_reason(const Analysis& analysis) {
  const TextSummary& summary = analysis.summary;
  // Replacement characters are tolerated in real text; a text that is mostly
  // undecodable bytes is binary data, and comparing it would be noise (said
  // first: such a text often has no features left either).
  if (summary.invalid_bytes * 4 > analysis.text_bytes) return "not text: mostly invalid UTF-8";
  if (summary.features > 0) return {};
  if (analysis.text_bytes == 0) return "empty text";
  return "no words or characters to compare (only punctuation or spaces)";
}

Verdict Engine::decide(const Analysis& analysis, EventTime time, RecordRef ref) {
  Verdict verdict;
  const TextSummary& summary = analysis.summary;
  verdict.fingerprint = summary.fingerprint;
  verdict.features = summary.features;
  // Replacement characters are tolerated in real text; a text that is mostly
  // undecodable bytes is binary data, and comparing it would be noise (said
  // first: such a text often has no features left either).
  if (const std::string_view reason = invalid_reason(analysis); !reason.empty()) {
    verdict.kind = VerdictKind::invalid;
    verdict.error = reason;
    ++counts_.invalid;
    return verdict;
  }

  const std::uint64_t examined_before = window_.candidates();
  const ScopeId scope = options_.window.scoped ? analysis.scope : ScopeId{};
  ExactOutcome exact;  // what the recent-text stage found
  if (!sketches_ || summary.sketch.shingles == 0) {
    verdict.match = window_.probe(summary.fingerprint, time, ref, scope);
  } else {
    const SketchOptions& so = options_.sketch;
    const Sketch& mine = summary.sketch.sketch;
    // Stage 1a: SimHash neighbours, each verified by its sketch (an entry with
    // no sketch keeps the classic rule: within max_distance is enough).
    // The probe makes every entry it accepts its best so far, so the last
    // accepted one is the match: its estimate is kept, not computed again.
    std::optional<double> simhash_similarity;
    // Candidates whose estimate fell short: for a short text, the recent-text
    // stage judges them again by their exact sets (near the boundary the
    // 2-bit estimate scatters by +-0.06).
    const bool exact_stage = recent_ && !summary.exact.empty();
    std::array<std::uint64_t, 16> short_of{};
    std::size_t short_count = 0;
    // Only estimates within kExactRecheck of the threshold: at J >= 0.8 the
    // estimate of 64 2-bit bins has a standard deviation of ~0.06, so one
    // below 0.5 is a 5-sigma event, while the many unrelated neighbours of a
    // short text that share a band sit far below.
    constexpr double kExactRecheck = 0.2;
    auto fell_short = [&](std::uint64_t sequence, double estimate) {
      if (exact_stage && short_count < short_of.size() && estimate >= so.threshold - kExactRecheck)
        short_of[short_count++] = sequence;
    };
    verdict.match = window_.probe(summary.fingerprint, time, ref, scope, [&](const Match& m) {
      const auto theirs = sketches_->sketch(m.sequence, m.sequence);
      if (!theirs) {
        simhash_similarity.reset();
        return true;
      }
      const double j = estimate_jaccard(mine, *theirs, so.bits);
      if (j < so.threshold) {
        fell_short(m.sequence, j);
        return false;
      }
      simhash_similarity = j;
      return true;
    });
    // Stage 1b: entries sharing a band; the probe above has advanced the clock.
    const std::uint64_t oldest = oldest_live();
    double best = simhash_similarity.value_or(-1.0);
    std::optional<std::uint64_t> best_sequence;
    int best_distance = 65;
    // A band candidate replaces the SimHash match only with a strictly higher
    // estimate: after a perfect one (every bin agrees) the walk cannot change the verdict.
    const bool settled = simhash_similarity && *simhash_similarity >= 1.0;
    std::uint64_t own_entry = ~std::uint64_t{0};  // this record's own entry, if met
    auto visit = [&](std::uint64_t sequence, const Sketch& theirs) {
      if (verdict.match && sequence == verdict.match->sequence) return;  // verified above
      const double j = estimate_jaccard(mine, theirs, so.bits);
      if (j < so.threshold) fell_short(sequence, j);
      if (j < so.threshold || j < best) return;
      const auto e = window_.entry(sequence);
      if (e && e->of == ref) own_entry = std::min(own_entry, sequence);
      if (!e || e->of == ref || e->scope != scope) return;
      const int distance = hamming_distance(summary.fingerprint, e->fingerprint);
      const bool better = j > best || distance < best_distance ||
                          (distance == best_distance && best_sequence && sequence < *best_sequence);
      if (!better) return;
      best = j;
      best_distance = distance;
      best_sequence = sequence;
    };
    SketchResult buffer;
    if (!settled)
      sketches_->for_each_candidate(keyed(summary.sketch, scope, buffer), oldest, visit);
    bool band_only = false;  // the match came through a band alone
    if (best_sequence) {
      const bool beats_simhash =
          !verdict.match || !simhash_similarity || best > *simhash_similarity;
      if (beats_simhash) {
        band_only = !verdict.match;
        verdict.match = window_.entry(*best_sequence);
        verdict.match->distance = best_distance;
        simhash_similarity = best;
      }
    }
    if (exact_stage) {
      const std::uint64_t before = verdict.match ? verdict.match->sequence : 0;
      exact = decide_exact(summary, ref, scope, std::span(short_of.data(), short_count),
                           verdict.match, simhash_similarity);
      band_only = band_only && verdict.match && verdict.match->sequence == before;
    }
    if (band_only) ++counts_.sketch_matches;
    if (!verdict.match && reposts_ && summary.exact.empty()) {
      decide_repost(analysis, ref, scope, own_entry, verdict.match, simhash_similarity);
      if (verdict.match) ++counts_.repost_matches;
    }
    verdict.similarity = simhash_similarity;
  }
  verdict.candidates = window_.candidates() - examined_before;

  if (verdict.match) {
    verdict.kind = VerdictKind::duplicate;
    ++counts_.duplicate;
    verdict.count = window_.count_duplicate(verdict.match->sequence);
    if (options_.window.refresh_on_duplicate && due_for_refresh(*verdict.match, time)) {
      // The duplicate takes its original's place at the window's newest end:
      // the original's ref and count, the duplicate's time, fingerprint and
      // sketch (a story that drifts stays matched by its latest wording).
      window_.retire(verdict.match->sequence);
      verdict.sequence = insert(summary.fingerprint, time, verdict.match->of, &summary.sketch,
                                scope, verdict.count, &summary.exact, ref);
      verdict.refreshed = true;
      ++counts_.refreshed;
    } else if (exact.ran && !exact.identical) {
      // A short repost that says something its original does not stays a
      // recent text, standing for the original: a repost of it finds the
      // original through it. (A copy of a recent text adds nothing.)
      recent_->insert_repost(verdict.match->sequence, ref.value, summary.exact);
      ++counts_.recent_reposts;
    } else if (reposts_ && summary.exact.empty() && summary.sketch.shingles > kMaxExactShingles &&
               !(verdict.similarity && *verdict.similarity >= 1.0)) {
      // A long repost stands for its original likewise, by its sketch (one
      // whose sketch equals what it matched adds nothing). It took the repost
      // stage (a sketch, no exact set): its repost_keys are set.
      reposts_->insert(RepostSketches::Repost{summary.sketch.sketch, verdict.match->sequence,
                                              ref.value, next_sequence_},
                       analysis.repost_keys);
      ++counts_.long_reposts;
    }
  } else {
    verdict.sequence =
        insert(summary.fingerprint, time, ref, &summary.sketch, scope, 0, &summary.exact, ref);
    last_kept_sketch_ = summary.sketch;
    ++counts_.unique;
  }
  return verdict;
}

Engine::ExactOutcome Engine::decide_exact(const TextSummary& summary, RecordRef ref, ScopeId scope,
                                          std::span<const std::uint64_t> fell_short,
                                          std::optional<Match>& match,
                                          std::optional<double>& similarity) {
  const ExactShingles& mine = summary.exact;
  const double threshold = options_.sketch.exact_threshold;
  ExactOutcome outcome;
  outcome.ran = true;
  // The sketch's match, when it is a recent text too, is judged again exactly.
  if (match) {
    if (const ExactShingles* theirs = recent_->find(match->sequence)) {
      const ExactSimilarity exact = exact_similarity(mine, *theirs);
      const double j = exact.value;
      if (!exact_duplicate(exact, threshold) || must_match_conflict(mine, *theirs)) {
        match.reset();
        similarity.reset();
        ++counts_.exact_vetoes;
      } else {
        similarity = j;
        outcome.identical = j >= 1.0 && exact_jaccard(mine, *theirs) >= 1.0;
      }
    }
  }
  double best = -1.0;
  std::optional<std::uint64_t> best_sequence;
  const std::uint64_t oldest = oldest_live();
  auto consider = [&](std::uint64_t sequence, const ExactShingles& theirs,
                      const RecentTexts::Visited&) {
    if (sequence < oldest) return;
    const ExactSimilarity exact = exact_similarity_at_least(mine, theirs, threshold);
    const double j = exact.value;
    if (!exact_duplicate(exact, threshold) || j < best || must_match_conflict(mine, theirs)) return;
    const auto e = window_.entry(sequence);
    if (!e || e->of == ref || e->scope != scope) return;
    // (identical: the same set, boilerplate included; a link added is something to keep)
    outcome.identical = outcome.identical || (j >= 1.0 && exact_jaccard(mine, theirs) >= 1.0);
    // of equal ones the oldest wins, as in the window
    if (j == best && best_sequence && sequence > *best_sequence) return;
    best = j;
    best_sequence = sequence;
  };
  // (a record decided again meets neither its own texts nor reposts kept
  // after it: RecentTexts::for_each_candidate)
  // (the size filter lets through what the story rule may take: sets whose whole
  // Jaccard is at least kStoryGuard)
  recent_->for_each_candidate(mine, std::min(threshold, kStoryGuard), ref.value, consider);
  for (const std::uint64_t sequence : fell_short)
    if (const ExactShingles* theirs = recent_->find(sequence))
      consider(sequence, *theirs, RecentTexts::Visited{});
  if (!best_sequence || (match && similarity && *similarity >= best)) return outcome;
  if (!match) ++counts_.exact_matches;
  match = window_.entry(*best_sequence);
  match->distance = hamming_distance(summary.fingerprint, match->fingerprint);
  similarity = best;
  return outcome;
}

void Engine::decide_repost(const Analysis& analysis, RecordRef ref, ScopeId scope,
                           std::uint64_t own_entry, std::optional<Match>& match,
                           std::optional<double>& similarity) const {
  const TextSummary& summary = analysis.summary;
  const Sketch& mine = summary.sketch.sketch;
  double best = -1.0;
  std::optional<Match> found;
  reposts_->for_each_candidate(
      analysis.repost_keys, ref.value, [&](const RepostSketches::Repost& r) {
        if (r.born > own_entry) return;  // judged after this record's first decision
        const double j = estimate_jaccard(mine, r.sketch, options_.sketch.bits);
        if (j < options_.sketch.threshold || j < best) return;
        auto e = window_.entry(r.original);
        if (!e || e->of == ref || e->scope != scope) return;
        const int distance = hamming_distance(summary.fingerprint, e->fingerprint);
        if (j == best && (distance > found->distance ||
                          (distance == found->distance && e->sequence >= found->sequence)))
          return;
        best = j;
        e->distance = distance;
        found = e;
      });
  if (!found) return;
  match = found;
  similarity = best;
}

void Engine::remember(Fingerprint fp, EventTime time, RecordRef ref, ScopeId scope) {
  insert(fp, time, ref, nullptr, scope);
}

void Engine::remember(Fingerprint fp, EventTime time, RecordRef ref, const SketchResult& sketch,
                      ScopeId scope) {
  insert(fp, time, ref, &sketch, scope);
}

EngineStats Engine::stats() const {
  EngineStats stats = counts_;
  stats.window = window_.stats();
  if (sketches_) stats.sketch = sketches_->stats();
  stats.bytes = stats.window.bytes + stats.sketch.bytes + (recent_ ? recent_->bytes() : 0) +
                (reposts_ ? reposts_->bytes() : 0);
  return stats;
}

std::size_t Engine::bytes() const {
  return window_.stats().bytes + (sketches_ ? sketches_->stats().bytes : 0) +
         (recent_ ? recent_->bytes() : 0) + (reposts_ ? reposts_->bytes() : 0);
}

}  // namespace neardup::dedup
