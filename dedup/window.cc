// PROVISIONAL: a brute-force deque so the tree links; the index helper replaces it.
#include "dedup/window.h"

#include <deque>
#include <stdexcept>

namespace neardup::dedup {

struct Window::Impl {
  IndexOptions index;
  WindowOptions window;
  struct Entry { Fingerprint fp; EventTime time; RecordRef ref; };
  std::deque<Entry> entries;
  EventTime newest{INT64_MIN};
  WindowStats stats;
  void advance(EventTime now) {
    if (now > newest) newest = now;
    while (!entries.empty() && entries.front().time.ms < newest.ms - window.duration.count()) {
      entries.pop_front();
      ++stats.evictions;
    }
  }
};

Window::Window(const IndexOptions& index, const WindowOptions& window) : impl_(std::make_unique<Impl>()) {
  if (index.max_distance < 0 || index.max_distance > 8) throw std::invalid_argument("max_distance must be 0..8");
  impl_->index = index;
  impl_->window = window;
}
Window::~Window() = default;
Window::Window(Window&&) noexcept = default;
Window& Window::operator=(Window&&) noexcept = default;

std::optional<Match> Window::probe(Fingerprint fp, EventTime now, RecordRef self) {
  impl_->advance(now);
  ++impl_->stats.probes;
  std::optional<Match> best;
  for (const auto& e : impl_->entries) {
    int d = hamming_distance(fp, e.fp);
    if (e.ref == self || d > impl_->index.max_distance) continue;
    if (!best || d < best->distance) best = Match{e.ref, d, e.time, e.fp};
  }
  return best;
}

void Window::insert(Fingerprint fp, EventTime time, RecordRef ref) {
  impl_->advance(time);
  if (impl_->entries.size() >= impl_->window.max_entries) {
    impl_->entries.pop_front();
    ++impl_->stats.evictions;
  }
  impl_->entries.push_back({fp, time, ref});
}

WindowStats Window::stats() const {
  WindowStats s = impl_->stats;
  s.entries = impl_->entries.size();
  s.bytes = s.entries * sizeof(Impl::Entry);
  return s;
}

int Window::max_distance() const { return impl_->index.max_distance; }

}  // namespace neardup::dedup
