#pragma once
// Sizes `neardup scan`'s window once from the size of its input file.

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "stream/pipeline/pipeline.h"

namespace neardup::stream::scan {

/// Sizes the window once for what a regular file holds. Growing the window
/// step by step moves every cell at each step and faults its memory in again
/// (about a fifth of a scan's CPU over 200,000 records, docs/PERFORMANCE.md).
/// After the first kSample records, the bytes left in the file over the bytes
/// a record took so far estimate the records to come, and the share of them
/// kept so far the entries; the window reserves that at once (Engine::reserve,
/// never past its capacity) and grows as before if the estimate falls short.
/// Pipes and terminals have no size: their window grows as it goes.
/// Not thread-safe: on the judging thread.
class WindowSizer {
 public:
  explicit WindowSizer(std::FILE* in);
  /// True once the window is sized, or when the input has no size.
  bool done() const { return left_ == 0; }
  /// One record of `line_bytes` (its newline not included) was read; judged
  /// records so far are in `classifier`'s stats.
  void read(std::size_t line_bytes, Classifier& classifier) {
    if (left_ != 0) sample(line_bytes, classifier);
  }

 private:
  void sample(std::size_t line_bytes, Classifier& classifier);

  static constexpr std::uint64_t kSample = 1024;
  std::uint64_t left_ = 0;  // bytes in the file when the scan began; 0 once sized or unknown
  std::uint64_t bytes_ = 0;
  std::uint64_t records_ = 0;
};

}  // namespace neardup::stream::scan
