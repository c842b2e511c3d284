#include "dedup/index/memory.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "dedup/fingerprint/sketch.h"
#include "dedup/index/recent_texts.h"
#include "dedup/index/repost_sketches.h"
#include "dedup/index/sketch_index.h"
#include "dedup/index/window.h"

namespace neardup::dedup {

namespace {

int recent_bands(const SketchOptions& sketch) {
  return std::min(kRecentBands,
                  kSketchBits / sketch.bits / kRecentBandBins);  // as Engine builds it
}

std::size_t recent_bytes(const DedupOptions& options) {
  const std::size_t texts = recent_capacity(options);
  return texts == 0 ? 0 : RecentTexts::max_bytes(texts, recent_bands(options.sketch));
}

MemoryFootprint footprint_with(const WindowFootprint& window, const DedupOptions& options,
                               std::size_t entries) {
  MemoryFootprint f;
  f.entries = entries;
  f.window = window.bytes(entries);
  f.sketch = options.sketch.enabled ? SketchIndex::max_bytes(options.sketch, entries) : 0;
  f.recent = recent_bytes(options);
  const std::size_t reposts = recent_capacity(options);  // the Engine's repost cache holds as many
  f.reposts = reposts == 0 ? 0 : RepostSketches::max_bytes(reposts);
  return f;
}

}  // namespace

std::size_t recent_capacity(const DedupOptions& options) {
  const SketchOptions& sketch = options.sketch;
  if (!sketch.enabled || sketch.recent == 0) return 0;
  if (options.window.max_memory == 0) return sketch.recent;
  const std::size_t share = options.window.max_memory / kRecentMemoryShare;
  const int bands = recent_bands(sketch);
  if (RecentTexts::max_bytes(sketch.recent, bands) <= share) return sketch.recent;
  std::size_t texts = std::bit_floor(sketch.recent);  // its ring is a power of two
  if (texts == sketch.recent) texts /= 2;
  while (texts > 1 && RecentTexts::max_bytes(texts, bands) > share) texts /= 2;
  return texts;
}

MemoryFootprint memory_footprint(const DedupOptions& options, std::size_t entries) {
  return footprint_with(WindowFootprint(options.index, options.window.scoped), options, entries);
}

std::size_t engine_capacity(const DedupOptions& options) {
  const WindowOptions& w = options.window;
  if (w.max_memory == 0 || w.max_entries == 0) return w.max_entries;
  const WindowFootprint window(options.index, w.scoped);
  return largest_within(w.max_entries, w.max_memory,
                        [&](std::size_t n) { return footprint_with(window, options, n).total(); });
}

WindowOptions engine_window_options(const DedupOptions& options) {
  WindowOptions w = options.window;
  if (w.max_memory == 0) return w;
  const std::size_t capacity = engine_capacity(options);
  if (capacity == 0) {  // validate_memory() refuses it
    w.max_entries = 0;
    return w;
  }
  const MemoryFootprint f = memory_footprint(options, capacity);
  w.max_entries = capacity;
  // What the window may hold itself: its own footprint at this capacity fits,
  // and the rest of its share covers spills beyond their allowance.
  w.max_memory = w.max_memory - f.sketch - f.recent - f.reposts;
  return w;
}

void validate_memory(const DedupOptions& options) {
  const WindowOptions& w = options.window;
  if (w.max_memory == 0) return;
  const std::size_t least = std::min(w.max_entries, kMinMemoryEntries);
  if (engine_capacity(options) >= least) return;
  const MemoryFootprint f = memory_footprint(options, least);
  std::string parts = "window " + std::to_string(f.window);
  if (f.sketch != 0) parts += ", sketch index " + std::to_string(f.sketch);
  if (f.recent != 0)
    parts += ", recent-text cache " + std::to_string(f.recent) + " (dedup.sketch.recent)";
  if (f.reposts != 0) parts += ", repost cache " + std::to_string(f.reposts);
  throw std::invalid_argument("max_memory " + std::to_string(w.max_memory) +
                              " bytes holds fewer than " + std::to_string(least) +
                              " window entries: they need " + std::to_string(f.total()) +
                              " bytes (" + parts + ")");
}

}  // namespace neardup::dedup
