#include "stream/pipeline/dedup_worker.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "stream/core/sources.h"

namespace neardup::stream {

using Clock = std::chrono::steady_clock;

namespace {

int cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

/// Analysis threads for `config` (the worker's own included).
int analysis_threads_for(const config::Config& config, bool decides) {
  const bool learned_idf = config.dedup.text.weighting == dedup::Weighting::tf_idf &&
                           config.dedup.text.idf_source == dedup::IdfSource::stream;
  if (decides || learned_idf) return 1;
  return config.workers > 0 ? config.workers : cores_available();
}

}  // namespace

DedupWorker::DedupWorker(const config::Config& config, bool decides)
    : decides_(decides), analyzer_(config), classifier_(config), thread_([this] { loop(); }) {
  const int threads = analysis_threads_for(config, decides);
  for (int i = 1; i < threads; ++i) helper_analyzers_.push_back(std::make_unique<Analyzer>(config));
  for (int i = 1; i < threads; ++i)
    helpers_.emplace_back([this, i] { help(static_cast<std::size_t>(i)); });
}

DedupWorker::~DedupWorker() {
  {
    base::MutexLock lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
  {
    base::MutexLock lock(pool_mutex_);
    pool_quit_ = true;
  }
  pool_wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void DedupWorker::help(std::size_t share) {
  pthread_setname_np(pthread_self(), "neardup-analyze");
  std::uint64_t seen = 0;
  for (;;) {
    Slot* slot = nullptr;
    {
      base::MutexLock lock(pool_mutex_);
      while (!pool_quit_ && pool_round_ == seen) lock.wait(pool_wake_);
      if (pool_quit_) return;
      seen = pool_round_;
      slot = pool_slot_;
    }
    std::exception_ptr failure;
    try {
      const std::size_t n = slot->messages.size(), shares = helpers_.size() + 1;
      analyze_range(*slot, n * share / shares, n * (share + 1) / shares,
                    *helper_analyzers_[share - 1]);
    } catch (...) {
      failure = std::current_exception();
    }
    base::MutexLock lock(pool_mutex_);
    if (failure && !pool_failure_) pool_failure_ = std::move(failure);
    if (--pool_pending_ == 0) pool_done_.notify_all();
  }
}

void DedupWorker::submit(Slot& slot) {
  {
    base::MutexLock lock(mutex_);
    job_ = &slot;
  }
  wake_.notify_all();
}

void DedupWorker::wait() {
  std::exception_ptr failure;
  {
    base::MutexLock lock(mutex_);
    while (job_ != nullptr) lock.wait(done_);
    failure = std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void DedupWorker::loop() {
  pthread_setname_np(pthread_self(), "neardup-analyze");  // (15 characters at most)
  for (;;) {
    Slot* slot = nullptr;
    {
      base::MutexLock lock(mutex_);
      while (!quit_ && job_ == nullptr) lock.wait(wake_);
      if (job_ == nullptr) return;  // quit with nothing to do
      slot = job_;
    }
    std::exception_ptr failure;
    try {
      prepare(*slot);
    } catch (...) {
      failure = std::current_exception();
    }
    base::MutexLock lock(mutex_);
    if (failure) failure_ = std::move(failure);
    job_ = nullptr;
    done_.notify_all();
  }
}

void DedupWorker::analyze_only(Slot& slot) {
  const std::size_t n = slot.messages.size();
  if (slot.prepared.size() < n) slot.prepared.resize(n);
  if (slot.outcomes.size() < n) slot.outcomes.resize(n);
  const std::size_t shares = helpers_.size() + 1;
  if (shares == 1 || n < 16 * shares) {  // (a few messages: handing them out costs more)
    analyze_range(slot, 0, n, analyzer_);
    return;
  }
  {
    base::MutexLock lock(pool_mutex_);
    pool_slot_ = &slot;
    pool_pending_ = static_cast<int>(helpers_.size());
    ++pool_round_;
  }
  pool_wake_.notify_all();
  std::exception_ptr mine;
  try {
    analyze_range(slot, 0, n / shares, analyzer_);
  } catch (...) {
    mine = std::current_exception();
  }
  std::exception_ptr theirs;
  {
    base::MutexLock lock(pool_mutex_);
    while (pool_pending_ > 0) lock.wait(pool_done_);
    theirs = std::exchange(pool_failure_, nullptr);
  }
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

void DedupWorker::analyze_range(Slot& slot, std::size_t begin, std::size_t end,
                                Analyzer& analyzer) {
  // One clock read per message: each one's time runs from the previous one's end.
  auto started = Clock::now();
  for (std::size_t i = begin; i < end; ++i) {
    if (!slot.jobs[i].decide) continue;
    const kafka::Message m = slot.messages[i];
    Prepared& prepared = slot.prepared[i];
    analyzer.prepare(m.payload(), prepared, m.key());
    Outcome& out = slot.outcomes[i];
    out.error = {};
    out.kept_sketch.shingles = 0;
    out.verdict = dedup::Verdict{};
    out.to_judge = false;
    if (!prepared.ok) {
      out.verdict.kind = dedup::VerdictKind::invalid;
      out.error = prepared.error;
    } else if (const std::string_view reason = dedup::invalid_reason(prepared.analysis);
               !reason.empty()) {
      out.verdict.kind = dedup::VerdictKind::invalid;
      out.verdict.fingerprint = prepared.analysis.summary.fingerprint;
      out.verdict.features = prepared.analysis.summary.features;
      out.error = reason;
    } else {
      out.to_judge = true;
    }
    const auto done = Clock::now();
    out.spent_ns = static_cast<std::uint64_t>((done - started).count());
    started = done;
  }
}

void DedupWorker::prepare(Slot& slot) {
  if (!decides_) {
    analyze_only(slot);
    return;
  }
  dedup::Engine& engine = classifier_.engine();
  for (const Remembered& r : slot.remember)
    engine.remember(r.fingerprint, r.time, r.ref, r.sketch, r.scope);
  slot.remember.clear();
  const std::size_t n = slot.messages.size();
  if (slot.prepared.size() < n) slot.prepared.resize(n);
  if (slot.outcomes.size() < n) slot.outcomes.resize(n);
  // Two messages ahead: a message to judge is decoded, analyzed and its
  // window accesses started (Classifier::prefetch) two judged messages before
  // its turn, and its second, dependent accesses (Classifier::prefetch_cells)
  // one before.
  std::size_t ahead = 0;  // the next message to analyze
  auto analyze_next = [&]() -> std::size_t {
    while (ahead < n && !slot.jobs[ahead].decide)
      ++ahead;  // skipped by the pipeline thread (consumer error, revoked partition)
    if (ahead == n) return n;
    const auto started = Clock::now();
    const kafka::Message m = slot.messages[ahead];
    analyzer_.prepare(m.payload(), slot.prepared[ahead], m.key());
    classifier_.prefetch(slot.prepared[ahead]);
    slot.outcomes[ahead].spent_ns = static_cast<std::uint64_t>((Clock::now() - started).count());
    return ahead++;
  };
  // The next two messages to judge, analyzed (n: none).
  std::size_t next_up = analyze_next();
  std::size_t then = analyze_next();
  for (std::size_t i = 0; i < n; ++i) {
    const Job& job = slot.jobs[i];
    if (!job.decide) continue;
    // i == next_up: the queue moves on by one.
    next_up = then;
    then = analyze_next();
    const auto started = Clock::now();
    if (next_up < n) classifier_.prefetch_cells(slot.prepared[next_up]);
    Outcome& out = slot.outcomes[i];
    out.error = {};
    out.verdict = classifier_.decide(
        slot.prepared[i], job.time, pack_ref(job.source, kafka::Message(slot.messages[i]).offset()),
        &out.error);
    out.kept_sketch.shingles = 0;
    if (out.verdict.kind == dedup::VerdictKind::unique) out.kept_sketch = engine.last_kept_sketch();
    out.spent_ns += static_cast<std::uint64_t>((Clock::now() - started).count());
  }
  slot.engine_stats = engine.stats();
  slot.oldest_live = engine.oldest_live();
}

}  // namespace neardup::stream
