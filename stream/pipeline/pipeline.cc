#include "stream/pipeline/pipeline.h"

namespace neardup::stream {

Analyzer::Analyzer(const config::Config& config)
    : key_scope_(config.scope == "key"),
      decoder_(config.input, config.scope.starts_with("/") ? config.scope : std::string()),
      fingerprinter_(config.dedup.text, config.dedup.sketch) {
  if (config.scope.starts_with("/") && config.input.format == config::InputFormat::text) {
    throw config::ConfigError("dedup.scope: " + config.scope +
                              " is a field of a JSON record: it needs input.format auto or json");
  }
}

void Analyzer::prepare(std::string_view raw, Prepared& out, std::string_view key) {
  Decoded decoded = decoder_.decode(raw);
  out.ok = decoded.ok;
  out.owned = false;
  out.raw_text = {};
  out.error.clear();
  out.id = std::move(decoded.id);
  if (!decoded.ok) {
    out.error = std::move(decoded.error);
    return;
  }
  // The decoded text lives in the Decoder until the next decode() unless it is
  // a slice of the raw record (format text): copy only in the first case.
  const bool inside_raw = !decoded.text.empty() && decoded.text.data() >= raw.data() &&
                          decoded.text.data() + decoded.text.size() <= raw.data() + raw.size();
  if (inside_raw || decoded.text.empty()) {
    out.raw_text = decoded.text;
  } else {
    out.owned_text.assign(decoded.text);
    out.owned = true;
  }
  out.analysis = dedup::analyze(fingerprinter_, out.text());
  out.analysis.scope = key_scope_ ? dedup::scope_of(key) : decoded.scope;
}

Classifier::Classifier(const config::Config& config) : engine_(config.dedup) {}

dedup::Verdict Classifier::decide(const Prepared& prepared, dedup::EventTime time,
                                  dedup::RecordRef ref, std::string_view* error) {
  dedup::Verdict verdict;
  if (!prepared.ok) {
    verdict.kind = dedup::VerdictKind::invalid;
    if (error) *error = prepared.error;
    return verdict;
  }
  verdict = engine_.decide(prepared.analysis, time, ref);
  if (verdict.kind == dedup::VerdictKind::invalid && error) *error = verdict.error;
  return verdict;
}

}  // namespace neardup::stream
