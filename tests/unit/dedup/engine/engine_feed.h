#pragma once
// A test feed for an Engine: each text arrives `advance_ms` after the one
// before it (1 s by default) with the next record reference, 1, 2, ...

#include <cstdint>
#include <string_view>

#include "dedup/engine/engine.h"

namespace neardup::dedup::engine_testing {

struct Feed {
  Engine engine;
  std::uint64_t next_ref = 1;
  std::int64_t now = 1'700'000'000'000;

  explicit Feed(const DedupOptions& options) : engine(options) {}
  Verdict operator()(std::string_view text, std::int64_t advance_ms = 1000) {
    now += advance_ms;
    return engine.process(text, EventTime{now}, RecordRef{next_ref++});
  }
};

}  // namespace neardup::dedup::engine_testing
