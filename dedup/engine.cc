#include "dedup/engine.h"

namespace neardup::dedup {

std::string_view to_string(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::unique: return "unique";
    case VerdictKind::duplicate: return "duplicate";
    case VerdictKind::invalid: return "invalid";
  }
  return "unknown";
}

Engine::Engine(const DedupOptions& options)
    : options_(options), fingerprinter_(options.text), window_(options.index, options.window) {}

Verdict Engine::process(std::string_view text, EventTime time, RecordRef ref) {
  Verdict verdict;
  const TextSummary summary = fingerprinter_.analyze(text);
  verdict.fingerprint = summary.fingerprint;
  verdict.features = summary.features;
  if (summary.features == 0) {
    verdict.kind = VerdictKind::invalid;
    verdict.error = text.empty() ? "empty text" : "no words or characters to compare (only punctuation or spaces)";
    ++counts_.invalid;
    return verdict;
  }
  // Replacement characters are tolerated in real text; a text that is mostly
  // undecodable bytes is binary data, and comparing it would be noise.
  if (summary.invalid_bytes * 4 > text.size()) {
    verdict.kind = VerdictKind::invalid;
    verdict.error = "not text: mostly invalid UTF-8";
    ++counts_.invalid;
    return verdict;
  }
  verdict.match = window_.probe(summary.fingerprint, time, ref);
  if (verdict.match) {
    verdict.kind = VerdictKind::duplicate;
    ++counts_.duplicate;
  } else {
    window_.insert(summary.fingerprint, time, ref);
    ++counts_.unique;
  }
  return verdict;
}

void Engine::remember(Fingerprint fp, EventTime time, RecordRef ref) { window_.insert(fp, time, ref); }

EngineStats Engine::stats() const {
  EngineStats stats = counts_;
  stats.window = window_.stats();
  return stats;
}

}  // namespace neardup::dedup
