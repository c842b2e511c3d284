#pragma once
// The verdicts' side of `neardup scan`: counts, kept ids and the JSON Lines output.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "stream/pipeline/pipeline.h"
#include "stream/scan/kept_ids.h"
#include "stream/scan/scan.h"

namespace neardup::stream::scan {

/// One JSON object a line per verdict, buffered: {"id", "verdict", then "of",
/// "distance", "similarity", "count" for a duplicate, "error" for an invalid
/// record, else "fingerprint"}. Flushes every 64 KiB and when destroyed.
class JsonlSink {
 public:
  explicit JsonlSink(std::FILE* out);
  ~JsonlSink();
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  /// Appends the verdict of line `line` (its id `id`, or the line number when
  /// empty); `kept` names a duplicate's original.
  void write(std::uint64_t line, const std::string& id, const dedup::Verdict& verdict,
             std::string_view error, const KeptIds& kept);

  /// Writes what is buffered. After the first failed write nothing more is
  /// written (verdicts after a gap would look complete); error() tells.
  void flush();
  /// The errno of the first failed write, or 0.
  int error() const { return error_; }

 private:
  static constexpr std::size_t kFlushAt = 1 << 16;
  void append_id(std::uint64_t line, std::string_view id);
  std::FILE* out_;
  std::string buffer_;
  int error_ = 0;
};

/// The verdicts' side, in input order: counts, the ids of kept records (to
/// name the original of a duplicate) and the JSON Lines output. On the calling
/// thread of a one-thread scan; on the writer thread of a threaded one.
class VerdictSink {
 public:
  VerdictSink(const config::Config& config, std::FILE* out);

  /// Counts and writes the verdict of the next record (line number
  /// stats.records + 1). False once the output has failed: stop there.
  bool write(const Prepared& record, const dedup::Verdict& verdict, std::string_view error);

  /// Flushes the output; the counts and the write error, if any.
  ScanStats finish();

 private:
  KeptIds kept_;
  JsonlSink sink_;
  ScanStats stats_;
};

}  // namespace neardup::stream::scan
