#pragma once
// The near-duplicate engine: text -> fingerprint -> window probe -> verdict.
// The one piece that `neardup scan` and `neardup run` share; only their
// sources and sinks differ.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dedup/fingerprinter.h"
#include "dedup/options.h"
#include "dedup/types.h"
#include "dedup/window.h"

namespace neardup::dedup {

enum class VerdictKind { unique, duplicate, invalid };
std::string_view to_string(VerdictKind kind);

struct Verdict {
  VerdictKind kind = VerdictKind::unique;
  Fingerprint fingerprint;
  std::optional<Match> match;  ///< set for duplicates: the kept entry it duplicates
  std::string_view error;      ///< set for invalid: a static reason
  std::uint32_t features = 0;
};

struct EngineStats {
  std::uint64_t unique = 0;
  std::uint64_t duplicate = 0;
  std::uint64_t invalid = 0;
  WindowStats window;
};

/// Not thread-safe: one Engine per pipeline thread. Never throws from process();
/// the constructor throws std::invalid_argument for unsupported options.
class Engine {
 public:
  explicit Engine(const DedupOptions& options);

  /// Judges one text against the window. Unique texts are inserted into the
  /// window (duplicates are not: the window holds kept messages only).
  /// Text with no features (empty, only punctuation) or mostly invalid UTF-8 is invalid.
  Verdict process(std::string_view text, EventTime time, RecordRef ref);

  /// Inserts a fingerprint that was kept elsewhere (window changelog replay).
  void remember(Fingerprint fp, EventTime time, RecordRef ref);

  EngineStats stats() const;
  const DedupOptions& options() const { return options_; }

 private:
  DedupOptions options_;
  Fingerprinter fingerprinter_;
  Window window_;
  EngineStats counts_;
};

}  // namespace neardup::dedup
