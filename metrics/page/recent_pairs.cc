#include "metrics/page/recent_pairs.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

namespace neardup::metrics {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

/// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not one
/// (overlong forms, surrogates and code points above U+10FFFF are not).
std::size_t utf8_sequence(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3, cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void assign(Location& to, const MessageAt& from) {
  to.topic.assign(from.topic);
  to.partition = from.partition;
  to.offset = from.offset;
}

bool same(const Location& a, const MessageAt& b) {
  return a.topic == b.topic && a.partition == b.partition && a.offset == b.offset;
}

constexpr std::int64_t kMinuteMs = 60'000;

// The wall-clock minute holding `ms` (floor, also before the epoch).
std::int64_t minute_of(std::int64_t ms) {
  return ms >= 0 ? ms / kMinuteMs : -((-ms + kMinuteMs - 1) / kMinuteMs);
}

std::size_t bucket_of(std::int64_t minute) {
  const std::int64_t b = minute % kStoryMinutes;
  return static_cast<std::size_t>(b < 0 ? b + kStoryMinutes : b);
}

}  // namespace

// ------------------------------------------------------------ StoryMinutes

StoryMinutes::StoryMinutes(std::size_t capacity, std::size_t text_bytes)
    : capacity_(std::max<std::size_t>(capacity, 1)), text_bytes_(text_bytes) {
  entries_.reserve(capacity_);
}

void StoryMinutes::advance(Entry& e, std::int64_t minute) {
  if (minute <= e.minute) return;
  if (minute - e.minute >= kStoryMinutes) {
    e.buckets.fill(0);
    e.hour = 0;
  } else {
    for (std::int64_t m = e.minute + 1; m <= minute; ++m) {
      std::uint32_t& b = e.buckets[bucket_of(m)];
      e.hour -= b;
      b = 0;
    }
  }
  e.minute = minute;
}

std::uint32_t StoryMinutes::hour_at(const Entry& e, std::int64_t minute) {
  if (minute <= e.minute) return e.hour;
  if (minute - e.minute >= kStoryMinutes) return 0;
  std::uint32_t hour = e.hour;
  for (std::int64_t m = e.minute + 1; m <= minute; ++m) hour -= e.buckets[bucket_of(m)];
  return hour;
}

void StoryMinutes::record(std::uint64_t key, const MessageAt& original, const ShownText& text,
                          std::int64_t now_ms) {
  const std::int64_t minute = minute_of(now_ms);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.key == key && same(e.at, original); });
  bool fresh = false;
  if (it == entries_.end()) {
    fresh = true;
    if (entries_.size() < capacity_) {
      entries_.emplace_back();
      it = entries_.end() - 1;
      it->at.topic.reserve(original.topic.size());
      it->text.text.reserve(text_bytes_ + 3);
    } else {
      // The fewest duplicates in the hour makes room (ties: the oldest last duplicate).
      for (Entry& e : entries_) advance(e, minute);
      it = std::min_element(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
        return a.hour != b.hour ? a.hour < b.hour : a.last_seq < b.last_seq;
      });
    }
    it->key = key;
    assign(it->at, original);
    it->buckets.fill(0);
    it->hour = 0;
    it->minute = minute;
  }
  if (fresh || (!it->text.held && text.held)) {
    it->text.held = text.held;
    it->text.text.assign(text.text);
    it->text.truncated = text.truncated;
  }
  advance(*it, minute);  // a clock that steps back counts into the newest minute held
  ++it->buckets[bucket_of(it->minute)];
  ++it->hour;
  it->last_ms = now_ms;
  it->last_seq = ++recorded_;
}

std::vector<HourStory> StoryMinutes::top(std::size_t n, std::int64_t now_ms) const {
  const std::int64_t minute = minute_of(now_ms);
  std::vector<std::pair<std::uint32_t, const Entry*>> order;
  order.reserve(entries_.size());
  for (const Entry& e : entries_) {
    const std::uint32_t hour = hour_at(e, minute);
    if (hour > 0) order.emplace_back(hour, &e);
  }
  const std::size_t k = std::min(n, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first
                                                : a.second->last_seq > b.second->last_seq;
                    });
  std::vector<HourStory> out(k);
  for (std::size_t i = 0; i < k; ++i) {
    const Entry& e = *order[i].second;
    HourStory& s = out[i];
    s.original = e.at;
    s.text = e.text;
    s.hour = order[i].first;
    s.last_ms = e.last_ms;
    // per_minute[j] is minute (minute - 59 + j); the buckets hold e.minute - 59 .. e.minute.
    for (int j = 0; j < kStoryMinutes; ++j) {
      const std::int64_t m = minute - (kStoryMinutes - 1) + j;
      if (m > e.minute || m <= e.minute - kStoryMinutes) continue;
      s.per_minute[static_cast<std::size_t>(j)] = e.buckets[bucket_of(m)];
    }
  }
  return out;
}

bool copy_shown_text(std::string_view text, std::size_t max_bytes, std::string& out) {
  out.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    // ASCII runs go in one append.
    std::size_t run = i;
    for (std::uint64_t word; run + 8 <= text.size(); run += 8) {  // 8 bytes at a time
      std::memcpy(&word, text.data() + run, 8);
      if (word & 0x8080808080808080ULL) break;
    }
    while (run < text.size() && static_cast<unsigned char>(text[run]) < 0x80) ++run;
    if (run > i) {
      const std::size_t room = max_bytes - out.size();
      if (run - i > room) {
        out.append(text.substr(i, room));
        return true;
      }
      out.append(text.substr(i, run - i));
      i = run;
      continue;
    }
    const std::size_t n = utf8_sequence(text.substr(i));
    const std::string_view piece = n ? text.substr(i, n) : kReplacement;
    if (piece.size() > max_bytes - out.size()) return true;
    out.append(piece);
    i += n ? n : 1;
  }
  return false;
}

RecentPairs::RecentPairs(Limits limits)
    : limits_(limits), stories_(limits.stories, std::max<std::size_t>(limits.text_bytes, 1)) {
  limits_.stories = stories_.capacity();
  limits_.ring = std::max<std::size_t>(limits_.ring, 1);
  limits_.texts = std::max<std::size_t>(limits_.texts, 1);
  limits_.text_bytes = std::max<std::size_t>(limits_.text_bytes, 1);
  limits_.originals = std::max<std::size_t>(limits_.originals, 1);
  limits_.top = std::max<std::size_t>(limits_.top, 1);
  texts_.resize(limits_.texts);
  // At most half full, so probe runs stay short.
  index_.assign(std::bit_ceil(limits_.texts * 2), -1);
  index_mask_ = index_.size() - 1;
  base::MutexLock lock(mutex_);
  ring_.resize(limits_.ring);
  originals_.reserve(limits_.originals);
}

std::size_t RecentPairs::home(std::uint64_t key) const {
  // A 64-bit mix (splitmix64's finalizer): refs pack a partition index above an offset.
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebULL;
  key ^= key >> 31;
  return static_cast<std::size_t>(key) & index_mask_;
}

std::int32_t RecentPairs::find_slot(std::uint64_t key) const {
  for (std::size_t i = home(key);; i = (i + 1) & index_mask_) {
    const std::int32_t slot = index_[i];
    if (slot < 0 || texts_[static_cast<std::size_t>(slot)].key == key) return slot;
  }
}

void RecentPairs::unindex(std::size_t slot) {
  const std::uint64_t key = texts_[slot].key;
  std::size_t hole = home(key);
  while (index_[hole] != static_cast<std::int32_t>(slot)) hole = (hole + 1) & index_mask_;
  // Backward-shift deletion: move up every later entry of the run that may fill the hole.
  for (std::size_t j = (hole + 1) & index_mask_; index_[j] >= 0; j = (j + 1) & index_mask_) {
    const std::size_t h = home(texts_[static_cast<std::size_t>(index_[j])].key);
    // The entry at j may move to the hole when its home is not within (hole, j].
    const bool between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (!between) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = -1;
}

void RecentPairs::kept(std::uint64_t key, std::string_view text) {
  if (const std::int32_t found = find_slot(key); found >= 0) {  // read again: refresh in place
    CachedText& entry = texts_[static_cast<std::size_t>(found)];
    entry.truncated = copy_shown_text(text, limits_.text_bytes, entry.text);
    return;
  }
  const std::size_t slot = next_text_;
  next_text_ = (next_text_ + 1) % texts_.size();
  CachedText& entry = texts_[slot];
  if (entry.used) {
    unindex(slot);
  } else {
    entry.used = true;
    entry.text.reserve(limits_.text_bytes + 3);
    ++held_;
  }
  entry.key = key;
  entry.truncated = copy_shown_text(text, limits_.text_bytes, entry.text);
  std::size_t i = home(key);
  while (index_[i] >= 0) i = (i + 1) & index_mask_;
  index_[i] = static_cast<std::int32_t>(slot);
}

void RecentPairs::duplicate(const DuplicateSeen& seen) {
  const std::int32_t slot = find_slot(seen.original_key);
  const CachedText* original = slot >= 0 ? &texts_[static_cast<std::size_t>(slot)] : nullptr;
  const std::int64_t now = wall_ms();
  base::MutexLock lock(mutex_);
  const std::uint64_t seq = ++recorded_;

  // The originals table: the least recently duplicated one makes room.
  auto it = std::find_if(originals_.begin(), originals_.end(),
                         [&](const Original& o) { return o.key == seen.original_key; });
  if (it != originals_.end() && !same(it->at, seen.original)) it->duplicates = 0;  // key reused
  if (it == originals_.end()) {
    if (originals_.size() < limits_.originals) {
      originals_.emplace_back();
      it = originals_.end() - 1;
    } else {
      it = std::min_element(
          originals_.begin(), originals_.end(),
          [](const Original& a, const Original& b) { return a.last_seq < b.last_seq; });
    }
    it->key = seen.original_key;
    it->duplicates = 0;
  }
  it->duplicates = seen.count ? seen.count : it->duplicates + 1;
  it->last_ms = now;
  it->last_seq = seq;
  assign(it->at, seen.original);
  it->text.held = original != nullptr;
  if (original) {
    it->text.text.assign(original->text);
    it->text.truncated = original->truncated;
  } else {
    it->text.text.clear();
    it->text.truncated = false;
  }

  RecentPair& pair = ring_[next_pair_];
  next_pair_ = (next_pair_ + 1) % ring_.size();
  pair.seq = seq;
  pair.at_ms = now;
  assign(pair.original, seen.original);
  assign(pair.duplicate, seen.duplicate);
  pair.original_text.held = it->text.held;
  pair.original_text.text.assign(it->text.text);
  pair.original_text.truncated = it->text.truncated;
  pair.duplicate_text.held = true;
  pair.duplicate_text.truncated =
      copy_shown_text(seen.duplicate_text, limits_.text_bytes, pair.duplicate_text.text);
  pair.distance = seen.distance;
  pair.similarity = seen.similarity;
  pair.count = it->duplicates;

  stories_.record(seen.original_key, seen.original, it->text, now);
}

std::uint64_t RecentPairs::recorded() const {
  base::MutexLock lock(mutex_);
  return recorded_;
}

PairsSnapshot RecentPairs::snapshot(std::uint64_t up_to) const {
  return snapshot_at(wall_ms(), up_to);
}

PairsSnapshot RecentPairs::snapshot_at(std::int64_t now_ms, std::uint64_t up_to) const {
  PairsSnapshot out;
  out.story_originals = limits_.stories;
  out.stories_minute_ms = minute_of(now_ms) * kMinuteMs;
  out.ring = limits_.ring;
  out.texts = limits_.texts;
  out.text_bytes = limits_.text_bytes;
  out.originals = limits_.originals;
  std::vector<const Original*> order;
  {
    base::MutexLock lock(mutex_);
    out.recorded = std::min(recorded_, up_to);
    const std::size_t n = std::min<std::uint64_t>(recorded_, ring_.size());
    out.pairs.reserve(n);
    for (std::size_t i = 1; i <= n; ++i) {
      const RecentPair& pair = ring_[(next_pair_ + ring_.size() - i) % ring_.size()];
      if (pair.seq <= up_to) out.pairs.push_back(pair);
    }
    order.reserve(originals_.size());
    for (const Original& o : originals_) order.push_back(&o);
    const std::size_t top = std::min(limits_.top, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                      [](const Original* a, const Original* b) {
                        return a->duplicates != b->duplicates ? a->duplicates > b->duplicates
                                                              : a->last_seq > b->last_seq;
                      });
    order.resize(top);
    out.top.reserve(top);
    for (const Original* o : order) out.top.push_back({o->at, o->text, o->duplicates, o->last_ms});
    out.stories = stories_.top(limits_.top, now_ms);
  }
  return out;
}

void redact_texts(PairsSnapshot& snapshot) {
  for (RecentPair& pair : snapshot.pairs) {
    pair.original_text.text.clear();
    pair.original_text.truncated = false;
    pair.duplicate_text.text.clear();
    pair.duplicate_text.truncated = false;
  }
  for (TopOriginal& top : snapshot.top) {
    top.text.text.clear();
    top.text.truncated = false;
  }
  for (HourStory& story : snapshot.stories) {
    story.text.text.clear();
    story.text.truncated = false;
  }
  snapshot.texts_redacted = true;
}

}  // namespace neardup::metrics
