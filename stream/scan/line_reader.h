#pragma once
// The lines of `neardup scan`'s input, and what becomes of one.

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "stream/pipeline/pipeline.h"
#include "stream/scan/scan.h"

namespace neardup::stream::scan {

/// Splits a FILE* into lines with one growing buffer (no per-line allocation).
/// A line longer than `max_line` bytes is not held: its bytes are counted and
/// dropped as they arrive, and it comes back empty with skipped() its size, so
/// memory stays within a few times max_line whatever the input.
/// Not thread-safe: one thread at a time.
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
  void fill();  // reads more, keeping the current line at the start
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
                  std::size_t max_bytes, Prepared& record);

/// Records a read error of `reader`, if any, in `stats`.
void add_read_error(const LineReader& reader, ScanStats& stats);

}  // namespace neardup::stream::scan
