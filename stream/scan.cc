#include "stream/scan.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "stream/decode.h"
#include "stream/json_out.h"
#include "stream/pipeline.h"

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
  }
  /// The id of kept line `line`; empty when it had none (the line number is the id).
  std::string_view find(std::uint64_t line) const {
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
        // The sketch's estimated Jaccard, in thousandths ("0.875").
        const auto milli = static_cast<std::uint64_t>(*verdict.similarity * 1000.0 + 0.5);
        buffer_.append(",\"similarity\":");
        append_number(buffer_, milli / 1000);
        buffer_.push_back('.');
        const char digits[3] = {static_cast<char>('0' + milli / 100 % 10),
                                static_cast<char>('0' + milli / 10 % 10),
                                static_cast<char>('0' + milli % 10)};
        buffer_.append(digits, 3);
      }
    }
    if (verdict.kind == dedup::VerdictKind::invalid) {
      buffer_.append(",\"error\":");
      append_json_string(buffer_, error);
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

}  // namespace

ScanStats scan_stream(const config::Config& config, std::FILE* in, std::FILE* out) {
  Analyzer analyzer(config);
  Classifier classifier(config);
  KeptIds kept(config.dedup.window.max_entries);
  JsonlSink sink(out);
  LineReader reader(in, config.input.max_bytes);
  ScanStats stats;
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
  auto prepare = [&](Prepared& record) {
    if (reader.skipped() != 0) {  // too long to hold: invalid, as the decoder would say
      record = Prepared{};
      record.error = oversize_error(reader.skipped(), config.input.max_bytes);
    } else {
      analyzer.prepare(line, record);
    }
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
    const std::uint64_t number = ++stats.records;
    std::string_view error;
    const dedup::Verdict verdict =
        classifier.judge(record, dedup::EventTime{0}, dedup::RecordRef{number}, &error);
    switch (verdict.kind) {
      case dedup::VerdictKind::unique:
        ++stats.unique;
        if (!record.id.empty()) kept.add(number, record.id);
        break;
      case dedup::VerdictKind::duplicate:
        ++stats.duplicate;
        break;
      case dedup::VerdictKind::invalid:
        ++stats.invalid;
        break;
    }
    sink.write(number, record.id, verdict, error, kept);
    if (sink.error() != 0) break;  // the output is gone: reading on would judge records nobody sees
  }
  sink.flush();
  if (sink.error() != 0) {
    stats.write_error = true;
    stats.write_error_text = std::strerror(sink.error());
  }
  if (reader.error()) {
    stats.read_error = true;
    stats.read_error_text = std::strerror(reader.error_number());
  }
  return stats;
}

}  // namespace neardup::stream
