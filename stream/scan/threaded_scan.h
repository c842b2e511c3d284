#pragma once
// `neardup scan` on several threads: chunks of lines read, analyzed and
// written by any thread, judged in input order by the calling one.

#include <cstdio>

#include "config/config.h"
#include "stream/scan/scan.h"

namespace neardup::stream::scan {

/// scan_stream (stream/scan/scan.h) on `threads` >= 2 threads, the calling
/// one included; the output is the same, byte for byte, as on one thread.
/// Throws what scan_stream throws.
ScanStats scan_on_threads(const config::Config& config, std::FILE* in, std::FILE* out,
                          unsigned threads);

}  // namespace neardup::stream::scan
