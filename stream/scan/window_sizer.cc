#include "stream/scan/window_sizer.h"

#include <sys/stat.h>

#include <algorithm>

namespace neardup::stream::scan {

WindowSizer::WindowSizer(std::FILE* in) {
  struct stat st {};
  if (in != nullptr && fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t at = ftello(in);  // (a file may be handed over part read)
    if (st.st_size > at) left_ = static_cast<std::uint64_t>(st.st_size - std::max<off_t>(at, 0));
  }
}

void WindowSizer::sample(std::size_t line_bytes, Classifier& classifier) {
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

}  // namespace neardup::stream::scan
