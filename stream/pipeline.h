#pragma once
// The part of the pipeline that every source and sink shares:
// raw record -> decode -> text -> fingerprint -> window -> verdict.
// `neardup scan` (file in, JSON Lines out) and `neardup run` (Kafka in, Kafka
// out) wrap it with their own source and sink.

#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine.h"
#include "stream/decode.h"

namespace neardup::stream {

struct Judgement {
  dedup::Verdict verdict;
  const Decoded* decoded = nullptr;  ///< id and text; valid until the next classify()
  std::string_view error;            ///< for invalid: the decode error or the engine's reason
};

/// Not thread-safe: one per pipeline thread. classify() never throws.
class Classifier {
 public:
  /// Throws config::ConfigError / std::invalid_argument for unusable options.
  explicit Classifier(const config::Config& config);

  Judgement classify(std::string_view raw, dedup::EventTime time, dedup::RecordRef ref);

  dedup::Engine& engine() { return engine_; }
  const dedup::Engine& engine() const { return engine_; }

 private:
  Decoder decoder_;
  dedup::Engine engine_;
  Decoded decoded_;
};

}  // namespace neardup::stream
