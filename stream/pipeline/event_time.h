#pragma once
// The event time a message is judged at (the window runs in event time,
// docs/KAFKA.md): its Kafka timestamp, or the wall clock when it has none,
// and never later than the wall clock plus window.max_future. The window's
// clock only moves forward, so one message stamped years ahead would
// otherwise evict every entry, and through the changelog every rebuild after it.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include "dedup/core/types.h"

namespace neardup::stream {

/// The wall clock, in milliseconds since the epoch.
inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// `timestamp_ms` < 0: no timestamp. A result earlier than `timestamp_ms`
/// means it was clamped (later than `now_ms + max_future`). O(1).
inline dedup::EventTime event_time_of(std::int64_t timestamp_ms, std::int64_t now_ms,
                                      std::chrono::milliseconds max_future) {
  if (timestamp_ms < 0) return dedup::EventTime{now_ms};
  std::int64_t latest;
  if (__builtin_add_overflow(now_ms, max_future.count(), &latest))
    latest = std::numeric_limits<std::int64_t>::max();
  return dedup::EventTime{std::min(timestamp_ms, latest)};
}

}  // namespace neardup::stream
