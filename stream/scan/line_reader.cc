#include "stream/scan/line_reader.h"

#include "stream/pipeline/decode.h"

namespace neardup::stream::scan {

void LineReader::fill() {
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

void prepare_line(Analyzer& analyzer, std::string_view line, std::size_t skipped,
                  std::size_t max_bytes, Prepared& record) {
  if (skipped != 0) {
    record = Prepared{};
    record.error = oversize_error(skipped, max_bytes);
  } else {
    analyzer.prepare(line, record);
  }
}

void add_read_error(const LineReader& reader, ScanStats& stats) {
  if (reader.error()) {
    stats.read_error = true;
    stats.read_error_text = std::strerror(reader.error_number());
  }
}

}  // namespace neardup::stream::scan
