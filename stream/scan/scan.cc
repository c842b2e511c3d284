#include "stream/scan/scan.h"

#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/thread_annotations.h"
#include "stream/pipeline/decode.h"
#include "stream/pipeline/pipeline.h"
#include "stream/records/json_out.h"

namespace neardup::stream {

namespace {

/// Ids of kept records, to name the original of a duplicate. The window evicts
/// in insertion order and holds at most max_entries, so the newest max_entries
/// kept ids always cover it. Two rings of at most `capacity` in kept order hold
/// each kept record's line number and where its id starts in one byte arena
/// (offsets count every byte ever appended; an id ends where the next newer one
/// starts). A lookup is a binary search over contiguous 8-byte lines (its first
/// steps always hit the same, cached elements). 16 bytes per kept record plus
/// its id's bytes (at most twice over, before dead ones are dropped), where a
/// string per record took 40 bytes and a heap block for ids past 15 bytes.
class KeptIds {
 public:
  explicit KeptIds(std::size_t capacity) : capacity_(capacity) {}
  void add(std::uint64_t line, std::string_view id) {
    if (capacity_ == 0) return;
    const std::uint64_t start = base_ + bytes_.size();
    if (lines_.size() < capacity_) {
      if (lines_.size() == lines_.capacity()) {  // grow, but never past capacity
        const std::size_t want =
            std::min(capacity_, std::max<std::size_t>(1024, 2 * lines_.size()));
        lines_.reserve(want);
        starts_.reserve(want);
      }
      lines_.push_back(line);
      starts_.push_back(start);
    } else {
      lines_[oldest_] = line;  // full: the newest replaces the oldest
      starts_[oldest_] = start;
      if (++oldest_ == capacity_) oldest_ = 0;
      // The bytes before the oldest id still kept are dead; drop them once they
      // are half the arena (each byte is moved O(1) times, amortized).
      const auto dead = static_cast<std::size_t>(starts_[oldest_] - base_);
      if (dead >= kMinDrop && 2 * dead >= bytes_.size()) {
        bytes_.erase(0, dead);
        base_ = starts_[oldest_];
      }
    }
    bytes_.append(id);
    ++inserts_;
  }

  /// A duplicate took kept line `line`'s place in the window (refresh): its id
  /// stays needed after the newest max_entries kept ids have moved past it.
  /// Ids renewed longer than max_entries window inserts ago are dropped once
  /// more than `capacity` are held (the window has evicted those entries).
  void renew(std::uint64_t line) {
    if (capacity_ == 0) return;
    auto it = renewed_.find(line);
    if (it == renewed_.end()) {
      const std::string_view id = find(line);
      if (id.empty()) return;  // named by its line number: nothing to keep
      it = renewed_.emplace(line, Renewed{std::string(id), 0}).first;
    }
    it->second.at = ++inserts_;
    if (renewed_.size() > capacity_) {
      std::erase_if(renewed_, [&](const auto& r) { return r.second.at + capacity_ < inserts_; });
    }
  }
  /// The id of kept line `line`; empty when it had none (the line number is the id).
  std::string_view find(std::uint64_t line) const {
    if (auto it = renewed_.find(line); it != renewed_.end()) return it->second.id;
    // In kept (increasing) order the ring is [oldest_, size) then [0, oldest_).
    const bool in_newer = oldest_ != 0 && line >= lines_[0];
    const auto split = lines_.begin() + static_cast<std::ptrdiff_t>(oldest_);
    const auto begin = in_newer ? lines_.begin() : split;
    const auto end = in_newer ? split : lines_.end();
    const auto it = std::lower_bound(begin, end, line);
    if (it == end || *it != line) return {};
    const auto at = static_cast<std::size_t>(it - lines_.begin());
    const std::size_t next =
        at + 1 == lines_.size() ? 0 : at + 1;  // the next newer id's slot, in ring order
    const bool newest = next == oldest_;
    const std::uint64_t stop = newest ? base_ + bytes_.size() : starts_[next];
    return std::string_view(bytes_).substr(static_cast<std::size_t>(starts_[at] - base_),
                                           static_cast<std::size_t>(stop - starts_[at]));
  }

 private:
  static constexpr std::size_t kMinDrop = 64 * 1024;  // no memmove for a few dead bytes

  std::size_t capacity_;
  std::vector<std::uint64_t> lines_;  // a ring once full
  std::vector<std::uint64_t>
      starts_;              // starts_[i]: where the id of lines_[i] starts (an arena offset)
  std::string bytes_;       // the ids, in kept order, from offset base_ on
  std::uint64_t base_ = 0;  // the offset of bytes_[0]
  std::size_t oldest_ = 0;  // the ring's oldest slot (0 until full)
  struct Renewed {
    std::string id;
    std::uint64_t at;  // inserts_ when last renewed
  };
  std::unordered_map<std::uint64_t, Renewed> renewed_;  // by line (refresh_on_duplicate)
  std::uint64_t inserts_ = 0;                           // window inserts: kept and renewed
};

void append_number(std::string& out, std::uint64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

class JsonlSink {
 public:
  explicit JsonlSink(std::FILE* out) : out_(out) { buffer_.reserve(kFlushAt + 4096); }
  ~JsonlSink() { flush(); }

  void write(std::uint64_t line, const std::string& id, const dedup::Verdict& verdict,
             std::string_view error, const KeptIds& kept) {
    buffer_.append("{\"id\":");
    append_id(line, id);
    buffer_.append(",\"verdict\":\"");
    buffer_.append(dedup::to_string(verdict.kind));
    buffer_.push_back('"');
    if (verdict.kind == dedup::VerdictKind::duplicate) {
      buffer_.append(",\"of\":");
      const std::uint64_t of = verdict.match->of.value;
      append_id(of, kept.find(of));
      buffer_.append(",\"distance\":");
      append_number(buffer_, static_cast<std::uint64_t>(verdict.match->distance));
      if (verdict.similarity) {
        buffer_.append(",\"similarity\":");
        append_similarity(buffer_, *verdict.similarity);  // the sketch's estimate, "0.875"
      }
      buffer_.append(",\"count\":");
      append_number(buffer_, verdict.count);
    }
    if (verdict.kind == dedup::VerdictKind::invalid) {
      buffer_.append(",\"error\":");
      base::append_json_string(buffer_, error);
    } else {
      buffer_.append(",\"fingerprint\":\"");
      verdict.fingerprint.append_hex(buffer_);
      buffer_.push_back('"');
    }
    buffer_.append("}\n");
    if (buffer_.size() >= kFlushAt) flush();
  }

  /// Writes what is buffered. After the first failed write nothing more is
  /// written (verdicts after a gap would look complete); error() tells.
  void flush() {
    if (error_ == 0 && !buffer_.empty() &&
        std::fwrite(buffer_.data(), 1, buffer_.size(), out_) != buffer_.size())
      error_ = errno != 0 ? errno : EIO;
    buffer_.clear();
    if (error_ == 0 && std::fflush(out_) != 0) error_ = errno != 0 ? errno : EIO;
  }
  /// The errno of the first failed write, or 0.
  int error() const { return error_; }

 private:
  static constexpr std::size_t kFlushAt = 1 << 16;
  void append_id(std::uint64_t line, std::string_view id) {
    if (id.empty()) {
      append_number(buffer_, line);
    } else {
      buffer_.append(id);
    }
  }
  std::FILE* out_;
  std::string buffer_;
  int error_ = 0;
};

/// Splits a FILE* into lines with one growing buffer (no per-line allocation).
/// A line longer than `max_line` bytes is not held: its bytes are counted and
/// dropped as they arrive, and it comes back empty with skipped() its size, so
/// memory stays within a few times max_line whatever the input.
class LineReader {
 public:
  LineReader(std::FILE* in, std::size_t max_line) : in_(in), max_line_(max_line) {
    buffer_.resize(1 << 16);
  }

  /// Next line without its terminator; false at EOF or on a read error.
  bool next(std::string_view& line) {
    skipped_ = 0;
    for (;;) {
      const char* start = buffer_.data() + begin_;
      if (const void* nl = std::memchr(start, '\n', end_ - begin_)) {
        const auto length = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
        begin_ += length + 1;
        return deliver(line, start, length);
      }
      if (eof_) {
        if (begin_ == end_ && dropped_ == 0) return false;
        const std::size_t length = end_ - begin_;
        begin_ = end_;
        return deliver(line, start, length);
      }
      // Past max_line (and a "\r") with no end in sight: too long to be a record.
      if (dropped_ != 0 || end_ - begin_ > max_line_ + 1) {
        if (end_ > begin_) last_dropped_ = buffer_[end_ - 1];
        dropped_ += end_ - begin_;
        begin_ = end_ = 0;
      }
      fill();
    }
  }
  /// The size of the line next() just returned empty because it was too long; else 0.
  std::size_t skipped() const { return skipped_; }
  bool error() const { return error_ != 0; }
  int error_number() const { return error_; }

 private:
  bool deliver(std::string_view& line, const char* start, std::size_t length) {
    if (dropped_ != 0) {
      const char last = length != 0 ? start[length - 1] : last_dropped_;
      skipped_ =
          dropped_ + length - (last == '\r' ? 1 : 0);  // its size as trim_cr() would leave it
      dropped_ = 0;
      line = {};
      return true;
    }
    line = trim_cr(std::string_view(start, length));
    return true;
  }
  static std::string_view trim_cr(std::string_view line) {
    return !line.empty() && line.back() == '\r' ? line.substr(0, line.size() - 1) : line;
  }
  void fill() {
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const std::size_t n = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, in_);
    end_ += n;
    if (n == 0) {
      eof_ = true;
      if (std::ferror(in_)) error_ = errno ? errno : EIO;
    }
  }
  std::FILE* in_;
  std::size_t max_line_;
  std::string buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::size_t dropped_ = 0;  // bytes of the current line dropped so far (it is too long)
  char last_dropped_ = 0;    // the last of them
  std::size_t skipped_ = 0;
  bool eof_ = false;
  int error_ = 0;
};

/// Decode + analysis of one line as LineReader gave it: `skipped` != 0 means
/// the line was too long to hold (invalid, as the decoder would say).
void prepare_line(Analyzer& analyzer, std::string_view line, std::size_t skipped,
                  std::size_t max_bytes, Prepared& record) {
  if (skipped != 0) {
    record = Prepared{};
    record.error = oversize_error(skipped, max_bytes);
  } else {
    analyzer.prepare(line, record);
  }
}

/// The verdicts' side, in input order: counts, the ids of kept records (to
/// name the original of a duplicate) and the JSON Lines output. On the calling
/// thread of a one-thread scan; on the writer thread of a threaded one.
class VerdictSink {
 public:
  VerdictSink(const config::Config& config, std::FILE* out)
      : kept_(config.dedup.window.max_entries), sink_(out) {}

  /// Counts and writes the verdict of the next record (line number
  /// stats.records + 1). False once the output has failed: stop there.
  bool write(const Prepared& record, const dedup::Verdict& verdict, std::string_view error) {
    const std::uint64_t number = ++stats_.records;
    switch (verdict.kind) {
      case dedup::VerdictKind::unique:
        ++stats_.unique;
        if (!record.id.empty()) kept_.add(number, record.id);
        break;
      case dedup::VerdictKind::duplicate:
        ++stats_.duplicate;
        if (verdict.refreshed) kept_.renew(verdict.match->of.value);
        break;
      case dedup::VerdictKind::invalid:
        ++stats_.invalid;
        break;
    }
    sink_.write(number, record.id, verdict, error, kept_);
    return sink_.error() == 0;
  }

  /// Flushes the output; the counts and the write error, if any.
  ScanStats finish() {
    sink_.flush();
    if (sink_.error() != 0) {
      stats_.write_error = true;
      stats_.write_error_text = std::strerror(sink_.error());
    }
    return stats_;
  }

 private:
  KeptIds kept_;
  JsonlSink sink_;
  ScanStats stats_;
};

void add_read_error(const LineReader& reader, ScanStats& stats) {
  if (reader.error()) {
    stats.read_error = true;
    stats.read_error_text = std::strerror(reader.error_number());
  }
}

/// Sizes the window once for what a regular file holds. Growing the window
/// step by step moves every cell at each step and faults its memory in again
/// (about a fifth of a scan's CPU over 200,000 records, docs/PERFORMANCE.md).
/// After the first kSample records, the bytes left in the file over the bytes
/// a record took so far estimate the records to come, and the share of them
/// kept so far the entries; the window reserves that at once (Engine::reserve,
/// never past its capacity) and grows as before if the estimate falls short.
/// Pipes and terminals have no size: their window grows as it goes.
class WindowSizer {
 public:
  explicit WindowSizer(std::FILE* in) {
    struct stat st {};
    if (in != nullptr && fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode)) {
      const off_t at = ftello(in);  // (a file may be handed over part read)
      if (st.st_size > at) left_ = static_cast<std::uint64_t>(st.st_size - std::max<off_t>(at, 0));
    }
  }
  /// True once the window is sized, or when the input has no size.
  bool done() const { return left_ == 0; }
  /// One record of `line_bytes` (its newline not included) was read; judged
  /// records so far are in `classifier`'s stats.
  void read(std::size_t line_bytes, Classifier& classifier) {
    if (left_ == 0) return;
    bytes_ += line_bytes + 1;
    if (++records_ < kSample) return;
    const dedup::EngineStats stats = classifier.engine().stats();
    const std::uint64_t judged = stats.unique + stats.duplicate + stats.invalid;
    if (bytes_ < left_ && judged != 0) {
      const double to_come = static_cast<double>(left_ - bytes_) / static_cast<double>(bytes_) *
                             static_cast<double>(records_);
      const double kept = static_cast<double>(stats.unique) / static_cast<double>(judged);
      classifier.engine().reserve(stats.unique + static_cast<std::size_t>(to_come * kept));
    }
    left_ = 0;
  }

 private:
  static constexpr std::uint64_t kSample = 1024;
  std::uint64_t left_ = 0;  // bytes in the file when the scan began; 0 once sized or unknown
  std::uint64_t bytes_ = 0;
  std::uint64_t records_ = 0;
};

ScanStats scan_on_one_thread(const config::Config& config, std::FILE* in, std::FILE* out) {
  Analyzer analyzer(config);
  Classifier classifier(config);
  VerdictSink sink(config, out);
  LineReader reader(in, config.input.max_bytes);
  // Two records ahead: line n + 2 is decoded, analyzed and its window
  // accesses started (Classifier::prefetch), and line n + 1's second, dependent
  // ones (Classifier::prefetch_cells), before line n is judged, so their cache
  // misses overlap the judging. From then on only a prepared record's
  // analysis, id and error are read, never its text (which may view a line the
  // reader has since replaced).
  Prepared prepared[3];
  std::size_t ready = 0;  // records prepared and not yet judged, in the slots from `current` on
  std::string_view line;
  bool have = true;
  std::uint64_t number = 0;
  WindowSizer sizer(in);
  auto prepare = [&](Prepared& record) {
    sizer.read(line.size() + reader.skipped(), classifier);
    prepare_line(analyzer, line, reader.skipped(), config.input.max_bytes, record);
    classifier.prefetch(record);
  };
  while (ready < 2 && (have = reader.next(line))) prepare(prepared[ready++]);
  for (std::size_t current = 0; ready != 0; current = (current + 1) % 3, --ready) {
    if (have && (have = reader.next(line))) {
      prepare(prepared[(current + ready) % 3]);
      ++ready;
    }
    if (ready >= 2) classifier.prefetch_cells(prepared[(current + 1) % 3]);
    const Prepared& record = prepared[current];
    std::string_view error;
    const dedup::Verdict verdict =
        classifier.decide(record, dedup::EventTime{0}, dedup::RecordRef{++number}, &error);
    // A failed output stops the scan: reading on would judge records nobody sees.
    if (!sink.write(record, verdict, error)) break;
  }
  ScanStats stats = sink.finish();
  add_read_error(reader, stats);
  return stats;
}

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

}  // namespace

unsigned available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<unsigned>(count);
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware != 0 ? hardware : 1;
}

bool analysis_depends_on_history(const config::Config& config) {
  return config.dedup.text.weighting == dedup::Weighting::tf_idf &&
         config.dedup.text.idf_source == dedup::IdfSource::stream;
}

ScanStats scan_stream(const config::Config& config, std::FILE* in, std::FILE* out,
                      unsigned threads) {
  if (threads <= 1 || analysis_depends_on_history(config))
    return scan_on_one_thread(config, in, out);
  return scan_on_threads(config, in, out, threads);
}

}  // namespace neardup::stream
