// Fuzz target for text -> fingerprint (normalization, features, SimHash, sketch)
// and the engine's verdict path. Properties checked on every input:
// - analyze() never crashes and is deterministic: the same bytes give the same
//   summary from a fresh Fingerprinter and from one that has seen other text;
// - invalid_bytes never exceeds the input size;
// - the engine judges the input, then judges it again as a different record:
//   the second time it must be a duplicate at distance 0 (unless invalid).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dedup/engine/engine.h"
#include "dedup/fingerprint/fingerprinter.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  neardup::dedup::DedupOptions options;
  options.window.max_entries = 16;
  neardup::dedup::Fingerprinter fresh(options.text);
  static neardup::dedup::Fingerprinter used(options.text);
  const auto a = fresh.analyze(text);
  const auto b = used.analyze(text);
  require(a.fingerprint == b.fingerprint && a.features == b.features &&
          a.invalid_bytes == b.invalid_bytes);
  require(a.invalid_bytes <= size);

  neardup::dedup::Engine engine(options);
  const auto first =
      engine.process(text, neardup::dedup::EventTime{1}, neardup::dedup::RecordRef{1});
  const auto second =
      engine.process(text, neardup::dedup::EventTime{2}, neardup::dedup::RecordRef{2});
  if (first.kind == neardup::dedup::VerdictKind::invalid) {
    require(second.kind == neardup::dedup::VerdictKind::invalid);
  } else {
    require(first.kind == neardup::dedup::VerdictKind::unique);
    require(second.kind == neardup::dedup::VerdictKind::duplicate && second.match &&
            second.match->of == neardup::dedup::RecordRef{1} && second.match->distance == 0);
  }
  return 0;
}
