#pragma once
// The `scan` source (lines of a FILE*) and sink (JSON Lines verdicts).

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
};

/// Reads records (one per line; "\r\n" accepted) from `in` until EOF and writes
/// one JSON verdict per record to `out`, in input order. Record i (1-based line
/// number) is RecordRef{i}; its id is the id field, or i when absent. Scan has
/// no event time, so the window is bounded by max_entries only. A failed write
/// to `out` stops the scan (write_error); a failed read ends it (read_error).
/// Throws only for unusable options (config::ConfigError, std::invalid_argument).
ScanStats scan_stream(const config::Config& config, std::FILE* in, std::FILE* out);

}  // namespace neardup::stream
