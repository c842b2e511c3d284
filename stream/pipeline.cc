#include "stream/pipeline.h"

namespace neardup::stream {

Classifier::Classifier(const config::Config& config) : decoder_(config.input), engine_(config.dedup) {}

Judgement Classifier::classify(std::string_view raw, dedup::EventTime time, dedup::RecordRef ref) {
  Judgement judgement;
  decoded_ = decoder_.decode(raw);
  judgement.decoded = &decoded_;
  if (!decoded_.ok) {
    judgement.verdict.kind = dedup::VerdictKind::invalid;
    judgement.error = decoded_.error;
    return judgement;
  }
  judgement.verdict = engine_.process(decoded_.text, time, ref);
  if (judgement.verdict.kind == dedup::VerdictKind::invalid) judgement.error = judgement.verdict.error;
  return judgement;
}

}  // namespace neardup::stream
