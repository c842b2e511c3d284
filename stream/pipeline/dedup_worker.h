#pragma once
// The dedup worker of `neardup run`: one thread that owns the window and
// decodes, analyzes (normalize, SimHash, sketch) and judges (Engine::decide)
// one batch of polled messages at a time, strictly in input order, while the
// pipeline thread produces the batch before it. A slot is the pipeline
// thread's before submit() and after wait(), the worker's in between.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "config/config.h"
#include "dedup/engine/engine.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/pipeline.h"

namespace neardup::stream {

/// What the pipeline thread tells the worker about one polled message.
struct Job {
  SourceIndex source;     ///< the message's interned partition (stream/core/sources.h)
  bool decide = false;    ///< false: a consumer error, or a partition not assigned when polled
  dedup::EventTime time;  ///< event time (the message timestamp, else the time it was polled)
};

/// What the worker made of one message.
struct Outcome {
  dedup::Verdict verdict;
  std::string_view error;  ///< for invalid: views Slot::prepared or a static string
  dedup::SketchResult
      kept_sketch;  ///< a unique message's sketch (for the changelog); shingles 0 if none
  std::uint64_t spent_ns = 0;  ///< decoding, analysis and the window decision
  /// Analysis only (the judge decides, stream/judge/judge.h): the verdict waits for
  /// the judge; false when the message is invalid already (verdict says why).
  bool to_judge = false;
};

/// A changelog entry of another instance, for the worker's window.
struct Remembered {
  dedup::Fingerprint fingerprint;
  dedup::EventTime time;
  dedup::RecordRef ref;
  dedup::SketchResult sketch;  ///< shingles 0: remembered by its fingerprint only
  dedup::ScopeId scope;
};

/// Polled messages and what the worker made of them (index by index).
struct Slot {
  std::vector<kafka::MessagePtr> messages;
  std::vector<Job> jobs;
  std::vector<Remembered> remember;  ///< applied to the window before the messages are judged
  std::vector<Prepared> prepared;
  std::vector<Outcome> outcomes;
  dedup::EngineStats engine_stats;  ///< the engine's counters after this slot
  std::uint64_t oldest_live = 0;    ///< the window's oldest live sequence after this slot
};

/// Decodes, analyzes and judges one batch of polled messages at a time on its
/// own thread, which owns the window (messages strictly in order, so a learned
/// IDF sees the same history as without it, and the window sees every message
/// in input order), while the pipeline thread produces, acknowledges and commits
/// the previous batch. submit() and wait() alternate, from one thread; the slot
/// is the worker's between them, and engine() is the pipeline thread's only
/// while no slot is submitted. The hand-over itself (job_, quit_, failure_) is
/// under mutex_, checked by clang's -Wthread-safety (clang-tsa preset); the
/// slot and the window are handed over by it, which the analysis cannot see.
class DedupWorker {
 public:
  /// `decides` false: the worker only decodes and analyzes (Outcome::to_judge),
  /// the window decisions are the judge's (stream/judge/judge.h).
  /// With `decides` false, `config.workers` threads analyze each slot (each a
  /// share of its messages, 0 = the cores available), unless a learned IDF
  /// needs the one history order.
  explicit DedupWorker(const config::Config& config, bool decides = true);
  ~DedupWorker();
  DedupWorker(const DedupWorker&) = delete;
  DedupWorker& operator=(const DedupWorker&) = delete;

  /// The window. Only between wait() and the next submit() (or before the first).
  dedup::Engine& engine() { return classifier_.engine(); }

  /// Hands `slot` (messages, jobs, remembered entries filled) to the worker thread.
  void submit(Slot& slot) EXCLUDES(mutex_);
  /// Until the submitted slot is prepared; rethrows what the worker threw (std::bad_alloc).
  void wait() EXCLUDES(mutex_);
  /// Threads that analyze (1 when the worker also decides).
  int analysis_threads() const { return 1 + static_cast<int>(helpers_.size()); }

 private:
  void loop() EXCLUDES(mutex_);
  void prepare(Slot& slot);
  void analyze_only(Slot& slot) EXCLUDES(pool_mutex_);
  /// Decode and analysis of slot messages [begin, end) with `analyzer` (no window).
  static void analyze_range(Slot& slot, std::size_t begin, std::size_t end, Analyzer& analyzer);
  void help(std::size_t share) EXCLUDES(pool_mutex_);

  const bool decides_;
  Analyzer analyzer_;      // worker thread only (and construction)
  Classifier classifier_;  // worker thread, or the pipeline thread while no slot is submitted
  base::Mutex mutex_;
  std::condition_variable wake_, done_;
  Slot* job_ GUARDED_BY(mutex_) = nullptr;  // submitted, not yet prepared
  bool quit_ GUARDED_BY(mutex_) = false;
  std::exception_ptr failure_ GUARDED_BY(mutex_);
  // Analysis helpers (analysis only, workers > 1): helper i analyzes share
  // i + 1 of each slot the worker hands out (the worker itself share 0).
  std::vector<std::unique_ptr<Analyzer>> helper_analyzers_;  // one per helper
  base::Mutex pool_mutex_;
  std::condition_variable pool_wake_, pool_done_;
  Slot* pool_slot_ GUARDED_BY(pool_mutex_) = nullptr;
  std::uint64_t pool_round_ GUARDED_BY(pool_mutex_) = 0;  // one per slot handed out
  int pool_pending_ GUARDED_BY(pool_mutex_) = 0;          // helpers still analyzing
  bool pool_quit_ GUARDED_BY(pool_mutex_) = false;
  std::exception_ptr pool_failure_ GUARDED_BY(pool_mutex_);
  std::vector<std::thread> helpers_;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace neardup::stream
