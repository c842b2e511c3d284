// The service's counters as Prometheus sees them (to_metrics): no Kafka needed.
#include <gtest/gtest.h>

#include "stream/service/service.h"

namespace neardup::stream {
namespace {

// The count in the bucket with upper bound `upper` (bucket i of a
// metrics::Histogram holds bounds[i-1] < value <= bounds[i]; counts.back() is +Inf).
std::uint64_t in_bucket(const metrics::Histogram& h, double upper) {
  for (std::size_t i = 0; i < h.bounds.size(); ++i)
    if (h.bounds[i] == upper) return h.counts[i];
  ADD_FAILURE() << "no bucket with upper bound " << upper;
  return 0;
}

TEST(ServiceStats, EndToEndLatencyKeepsValuesAboveAMinute) {
  // A replay of old data: 90 s, 120 s and an hour and a half. They all read 60 s before.
  ServiceSnapshot snapshot;
  snapshot.end_to_end.observe_ms(90'000);
  snapshot.end_to_end.observe_ms(120'000);
  snapshot.end_to_end.observe_ms(5'400'000);
  snapshot.end_to_end.observe_ms(250);
  const metrics::ServiceStats m = to_metrics(snapshot, 3);
  const auto& e2e = m.end_to_end_latency_seconds;
  EXPECT_EQ(e2e.count, 4u);
  EXPECT_DOUBLE_EQ(e2e.sum, 90 + 120 + 5400 + 0.25);
  EXPECT_EQ(in_bucket(e2e, 0.25), 1u);
  EXPECT_EQ(in_bucket(e2e, 60), 0u);
  EXPECT_EQ(in_bucket(e2e, 300), 2u);
  EXPECT_EQ(e2e.counts.back(), 1u) << "above the last bound: +Inf";
  EXPECT_EQ(snapshot.end_to_end.quantile_ms(0.0), 250);
  EXPECT_EQ(snapshot.end_to_end.quantile_ms(0.5), 90'000);
}

TEST(ServiceStats, LatencyAtTheBucketEdgesFallsInTheRightBucket) {
  ServiceSnapshot snapshot;
  snapshot.end_to_end.observe_ms(60'000);   // le=60
  snapshot.end_to_end.observe_ms(60'001);   // le=300
  snapshot.end_to_end.observe_ms(300'000);  // le=300
  snapshot.end_to_end.observe_ms(300'001);  // +Inf
  const auto& e2e = to_metrics(snapshot, 3).end_to_end_latency_seconds;
  EXPECT_EQ(in_bucket(e2e, 60), 1u);
  EXPECT_EQ(in_bucket(e2e, 300), 2u);
  EXPECT_EQ(e2e.counts.back(), 1u);
}

TEST(ServiceStats, CandidatesPerProbeReachTheMetric) {
  ServiceSnapshot snapshot;
  for (double n : {0.0, 3.0, 3.0, 2000.0, 3000.0, 5000.0}) snapshot.candidates_per_probe.observe(n);
  const auto& c = to_metrics(snapshot, 3).candidates_per_probe;
  EXPECT_EQ(c.count, 6u);
  EXPECT_DOUBLE_EQ(c.sum, 10006.0);
  EXPECT_EQ(in_bucket(c, 0), 1u);
  EXPECT_EQ(in_bucket(c, 4), 2u);
  EXPECT_EQ(in_bucket(c, 2048), 1u);
  EXPECT_EQ(in_bucket(c, 4096), 1u);
  EXPECT_EQ(c.counts.back(), 1u);
}

// Every duplicate has a SimHash distance, also those the sketch stage found
// through a shared LSH band (more than k bits away): each is counted, those
// beyond k in +Inf only, and the sum is exact.
TEST(ServiceStats, MatchDistanceCountsEveryDuplicateThoseBeyondKInInf) {
  ServiceSnapshot snapshot;
  snapshot.match_distance.assign(65, 0);  // 0..64 bits
  for (int d : {0, 1, 3, 4, 9, 64}) ++snapshot.match_distance[static_cast<std::size_t>(d)];
  const auto& h = to_metrics(snapshot, 3).match_distance;
  EXPECT_EQ(h.count, 6u);
  EXPECT_DOUBLE_EQ(h.sum, 0 + 1 + 3 + 4 + 9 + 64);
  EXPECT_EQ(in_bucket(h, 0), 1u);
  EXPECT_EQ(in_bucket(h, 1), 1u);
  EXPECT_EQ(in_bucket(h, 2), 0u);
  EXPECT_EQ(in_bucket(h, 3), 1u);
  EXPECT_EQ(h.counts.back(), 3u) << "4, 9 and 64 bits: +Inf";
  std::uint64_t in_buckets = 0;
  for (auto n : h.counts) in_buckets += n;
  EXPECT_EQ(in_buckets, h.count);
}

}  // namespace
}  // namespace neardup::stream
