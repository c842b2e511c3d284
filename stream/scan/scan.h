#pragma once
// The `scan` source (lines of a FILE*) and sink (JSON Lines verdicts), on one
// thread or with the decode + analysis spread over several.

#include <cstdint>
#include <cstdio>
#include <string>

#include "config/config.h"

namespace neardup::stream {

struct ScanStats {
  std::uint64_t records = 0, unique = 0, duplicate = 0, invalid = 0;
  bool read_error = false;
  std::string read_error_text;
  bool write_error =
      false;  ///< writing `out` failed (e.g. the disk is full): the scan stopped there
  std::string write_error_text;
  unsigned analysis_threads = 1;  ///< threads that decoded and analyzed (see scan_stream)
};

/// The CPUs this process may run on (sched_getaffinity; else
/// std::thread::hardware_concurrency), at least 1: `neardup scan`'s default --threads.
unsigned available_cores();

/// True when a record's analysis depends on the records analyzed before it: a
/// learned IDF (YAML dedup.weighting tf_idf with dedup.idf_source stream). Such a
/// scan analyzes on one thread whatever `threads` asks for.
bool analysis_depends_on_history(const config::Config& config);

/// Reads records (one per line; "\r\n" accepted) from `in` until EOF and writes
/// one JSON verdict per record to `out`, in input order. Record i (1-based line
/// number) is RecordRef{i}; its id is the id field, or i when absent. Scan has
/// no event time, so the window is bounded by max_entries only. A failed write
/// to `out` stops the scan (write_error); a failed read ends it (read_error).
///
/// `threads`: how many threads the scan runs on, the calling one included
/// (values below 1 count as 1). 1: everything on the calling thread. N > 1:
/// N - 1 more threads, each with its own Analyzer, take turns reading chunks
/// of up to 512 lines, analyze them, and write the verdicts of judged chunks
/// (in input order, one chunk at a time); the calling thread judges the chunks
/// in input order (Classifier: the window, only on this thread) and reads,
/// analyzes or writes a chunk itself whenever the next one to judge is not
/// ready. At most 2N + 2 chunks (a few hundred KB each) are in flight. The
/// output is the same, byte for byte, for every `threads`; with a learned IDF
/// (analysis_depends_on_history) one thread does all (ScanStats::analysis_threads
/// says how many analyzed).
/// Blocks until done; all threads it starts have ended when it returns or throws.
/// Throws only for unusable options (config::ConfigError, std::invalid_argument),
/// std::bad_alloc, and std::system_error when a thread cannot be started.
ScanStats scan_stream(const config::Config& config, std::FILE* in, std::FILE* out,
                      unsigned threads = 1);

}  // namespace neardup::stream
