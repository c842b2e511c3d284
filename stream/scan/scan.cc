#include "stream/scan/scan.h"

#include <sched.h>

#include <string_view>
#include <thread>

#include "stream/pipeline/pipeline.h"
#include "stream/scan/line_reader.h"
#include "stream/scan/threaded_scan.h"
#include "stream/scan/verdict_sink.h"
#include "stream/scan/window_sizer.h"

namespace neardup::stream {

namespace {

using scan::LineReader;
using scan::VerdictSink;
using scan::WindowSizer;

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
    scan::prepare_line(analyzer, line, reader.skipped(), config.input.max_bytes, record);
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
  scan::add_read_error(reader, stats);
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
  return scan::scan_on_threads(config, in, out, threads);
}

}  // namespace neardup::stream
