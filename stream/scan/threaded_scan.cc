#include "stream/scan/threaded_scan.h"

#include <pthread.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"
#include "stream/pipeline/pipeline.h"
#include "stream/scan/line_reader.h"
#include "stream/scan/verdict_sink.h"
#include "stream/scan/window_sizer.h"

namespace neardup::stream::scan {

namespace {

/// Up to kChunkRecords lines (or a little over kChunkBytes) of the input,
/// copied out of the reader, with their prepared records once analyzed and
/// their verdicts once judged.
struct Chunk {
  static constexpr std::size_t kChunkRecords = 512;
  static constexpr std::size_t kChunkBytes = 256 * 1024;
  struct Line {
    std::size_t begin = 0, size = 0;  ///< where in `bytes`
    std::size_t skipped = 0;          ///< != 0: too long to hold (LineReader::skipped)
  };
  struct Judged {
    dedup::Verdict verdict;
    std::string_view error;  ///< views the record's Prepared::error or a static string
  };
  std::string bytes;
  std::vector<Line> lines;
  // prepared[i] and judged[i] are lines[i]'s; both grow, and are reused with the chunk.
  std::vector<Prepared> prepared;
  std::vector<Judged> judged;
  bool analyzed = false;  ///< guarded by ChunkPipeline::mutex_
};

/// The threaded scan around its judging thread (the caller). Each chunk goes
/// through three steps, each a role that any of the scan's threads takes when
/// it is free:
///   - read: take a free chunk and fill it from the LineReader (one thread at
///     a time; chunks are queued in input order as they are read), then
///     analyze it with the thread's own Analyzer;
///   - judge: the judging thread only, the oldest chunk once analyzed, in
///     input order (Classifier: the window);
///   - write: the verdicts of the oldest judged chunk (VerdictSink: counts,
///     kept ids, output; one thread at a time, in input order), then free it.
/// The analysis threads write whenever a judged chunk waits, else read; the
/// judging thread judges whenever the oldest chunk is analyzed, else writes or
/// reads, so it waits only when every chunk is taken. The threads that run are
/// the ones asked for, and a fixed pool of chunks bounds the memory.
///
/// Thread rules: start(), next(), judged(), drain() and finish() are for the
/// judging thread. A chunk belongs to whichever thread took it from a queue
/// until it queues it again; the queues, the flags and Chunk::analyzed are
/// guarded by mutex_, the LineReader (and its end) by read_mutex_ (taken before
/// mutex_, never inside it), the VerdictSink by the writing_ flag. From start()
/// until finish() (or the destructor) returns, nothing else may use the
/// LineReader or the VerdictSink.
class ChunkPipeline {
 public:
  /// Makes `threads` (>= 2) Analyzers, one per analysis thread and the judging
  /// thread's (throws for unusable options), and the chunk pool; no thread
  /// starts before start().
  ChunkPipeline(const config::Config& config, unsigned threads, LineReader& reader,
                VerdictSink& sink)
      : reader_(reader), sink_(sink), max_bytes_(config.input.max_bytes) {
    analyzers_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) analyzers_.emplace_back(config);
    base::MutexLock lock(mutex_);
    for (unsigned i = 0; i < 2 * threads + 2; ++i) {
      chunks_.push_back(std::make_unique<Chunk>());
      free_.push_back(chunks_.back().get());
    }
  }
  ~ChunkPipeline() { stop_and_join(); }
  ChunkPipeline(const ChunkPipeline&) = delete;
  ChunkPipeline& operator=(const ChunkPipeline&) = delete;

  /// Starts threads - 1 analysis threads (std::system_error if one cannot start).
  void start() {
    for (std::size_t i = 0; i + 1 < analyzers_.size(); ++i)  // the last is the judging thread's
      threads_.emplace_back([this, &analyzer = analyzers_[i]] {
        pthread_setname_np(pthread_self(), "neardup-scan");
        analyze_loop(analyzer);
      });
  }

  /// The oldest chunk not yet judged, once analyzed; nullptr at the end of the
  /// input, once the output failed, or after a thread failed (finish()
  /// rethrows that).
  Chunk* next() EXCLUDES(mutex_, read_mutex_) {
    for (;;) {
      Chunk* to_write = nullptr;
      {
        base::MutexLock lock(mutex_);
        for (;;) {
          if (stop_) return nullptr;
          if (!in_order_.empty() && in_order_.front()->analyzed) {
            Chunk* chunk = in_order_.front();
            in_order_.pop_front();
            return chunk;
          }
          if (in_order_.empty() && read_done_) return nullptr;
          if ((to_write = take_write()) != nullptr) break;
          if (!read_done_ && !free_.empty()) break;  // read instead of waiting
          lock.wait(judge_wake_);
        }
      }
      if (to_write != nullptr) {
        write(to_write);
      } else if (Chunk* chunk = read()) {
        analyze(analyzers_.back(), *chunk);
      }
    }
  }

  /// Queues a chunk from next(), its Chunk::judged filled, for writing.
  void judged(Chunk* chunk) EXCLUDES(mutex_) {
    {
      base::MutexLock lock(mutex_);
      to_write_.push_back(chunk);
    }
    worker_wake_.notify_one();
  }

  /// After next() returned nullptr: writes what is judged and not yet written
  /// (unless the output failed or a thread did).
  void drain() EXCLUDES(mutex_) {
    for (;;) {
      Chunk* to_write = nullptr;
      {
        base::MutexLock lock(mutex_);
        while (!stop_ && writing_) lock.wait(judge_wake_);
        if (stop_ || (to_write = take_write()) == nullptr) return;
      }
      write(to_write);
    }
  }

  /// Stops and joins the threads; rethrows the first exception one of them threw.
  void finish() EXCLUDES(mutex_) {
    stop_and_join();
    base::MutexLock lock(mutex_);
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void analyze_loop(Analyzer& analyzer) EXCLUDES(mutex_, read_mutex_) {
    try {
      for (;;) {
        Chunk* to_write = nullptr;
        {
          base::MutexLock lock(mutex_);
          if (stop_) return;
          to_write = take_write();
        }
        if (to_write != nullptr) {
          write(to_write);
          continue;
        }
        if (Chunk* chunk = read()) {
          analyze(analyzer, *chunk);
          continue;
        }
        base::MutexLock lock(mutex_);
        while (!stop_ && !read_done_ && free_.empty() && (writing_ || to_write_.empty()))
          lock.wait(worker_wake_);
        // At the end of the input the judging thread writes what is left (drain()).
        if (stop_ || (read_done_ && (writing_ || to_write_.empty()))) return;
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }

  /// The oldest judged chunk, with the writing role, if it is free.
  Chunk* take_write() REQUIRES(mutex_) {
    if (writing_ || to_write_.empty()) return nullptr;
    writing_ = true;
    Chunk* chunk = to_write_.front();
    to_write_.pop_front();
    return chunk;
  }

  /// Writes a chunk from take_write(), frees it and gives the role back.
  void write(Chunk* chunk) EXCLUDES(mutex_) {
    bool ok = true;
    for (std::size_t i = 0; i < chunk->lines.size() && ok; ++i)
      ok = sink_.write(chunk->prepared[i], chunk->judged[i].verdict, chunk->judged[i].error);
    {
      base::MutexLock lock(mutex_);
      writing_ = false;
      free_.push_back(chunk);
      if (!ok) stop_ = true;  // the output is gone: reading and judging on would be for nobody
    }
    if (ok) {
      worker_wake_.notify_one();
      judge_wake_.notify_one();
    } else {
      notify_everyone();
    }
  }

  /// Takes a free chunk and fills it with the next lines, queued in input
  /// order; nullptr when no chunk is free, the input has ended or the scan stops.
  Chunk* read() EXCLUDES(mutex_, read_mutex_) {
    Chunk* chunk = nullptr;
    {
      base::MutexLock lock(mutex_);
      if (stop_ || read_done_ || free_.empty()) return nullptr;
      chunk = free_.back();
      free_.pop_back();
    }
    base::MutexLock read_lock(read_mutex_);
    chunk->bytes.clear();
    chunk->lines.clear();
    // Another thread may have met the end since this one looked: then the chunk stays empty.
    const bool more = !input_ended_ && fill(*chunk);
    input_ended_ = !more;
    {
      base::MutexLock lock(mutex_);
      if (!more) read_done_ = true;
      if (chunk->lines.empty()) {
        free_.push_back(chunk);
        chunk = nullptr;
      } else {
        chunk->analyzed = false;
        in_order_.push_back(chunk);
      }
    }
    if (!more) notify_everyone();  // the analysis threads end, the judging thread may be at the end
    return chunk;
  }

  /// Appends lines to `chunk` until it is full; false at the end of the input.
  bool fill(Chunk& chunk) REQUIRES(read_mutex_) {
    std::string_view line;
    while (chunk.lines.size() < Chunk::kChunkRecords && chunk.bytes.size() < Chunk::kChunkBytes) {
      if (!reader_.next(line)) return false;
      chunk.lines.push_back({chunk.bytes.size(), line.size(), reader_.skipped()});
      chunk.bytes.append(line);
    }
    return true;
  }

  /// Prepares every line of `chunk` (which the calling thread read) and marks it analyzed.
  void analyze(Analyzer& analyzer, Chunk& chunk) EXCLUDES(mutex_) {
    if (chunk.prepared.size() < chunk.lines.size()) chunk.prepared.resize(chunk.lines.size());
    const std::string_view bytes = chunk.bytes;
    for (std::size_t i = 0; i < chunk.lines.size(); ++i) {
      const Chunk::Line& line = chunk.lines[i];
      prepare_line(analyzer, bytes.substr(line.begin, line.size), line.skipped, max_bytes_,
                   chunk.prepared[i]);
    }
    {
      base::MutexLock lock(mutex_);
      chunk.analyzed = true;
    }
    judge_wake_.notify_one();  // only the judging thread waits on it (it may be the caller)
  }

  void fail(std::exception_ptr failure) EXCLUDES(mutex_) {
    {
      base::MutexLock lock(mutex_);
      if (!failure_) failure_ = std::move(failure);
      stop_ = true;
    }
    notify_everyone();
  }

  void stop_and_join() EXCLUDES(mutex_) {
    {
      base::MutexLock lock(mutex_);
      stop_ = true;
    }
    notify_everyone();
    for (std::thread& thread : threads_)
      if (thread.joinable()) thread.join();
  }

  void notify_everyone() {
    worker_wake_.notify_all();
    judge_wake_.notify_all();
  }

  LineReader& reader_;
  VerdictSink& sink_;
  const std::size_t max_bytes_;
  std::vector<Analyzer> analyzers_;             // one per analysis thread, the last the judge's
  std::vector<std::unique_ptr<Chunk>> chunks_;  // the pool, owned here
  base::Mutex read_mutex_;
  bool input_ended_ GUARDED_BY(read_mutex_) = false;
  base::Mutex mutex_;
  // The analysis threads wait for a free chunk, a judged one (when nobody
  // writes) or the end; the judging thread for an analyzed chunk, the writing
  // role or the end.
  std::condition_variable worker_wake_, judge_wake_;
  std::vector<Chunk*> free_ GUARDED_BY(mutex_);
  std::deque<Chunk*> in_order_ GUARDED_BY(mutex_);  // read, not yet judged, oldest first
  std::deque<Chunk*> to_write_ GUARDED_BY(mutex_);  // judged, not yet written, oldest first
  bool writing_ GUARDED_BY(mutex_) = false;         // a thread holds the writing role
  bool read_done_ GUARDED_BY(mutex_) = false;       // the last chunk has been read
  bool stop_ GUARDED_BY(mutex_) = false;
  std::exception_ptr failure_ GUARDED_BY(mutex_);
  std::vector<std::thread> threads_;  // the analysis threads
};

}  // namespace

ScanStats scan_on_threads(const config::Config& config, std::FILE* in, std::FILE* out,
                          unsigned threads) {
  LineReader reader(in, config.input.max_bytes);
  VerdictSink sink(config, out);
  ChunkPipeline pipeline(config, threads, reader, sink);  // the Analyzers: options checked first
  Classifier classifier(config);
  WindowSizer sizer(in);
  pipeline.start();
  // Within a chunk, the same prefetch pipeline as on one thread: record i + 2's
  // window accesses and record i + 1's dependent ones start before record i is
  // judged (a chunk's first two records get theirs just before: 2 of 512).
  std::uint64_t number = 0;
  while (Chunk* chunk = pipeline.next()) {
    const std::size_t count = chunk->lines.size();
    const std::vector<Prepared>& prepared = chunk->prepared;
    if (chunk->judged.size() < count) chunk->judged.resize(count);
    if (!sizer.done())
      for (const Chunk::Line& line : chunk->lines) sizer.read(line.size + line.skipped, classifier);
    for (std::size_t i = 0; i < count && i < 2; ++i) classifier.prefetch(prepared[i]);
    for (std::size_t i = 0; i < count; ++i) {
      if (i + 2 < count) classifier.prefetch(prepared[i + 2]);
      if (i + 1 < count) classifier.prefetch_cells(prepared[i + 1]);
      Chunk::Judged& judged = chunk->judged[i];
      judged.error = {};
      judged.verdict = classifier.decide(prepared[i], dedup::EventTime{0},
                                         dedup::RecordRef{++number}, &judged.error);
    }
    pipeline.judged(chunk);
  }
  pipeline.drain();
  pipeline.finish();
  ScanStats stats = sink.finish();
  add_read_error(reader, stats);
  stats.analysis_threads = threads;
  return stats;
}

}  // namespace neardup::stream::scan
