#pragma once
// The part of the pipeline that every source and sink shares:
// raw record -> decode -> text -> fingerprint -> window -> verdict.
// `neardup scan` (file in, JSON Lines out) and `neardup run` (Kafka in, Kafka
// out) wrap it with their own source and sink.
//
// Two steps: Analyzer::prepare (decode + text analysis: pure, no window; can
// run on another thread, or a record ahead) and Classifier::decide (the window
// decision). Preparing two records ahead lets Classifier::prefetch start the
// window's memory accesses for a record while the ones before it are judged,
// and Classifier::prefetch_cells the second, dependent accesses one record ahead.

#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "dedup/fingerprint/fingerprinter.h"
#include "stream/pipeline/decode.h"

namespace neardup::stream {

/// One raw record, decoded and analyzed. Self-contained except text(), which
/// views the raw record (valid as long as it is) unless the decoded text had
/// to be copied (a JSON object's text fields).
struct Prepared {
  bool ok = false;  ///< decoded; false: `error` says why (the record is invalid)
  std::string error;
  std::string id;            ///< the id field as JSON text ("" when absent), see Decoded::id
  dedup::Analysis analysis;  ///< valid when ok
  std::string_view text() const { return owned ? std::string_view(owned_text) : raw_text; }

  std::string_view raw_text;  ///< when !owned: a slice of the raw record
  std::string owned_text;     ///< when owned: a copy of the decoded text
  bool owned = false;
};

/// Decode + analysis with its own Decoder and Fingerprinter. Not thread-safe:
/// one per thread. Feed it records in the order they are judged (a learned IDF
/// depends on the history). prepare() never throws except std::bad_alloc.
class Analyzer {
 public:
  /// Throws config::ConfigError / std::invalid_argument for unusable options.
  explicit Analyzer(const config::Config& config);
  /// Fills `out` (reusing its buffers). `key`: the record's Kafka key, the
  /// scope with dedup.scope key (a record without a key has the scope of "").
  /// O(bytes).
  void prepare(std::string_view raw, Prepared& out, std::string_view key = {});

 private:
  bool key_scope_;  // dedup.scope: key
  Decoder decoder_;
  dedup::Fingerprinter fingerprinter_;
};

/// Not thread-safe: one per pipeline thread. decide() never throws.
class Classifier {
 public:
  /// Throws config::ConfigError / std::invalid_argument for unusable options.
  explicit Classifier(const config::Config& config);

  /// The decision for a record prepared by an Analyzer (of the same config).
  /// The returned error views `prepared` or a static string. O(tables + candidates).
  dedup::Verdict decide(const Prepared& prepared, dedup::EventTime time, dedup::RecordRef ref,
                        std::string_view* error);

  /// Starts loading what decide(prepared) will read first (dedup::Engine::prefetch):
  /// call it one record (or, with prefetch_cells(), two records) before decide().
  void prefetch(const Prepared& prepared) const {
    if (prepared.ok) engine_.prefetch(prepared.analysis);
  }
  /// The second stage (dedup::Engine::prefetch_cells): call prefetch() two
  /// records before decide(), this one record before.
  void prefetch_cells(const Prepared& prepared) const {
    if (prepared.ok) engine_.prefetch_cells(prepared.analysis);
  }

  dedup::Engine& engine() { return engine_; }
  const dedup::Engine& engine() const { return engine_; }

 private:
  dedup::Engine engine_;
};

}  // namespace neardup::stream
