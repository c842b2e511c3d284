// The event time a message is judged at (stream/pipeline/event_time.h).
#include "stream/pipeline/event_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

namespace neardup::stream {
namespace {

using namespace std::chrono_literals;

TEST(EventTime, IsTheTimestampUpToTheClockPlusMaxFutureAndThatBeyond) {
  const std::int64_t now = 1'700'000'000'000;
  struct Case {
    std::int64_t timestamp;
    std::chrono::milliseconds max_future;
    std::int64_t expected;
    bool clamped;
  };
  for (const Case& c : {
           Case{now - 5'000, 1min, now - 5'000, false},         // the past: as stamped
           Case{0, 1min, 0, false},                             // the epoch itself is a timestamp
           Case{now + 60'000, 1min, now + 60'000, false},       // exactly at the limit
           Case{now + 60'001, 1min, now + 60'000, true},        // one past it
           Case{16'725'225'600'000, 1min, now + 60'000, true},  // the year 2500
           Case{now + 1, 0ms, now, true}, Case{-1, 1min, now, false},  // no timestamp: the clock
           Case{INT64_MAX, std::chrono::milliseconds(INT64_MAX), INT64_MAX, false},  // no overflow
       }) {
    const dedup::EventTime time = event_time_of(c.timestamp, now, c.max_future);
    EXPECT_EQ(time.ms, c.expected) << c.timestamp;
    EXPECT_EQ(time.ms < c.timestamp, c.clamped) << c.timestamp;
  }
}

}  // namespace
}  // namespace neardup::stream
