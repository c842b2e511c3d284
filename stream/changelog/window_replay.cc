// WindowReplay (window_restore.h): the changelog's entries replayed into the
// window in event-time order, collected in memory or, past
// window.rebuild_memory, by keys and a second pass in slices.
#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "stream/changelog/window_restore.h"
#include "stream/core/process.h"
#include "stream/pipeline/event_time.h"

namespace neardup::stream {

WindowReplay::WindowReplay(const config::Config& config, Sources& sources,
                           SchemaCompatibility& schemas)
    : cfg_(config), sources_(sources), schemas_(schemas), now_(wall_ms()) {}

void WindowReplay::add(const ChangelogRecord& r) {
  if (!schemas_.accepts(r)) return;
  ++accepted_;
  // Entries stamped far ahead of this clock (written before window.max_future
  // existed) count as this clock plus max_future: one of them would
  // otherwise leave only itself in the rebuilt window.
  const dedup::EventTime time = event_time_of(r.time.ms, now_, cfg_.dedup.window.max_future);
  future_ += time < r.time ? 1 : 0;
  const dedup::RecordRef ref = pack_ref(sources_.intern(r.topic, r.partition), r.offset);
  if (!keys_only_) {
    collect(r, time, ref);
    if (staged_bytes() > cfg_.dedup.window.rebuild_memory) keep_keys_only();
    return;
  }
  keys_.push_back(key_of(time, ref, r.fingerprint));
  const std::size_t max_entries = cfg_.dedup.window.max_entries;
  if (keys_.size() >= 2 * max_entries) prune(max_entries);
}

void WindowReplay::collect(const ChangelogRecord& r, dedup::EventTime time, dedup::RecordRef ref) {
  const dedup::SketchResult& sketch = schemas_.usable(r);
  std::uint32_t sketch_ref = 0;
  if (sketch.shingles != 0 &&
      sketch_store_.size() / 2 < std::numeric_limits<std::uint32_t>::max()) {
    // Only what the engine indexes: the minhash words and the band keys in use
    // (usable() returned it, so it has the local options' bands).
    const auto bands = static_cast<std::size_t>(schemas_.local().sketch.bands);
    sketch_ref = static_cast<std::uint32_t>(1 + sketch_store_.size() / (2 + bands));
    sketch_store_.push_back(sketch.sketch.words[0]);
    sketch_store_.push_back(sketch.sketch.words[1]);
    sketch_store_.insert(sketch_store_.end(), sketch.band_keys.begin(),
                         sketch.band_keys.begin() + static_cast<std::ptrdiff_t>(bands));
  }
  entries_.push_back(Replayed{time, ref, r.fingerprint, r.scope, sketch_ref});
}

WindowReplay::Key WindowReplay::key_of(dedup::EventTime time, dedup::RecordRef ref,
                                       dedup::Fingerprint fingerprint) {
  return Key{time.ms, ref.value, fingerprint.bits};
}

void WindowReplay::keep_keys_only() {
  keys_only_ = true;
  // At most 2 max_entries before each prune. Reserved for that up to 4 times
  // what was read so far (a large max_entries over a small changelog must not
  // ask for gigabytes up front), by doubling beyond.
  keys_.reserve(std::min(2 * cfg_.dedup.window.max_entries, 4 * entries_.size()));
  for (const Replayed& e : entries_) keys_.push_back(key_of(e.time, e.ref, e.fingerprint));
  entries_ = std::vector<Replayed>();  // (`= {}` would keep the capacity)
  sketch_store_ = std::vector<std::uint64_t>();
  const std::size_t max_entries = cfg_.dedup.window.max_entries;
  if (keys_.size() >= 2 * max_entries) prune(max_entries);
}

void WindowReplay::prune(std::size_t keep) {
  std::sort(keys_.begin(), keys_.end(), std::greater<>());
  auto out = keys_.begin();
  for (auto it = keys_.begin(); it != keys_.end(); ++it) {
    if (out != keys_.begin() && *(out - 1) == *it) {
      repeated_.push_back(*it);
      continue;
    }
    *out++ = *it;
  }
  keys_.erase(out, keys_.end());
  if (keys_.size() > keep) keys_.resize(keep);
  // Repeats older than every key kept can no longer be chosen.
  if (keys_.size() == keep && keep != 0) {
    const Key oldest = keys_.back();
    std::erase_if(repeated_, [&](const Key& k) { return k < oldest; });
  }
}

void WindowReplay::sort_collected() {
  // Event-time order; the same message written twice (reprocessed after a
  // crash) is remembered once.
  // (std::sort: in place, where std::stable_sort takes a buffer of half the entries)
  std::sort(entries_.begin(), entries_.end(), [](const Replayed& a, const Replayed& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.ref != b.ref) return a.ref.value < b.ref.value;
    return a.fingerprint.bits != b.fingerprint.bits ? a.fingerprint.bits < b.fingerprint.bits
                                                    : a.sketch < b.sketch;
  });
  entries_.erase(std::unique(entries_.begin(), entries_.end(),
                             [](const Replayed& a, const Replayed& b) {
                               return a.time == b.time && a.ref == b.ref &&
                                      a.fingerprint == b.fingerprint;
                             }),
                 entries_.end());
}

void WindowReplay::remember_collected(dedup::Engine& engine, std::size_t first) {
  const std::vector<Replayed>& entries = entries_;
  const auto bands = static_cast<std::size_t>(schemas_.local().sketch.bands);
  dedup::SketchResult ahead{}, current{};
  // The entry's sketch, rebuilt in `out` (none: shingles 0).
  auto sketch_of = [&](const Replayed& e, dedup::SketchResult& out) -> const dedup::SketchResult& {
    out.shingles = 0;
    if (e.sketch == 0) return out;
    const std::uint64_t* at = sketch_store_.data() + (e.sketch - 1) * (2 + bands);
    out.sketch.words = {at[0], at[1]};
    std::copy_n(at + 2, bands, out.band_keys.begin());
    out.shingles = 1;
    return out;
  };
  constexpr std::size_t kAhead = 8;
  auto prefetch = [&](std::size_t i) {
    if (i < entries.size())
      engine.prefetch_remember(entries[i].fingerprint, sketch_of(entries[i], ahead),
                               entries[i].scope);
  };
  for (std::size_t i = first; i < first + kAhead; ++i) prefetch(i);
  for (std::size_t i = first; i < entries.size(); ++i) {
    prefetch(i + kAhead);
    const Replayed& e = entries[i];
    engine.remember(e.fingerprint, e.time, e.ref, sketch_of(e, current), e.scope);
  }
}

void WindowReplay::log_future() {
  if (future_ == 0) return;
  log(config::LogLevel::warn,
      std::to_string(future_) + " changelog entr" + (future_ == 1 ? "y is" : "ies are") +
          " stamped later than the clock plus window.max_future; rebuilt at that time");
  future_ = 0;
}

std::size_t WindowReplay::finish(dedup::Engine& engine) {
  log_future();
  sort_collected();
  std::size_t first = 0;
  if (!entries_.empty()) {
    // Only what the window would still hold: the newest max_entries, within the duration.
    const std::int64_t horizon = entries_.back().time.ms - cfg_.dedup.window.duration.count();
    if (entries_.size() > cfg_.dedup.window.max_entries)
      first = entries_.size() - cfg_.dedup.window.max_entries;
    while (first < entries_.size() && entries_[first].time.ms < horizon) ++first;
  }
  // Growing step by step would move every entry and cell so far at each step:
  // the inserts alone are 1.8-6.9x faster at 0.1-10M entries (BM_WindowRebuild).
  engine.reserve(entries_.size() - first);
  remember_collected(engine, first);
  const std::size_t remembered = entries_.size() - first;
  entries_ = std::vector<Replayed>();  // (`= {}` would keep the capacity)
  sketch_store_ = std::vector<std::uint64_t>();
  return remembered;
}

std::int64_t WindowReplay::newest_time(std::size_t k) {
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  if (keys_only_) {
    prune(std::max<std::size_t>(k, cfg_.dedup.window.max_entries));
    return k == 0 || keys_.size() < k ? kNone : keys_[k - 1].time;
  }
  if (k == 0 || entries_.size() < k) return kNone;
  // The same message written twice counts once, as finish() remembers it.
  std::vector<Key> keys;
  keys.reserve(entries_.size());
  for (const Replayed& e : entries_) keys.push_back(key_of(e.time, e.ref, e.fingerprint));
  std::sort(keys.begin(), keys.end(), std::greater<>());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys.size() < k ? kNone : keys[k - 1].time;
}

std::vector<std::int64_t> WindowReplay::second_pass(dedup::Engine& engine) {
  log_future();
  prune(cfg_.dedup.window.max_entries);  // newest first, each once, at most max_entries
  std::vector<std::int64_t> starts;
  chosen_ = remembered_ = 0;
  if (keys_.empty()) return starts;
  // Only what the window would still hold: within the duration of the newest.
  const std::int64_t horizon = keys_.front().time - cfg_.dedup.window.duration.count();
  std::size_t count = keys_.size();
  while (count > 1 && keys_[count - 1].time < horizon) --count;
  cut_ = keys_[count - 1];
  chosen_ = count;
  std::sort(repeated_.begin(), repeated_.end());
  repeated_.erase(std::unique(repeated_.begin(), repeated_.end()), repeated_.end());
  repeated_.erase(repeated_.begin(), std::lower_bound(repeated_.begin(), repeated_.end(), cut_));
  repeated_seen_.assign(repeated_.size(), 0);
  // Slices of about rebuild_memory of collected entries, oldest first.
  const auto bands = static_cast<std::size_t>(schemas_.local().sketch.bands);
  const std::size_t per_entry =
      sizeof(Replayed) +
      (schemas_.local().sketch.enabled ? (2 + bands) * sizeof(std::uint64_t) : 0);
  const std::size_t per_slice =
      std::max<std::size_t>(1, cfg_.dedup.window.rebuild_memory / per_entry);
  for (std::size_t end = count; end > 0; end -= std::min(end, per_slice)) {
    const std::int64_t start = keys_[end - 1].time;
    if (starts.empty() || start > starts.back()) starts.push_back(start);
  }
  keys_ = std::vector<Key>();
  // Room for a slice at once (growing by doubling would hold up to twice as
  // much); records that span slices may bring more.
  const std::size_t room = std::min(count, per_slice);
  entries_.reserve(room);
  if (schemas_.local().sketch.enabled) sketch_store_.reserve(room * (2 + bands));
  engine.reserve(count);
  return starts;
}

void WindowReplay::add_again(const ChangelogRecord& r) {
  if (!schemas_.matches(r)) return;
  const dedup::EventTime time = event_time_of(r.time.ms, now_, cfg_.dedup.window.max_future);
  const dedup::RecordRef ref = pack_ref(sources_.intern(r.topic, r.partition), r.offset);
  const Key key = key_of(time, ref, r.fingerprint);
  if (key < cut_) return;
  if (!repeated_.empty()) {
    const auto it = std::lower_bound(repeated_.begin(), repeated_.end(), key);
    if (it != repeated_.end() && *it == key) {
      char& seen = repeated_seen_[static_cast<std::size_t>(it - repeated_.begin())];
      if (seen) return;
      seen = 1;
    }
  }
  collect(r, time, ref);
}

void WindowReplay::remember_slice(dedup::Engine& engine) {
  sort_collected();
  remember_collected(engine, 0);
  remembered_ += entries_.size();
  entries_.clear();  // (the capacity serves the next slice)
  sketch_store_.clear();
}

}  // namespace neardup::stream
