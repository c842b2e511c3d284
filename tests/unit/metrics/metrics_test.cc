// metrics/: Histogram bucket placement, the exposition text, and the HTTP
// endpoints over a real loopback socket (port 0, so tests never collide).

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "metrics/http/http_server.h"
#include "metrics/metrics.h"
#include "metrics/page/recent_pairs.h"
#include "metrics/progress.h"
#include "metrics/render.h"
#include "tests/unit/metrics/http/http_client.h"

namespace neardup::metrics {
namespace {

using ::testing::HasSubstr;

using testing::http;
using testing::Reply;

// The HTTP pool's floor (HttpServer::kMinWorkers), not the ceiling the
// descriptor limit allows: no test here holds many connections, and starting
// and joining a thousand threads takes seconds of CPU under the sanitizers.
constexpr int kWorkers = HttpServer::kMinWorkers;

Reply get(const std::string& address, const std::string& path) {
  return http(address, "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n");
}

/// Sample lines of an exposition, keyed by "name{labels}" exactly as written.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST(Histogram, PlacesValuesByUpperBoundInclusive) {
  Histogram h({1, 2, 5});
  ASSERT_EQ(h.counts.size(), 4u);
  for (double v : {0.5, 1.0}) h.observe(v);  // le="1"
  h.observe(1.5);                            // le="2"
  h.observe(5);                              // le="5"
  h.observe(6);                              // +Inf
  h.observe(-3);                             // below every bound: first bucket
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{3, 1, 1, 1}));
  EXPECT_EQ(h.count, 6u);
  EXPECT_DOUBLE_EQ(h.sum, 0.5 + 1 + 1.5 + 5 + 6 - 3);
}

TEST(Histogram, NormalizesBoundsAndIgnoresNaN) {
  Histogram h({5, 1, 1, INFINITY, NAN, 2});
  EXPECT_EQ(h.bounds, (std::vector<double>{1, 2, 5}));
  h.observe(NAN);
  EXPECT_EQ(h.count, 0u);
  EXPECT_EQ(h.sum, 0);
}

TEST(Histogram, DefaultConstructedCountsEverythingInInf) {
  Histogram h;
  h.observe(42);
  ASSERT_EQ(h.counts.size(), 1u);
  EXPECT_EQ(h.counts[0], 1u);
}

TEST(ServiceStats, MatchDistanceHasOneBucketPerBitUpToK) {
  const auto s = ServiceStats::with_buckets(3);
  EXPECT_EQ(s.match_distance.bounds, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(ServiceStats::with_buckets(0).match_distance.bounds, (std::vector<double>{0}));
  EXPECT_FALSE(s.processing_seconds.bounds.empty());
  EXPECT_FALSE(s.end_to_end_latency_seconds.bounds.empty());
  EXPECT_FALSE(s.candidates_per_probe.bounds.empty());
}

ServiceStats sample_stats() {
  auto s = ServiceStats::with_buckets(3);
  s.unique = 11;
  s.duplicate = 7;
  s.invalid = 2;
  s.judged_by_group = true;  // (its series pass promtool too)
  s.judge_decisions = 18;
  for (int d : {0, 1, 1, 3}) s.match_distance.observe(d);
  s.candidates_per_probe.observe(3);
  s.window_entries = 11;
  s.window_bytes = 4096;
  s.window_evictions = 5;
  s.processing_seconds.observe(0.00002);
  s.end_to_end_latency_seconds.observe(0.2);
  s.consumer_lag[{"input", 0}] = 12;
  s.consumer_lag[{"input", 7}] = 0;
  s.produce_errors = 1;
  s.dead_letters = 2;
  s.changelog_foreign_schema = 3;
  return s;
}

TEST(Render, ExposesEverySeriesWithCumulativeBuckets) {
  const auto m = samples(render_text(sample_stats(), {"1.2.3", {{"k", "3"}}}, true));
  EXPECT_EQ(m.at("neardup_messages_total{verdict=\"unique\"}"), 11);
  EXPECT_EQ(m.at("neardup_messages_total{verdict=\"duplicate\"}"), 7);
  EXPECT_EQ(m.at("neardup_messages_total{verdict=\"invalid\"}"), 2);
  EXPECT_EQ(m.at("neardup_match_distance_bucket{le=\"0\"}"), 1);
  EXPECT_EQ(m.at("neardup_match_distance_bucket{le=\"1\"}"), 3);
  EXPECT_EQ(m.at("neardup_match_distance_bucket{le=\"2\"}"), 3);
  EXPECT_EQ(m.at("neardup_match_distance_bucket{le=\"3\"}"), 4);
  EXPECT_EQ(m.at("neardup_match_distance_bucket{le=\"+Inf\"}"), 4);
  EXPECT_EQ(m.at("neardup_match_distance_count"), 4);
  EXPECT_EQ(m.at("neardup_match_distance_sum"), 5);
  EXPECT_EQ(m.at("neardup_candidates_per_probe_bucket{le=\"2\"}"), 0);
  EXPECT_EQ(m.at("neardup_candidates_per_probe_bucket{le=\"4\"}"), 1);
  EXPECT_EQ(m.at("neardup_window_entries"), 11);
  EXPECT_EQ(m.at("neardup_window_bytes"), 4096);
  EXPECT_EQ(m.at("neardup_window_evictions_total"), 5);
  EXPECT_EQ(m.at("neardup_processing_seconds_count"), 1);
  EXPECT_EQ(m.at("neardup_end_to_end_latency_seconds_bucket{le=\"0.1\"}"), 0);
  EXPECT_EQ(m.at("neardup_end_to_end_latency_seconds_bucket{le=\"0.25\"}"), 1);
  EXPECT_EQ(m.at("neardup_consumer_lag{partition=\"0\",topic=\"input\"}"), 12);
  EXPECT_EQ(m.at("neardup_consumer_lag{partition=\"7\",topic=\"input\"}"), 0);
  EXPECT_EQ(m.at("neardup_produce_errors_total"), 1);
  EXPECT_EQ(m.at("neardup_dead_letters_total"), 2);
  EXPECT_EQ(m.at("neardup_ready"), 1);
  EXPECT_EQ(m.at("neardup_changelog_foreign_schema_total"), 3);
  EXPECT_EQ(m.at("neardup_build_info{version=\"1.2.3\",k=\"3\"}"), 1);
}

TEST(Render, ExposesKafkaBrokerConnectionState) {
  ServiceStats stats;
  const auto healthy = samples(render_text(stats, {"1.2.3", {}}, true));
  EXPECT_EQ(healthy.at("neardup_kafka_brokers_up"), 1);  // no outage known
  EXPECT_EQ(healthy.at("neardup_kafka_broker_outages_total"), 0);
  EXPECT_EQ(healthy.count("neardup_kafka_broker_up{broker=\"127.0.0.1:9092\"}"),
            0u);  // never tried: absent

  stats.kafka_brokers_up = false;
  stats.kafka_broker_outages = 2;
  stats.kafka_broker_up = {{"127.0.0.1:9092", false}, {"127.0.0.1:9093", true}};
  const auto outage = samples(render_text(stats, {"1.2.3", {}}, false));
  EXPECT_EQ(outage.at("neardup_kafka_brokers_up"), 0);
  EXPECT_EQ(outage.at("neardup_kafka_broker_outages_total"), 2);
  EXPECT_EQ(outage.at("neardup_kafka_broker_up{broker=\"127.0.0.1:9092\"}"), 0);
  EXPECT_EQ(outage.at("neardup_kafka_broker_up{broker=\"127.0.0.1:9093\"}"), 1);
  EXPECT_EQ(outage.at("neardup_ready"), 0);
}

TEST(Render, ExposesTheGroupJudgeOnlyWhenItIsOn) {
  ServiceStats stats = ServiceStats::with_buckets(3);
  const auto off = samples(render_text(stats, {"1.2.3", {}}, true));
  EXPECT_EQ(off.count("neardup_judge_active"), 0u);
  EXPECT_EQ(off.count("neardup_judge_decisions_total"), 0u);
  EXPECT_EQ(off.count("neardup_judge_foreign_schema_total"), 0u);

  stats.judged_by_group = true;
  stats.judge_active = true;
  stats.judge_decisions = 1234;
  stats.judge_takeovers = 2;
  stats.judge_takeover_seconds = 0.75;
  stats.judge_awaiting = 17;
  stats.judge_resends = 1;
  stats.judge_waiting_seconds = 31.5;
  stats.judge_foreign_schema = 6;
  stats.judge_round_trip_seconds.counts[3] = 5;  // le 0.01
  stats.judge_round_trip_seconds.count = 5;
  stats.judge_round_trip_seconds.sum = 0.04;
  const auto on = samples(render_text(stats, {"1.2.3", {}}, true));
  EXPECT_EQ(on.at("neardup_judge_active"), 1);
  EXPECT_EQ(on.at("neardup_judge_decisions_total"), 1234);
  EXPECT_EQ(on.at("neardup_judge_takeovers_total"), 2);
  EXPECT_EQ(on.at("neardup_judge_takeover_seconds"), 0.75);
  EXPECT_EQ(off.count("neardup_judge_takeover_seconds"), 0u);
  EXPECT_EQ(on.at("neardup_judge_awaiting_messages"), 17);
  EXPECT_EQ(on.at("neardup_judge_resends_total"), 1);
  EXPECT_EQ(on.at("neardup_judge_foreign_schema_total"), 6);
  EXPECT_EQ(on.at("neardup_judge_waiting_seconds"), 31.5);
  EXPECT_EQ(off.count("neardup_judge_waiting_seconds"), 0u);
  EXPECT_EQ(on.at("neardup_judge_round_trip_seconds_bucket{le=\"0.005\"}"), 0);
  EXPECT_EQ(on.at("neardup_judge_round_trip_seconds_bucket{le=\"0.01\"}"), 5);
  EXPECT_EQ(on.at("neardup_judge_round_trip_seconds_count"), 5);
}

TEST(Render, PassesPromtoolCheckMetrics) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool not installed";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("neardup_metrics_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto stats = sample_stats();
  stats.consumer_lag[{"we\"ird\\topic\n", 1}] = 3;  // label escaping must stay valid
  stats.kafka_broker_up = {{"127.0.0.1:9092", false}, {"[::1]:9093", true}};
  std::ofstream(dir / "metrics.txt") << render_text(stats, {"1.2.3", {{"k", "3"}}}, false);
  const std::string command = "promtool check metrics < " + (dir / "metrics.txt").string() + " > " +
                              (dir / "out.txt").string() + " 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream in(dir / "out.txt");
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "");
}

TEST(Exporter, ServesPublishedStatsOnMetrics) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_THAT(exporter.address(), ::testing::StartsWith("127.0.0.1:"));
  EXPECT_NE(exporter.address(), "127.0.0.1:0");

  auto before = get(exporter.address(), "/metrics");
  ASSERT_EQ(before.status, 200);
  EXPECT_EQ(samples(before.body).at("neardup_messages_total{verdict=\"unique\"}"), 0);

  exporter.publish(sample_stats());
  const auto reply = get(exporter.address(), "/metrics");
  ASSERT_EQ(reply.status, 200);
  EXPECT_THAT(reply.head, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  const auto m = samples(reply.body);
  EXPECT_EQ(m.at("neardup_messages_total{verdict=\"duplicate\"}"), 7);
  EXPECT_EQ(m.at("neardup_consumer_lag{partition=\"0\",topic=\"input\"}"), 12);
  EXPECT_EQ(m.at("neardup_build_info{version=\"1.2.3\"}"), 1);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// nosniff on every answer: the probes, the page, errors, refused methods.
TEST(Exporter, EveryResponseSaysNosniffOnce) {
  RecentPairs pairs;
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, kWorkers);
  exporter.publish(sample_stats());
  const std::string address = exporter.address();
  std::vector<std::pair<std::string, Reply>> replies;
  exporter.set_ready(false, "no partitions assigned");
  replies.emplace_back("/readyz (not ready)", get(address, "/readyz"));
  exporter.set_ready(true);
  for (const char* path : {"/metrics", "/healthz", "/readyz", "/", "/api/summary", "/nope"})
    replies.emplace_back(path, get(address, path));
  replies.emplace_back("POST /metrics", testing::http(address,
                                                      "POST /metrics HTTP/1.1\r\nHost: test\r\n"
                                                      "Content-Length: 0\r\n\r\n"));
  const int statuses[] = {503, 200, 200, 200, 200, 200, 404, 405};
  ASSERT_EQ(replies.size(), std::size(statuses));
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const auto& [what, reply] = replies[i];
    EXPECT_EQ(reply.status, statuses[i]) << what;
    EXPECT_EQ(occurrences(reply.head, "\r\nX-Content-Type-Options: nosniff\r\n") +
                  (reply.head.ends_with("\r\nX-Content-Type-Options: nosniff") ? 1 : 0),
              1U)
        << what << ":\n"
        << reply.head;
  }
}

void record_duplicates(RecentPairs& pairs, int from, int to) {
  for (int i = from; i <= to; ++i) {
    DuplicateSeen seen;
    seen.original_key = 1;
    seen.original = {"input", 0, 0};
    seen.duplicate = {"input", 0, i};
    seen.duplicate_text = "Markets rally as rates fall";
    seen.distance = 1;
    pairs.duplicate(seen);
  }
}

// The counts and the pairs beside them come from one publish: a pair recorded
// after the counts were taken is not listed until counts that include it are
// published ("35 duplicates" beside "the last 36 of 36" before).
TEST(Exporter, PageCountsAndPairsAgree) {
  RecentPairs pairs;
  pairs.kept(1, "Markets rally as rates fall");
  record_duplicates(pairs, 1, 35);
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, kWorkers);
  ServiceStats stats = sample_stats();
  stats.duplicate = 35;
  stats.pairs_recorded = pairs.recorded();
  exporter.publish(stats);
  record_duplicates(pairs, 36, 36);  // recorded, its counts not yet published
  ASSERT_EQ(pairs.recorded(), 36U);
  const auto check = [&](int duplicates) {
    const auto json = get(exporter.address(), "/api/summary");
    ASSERT_EQ(json.status, 200);
    EXPECT_THAT(json.body, HasSubstr("\"duplicate\":" + std::to_string(duplicates) + ","));
    EXPECT_THAT(json.body, HasSubstr("\"recorded\":" + std::to_string(duplicates) + ","));
    EXPECT_EQ(occurrences(json.body, "\"distance\":1"), static_cast<std::size_t>(duplicates));
    const auto page = get(exporter.address(), "/");
    ASSERT_EQ(page.status, 200);
    EXPECT_THAT(page.body,
                HasSubstr("id=\"count-duplicate\">" + std::to_string(duplicates) + "</span>"));
    EXPECT_THAT(page.body, HasSubstr("The last " + std::to_string(duplicates) + " of " +
                                     std::to_string(duplicates) + " duplicates"));
    EXPECT_EQ(occurrences(page.body, "<article class=\"pair\""),
              static_cast<std::size_t>(duplicates));
  };
  check(35);
  stats.duplicate = 36;
  stats.pairs_recorded = pairs.recorded();
  exporter.publish(stats);
  check(36);
  // Stats without the mark (published by a thread that records no pairs): the
  // pairs recorded at the publish.
  stats.pairs_recorded.reset();
  exporter.publish(stats);
  check(36);
}

TEST(Exporter, ServesThePageAndItsJsonFromRecentPairs) {
  RecentPairs pairs;
  pairs.kept(1, "Markets rally as rates fall");
  DuplicateSeen seen;
  seen.original_key = 1;
  seen.original = {"input", 0, 4};
  seen.duplicate = {"input", 1, 9};
  seen.duplicate_text = "Markets rally as rates <b>drop</b>";
  seen.distance = 2;
  pairs.duplicate(seen);
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, kWorkers);
  exporter.publish(sample_stats());
  const auto page = get(exporter.address(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_THAT(page.head, HasSubstr("Content-Type: text/html; charset=utf-8"));
  EXPECT_THAT(page.head, HasSubstr("Cache-Control: no-store"));
  EXPECT_THAT(page.body, HasSubstr("<span class=\"n\" id=\"count-duplicate\">7</span>"));
  EXPECT_THAT(page.body, HasSubstr("<mark class=\"del\">fall</mark>"));
  EXPECT_THAT(page.body,
              HasSubstr("<mark class=\"add\">&lt;b&gt;drop&lt;/b&gt;</mark>"));  // escaped
  const auto json = get(exporter.address(), "/api/summary");
  ASSERT_EQ(json.status, 200);
  EXPECT_THAT(json.head, HasSubstr("Content-Type: application/json"));
  EXPECT_THAT(json.body, HasSubstr("\"duplicate\":7"));
  EXPECT_THAT(json.body, HasSubstr("\"text\":\"Markets rally as rates \\u003cb\\u003edrop"));
  // Without a record: counts only, and the page says so.
  Exporter bare("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_THAT(get(bare.address(), "/").body, HasSubstr("Pairs are not recorded"));
  EXPECT_THAT(get(bare.address(), "/api/summary").body, HasSubstr("\"pairs_recorded\":false"));
}

TEST(Exporter, ReadyzIs503UntilSetReady) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_EQ(get(exporter.address(), "/readyz").status, 503);
  EXPECT_EQ(samples(get(exporter.address(), "/metrics").body).at("neardup_ready"), 0);
  exporter.set_ready(true);
  EXPECT_EQ(get(exporter.address(), "/readyz").status, 200);
  EXPECT_EQ(samples(get(exporter.address(), "/metrics").body).at("neardup_ready"), 1);
  exporter.set_ready(false);  // e.g. partitions revoked during a rebalance
  EXPECT_EQ(get(exporter.address(), "/readyz").status, 503);
}

TEST(Exporter, ReadyzSaysWhyItIsNotReady) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_EQ(get(exporter.address(), "/readyz").body, "not ready\n");
  exporter.set_ready(false, "Kafka brokers unreachable for 3.0 s: 127.0.0.1:9092");
  const auto reply = get(exporter.address(), "/readyz");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.body, "not ready: Kafka brokers unreachable for 3.0 s: 127.0.0.1:9092\n");
  EXPECT_EQ(get(exporter.address(), "/healthz").status,
            200);  // alive: a restart cannot bring brokers back
  exporter.set_ready(true, "ignored when ready");
  EXPECT_EQ(get(exporter.address(), "/readyz").body, "ready\n");
}

TEST(Exporter, HealthzIsAlways200) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_EQ(get(exporter.address(), "/healthz").status, 200);
  EXPECT_EQ(get(exporter.address(), "/healthz?verbose=1").status, 200);
}

TEST(Exporter, AnswersUnknownPathsMethodsAndGarbage) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  EXPECT_EQ(get(exporter.address(), "/nope").status, 404);
  EXPECT_EQ(http(exporter.address(), "POST /metrics HTTP/1.1\r\n\r\n").status, 405);
  EXPECT_EQ(http(exporter.address(), "garbage\r\n\r\n").status, 400);
  EXPECT_EQ(http(exporter.address(), std::string(20000, 'x')).status, 431);
  const auto head = http(exporter.address(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_THAT(head.head, HasSubstr("Content-Length: 3"));
  // After all that the server still answers.
  EXPECT_EQ(get(exporter.address(), "/healthz").status, 200);
}

TEST(Exporter, ScrapesSeeMonotonicCountersWhilePublishing) {
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  std::thread publisher([&] {
    auto s = ServiceStats::with_buckets(3);
    for (int i = 0; i < 2000; ++i) {
      ++s.unique;
      s.processing_seconds.observe(1e-5);
      exporter.publish(s);
    }
  });
  double last = 0;
  for (int i = 0; i < 20; ++i) {
    const auto m = samples(get(exporter.address(), "/metrics").body);
    const double now = m.at("neardup_messages_total{verdict=\"unique\"}");
    EXPECT_GE(now, last);
    EXPECT_EQ(m.at("neardup_processing_seconds_count"), now);  // one consistent snapshot
    last = now;
  }
  publisher.join();
  EXPECT_EQ(samples(get(exporter.address(), "/metrics").body)
                .at("neardup_messages_total{verdict=\"unique\"}"),
            2000);
}

std::string listen_error(const std::string& listen) {
  try {
    Exporter exporter(listen, {"1.2.3", {}}, nullptr, kWorkers);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Exporter, BadListenAddressThrowsAClearMessage) {
  EXPECT_THAT(listen_error("localhost"),
              HasSubstr("metrics.listen 'localhost': expected host:port"));
  EXPECT_THAT(listen_error("127.0.0.1:99999"),
              HasSubstr("metrics.listen '127.0.0.1:99999': port out of range: 99999 is not in "
                        "0..65535"));
  EXPECT_THAT(listen_error("127.0.0.1:http"),
              HasSubstr("metrics.listen '127.0.0.1:http': port must be a number in 0..65535"));
  EXPECT_THAT(listen_error("999.1.1.1:80"),
              HasSubstr("metrics.listen '999.1.1.1:80': expected an IPv4 address"));
  EXPECT_THAT(listen_error(":9464"), HasSubstr("missing host"));
  EXPECT_THAT(listen_error("::1:9464"), HasSubstr("IPv6 addresses cannot be served"));
  EXPECT_THAT(listen_error("no-such-host.invalid:0"),
              HasSubstr("cannot resolve host 'no-such-host.invalid'"));
  EXPECT_THAT(listen_error("192.0.2.1:0"),
              HasSubstr("cannot bind"));  // TEST-NET: not a local address
}

TEST(Exporter, PortInUseThrows) {
  Exporter first("127.0.0.1:0", {"1.2.3", {}}, nullptr, kWorkers);
  const std::string taken = first.address();
  EXPECT_THAT(listen_error(taken), HasSubstr("Address already in use"));
}

// ------------------------------------------------------------------ progress line

TEST(Progress, ShowsRateDuplicateShareLagAndWindow) {
  ServiceStats before, after;
  before.unique = 100;
  after.unique = 1100;
  after.duplicate = 1000;
  after.invalid = 400;  // 2400 judged in 2 s, 1000 of them duplicates
  after.consumer_lag[{"input", 0}] = 120;
  after.consumer_lag[{"input", 1}] = -1;  // librdkafka reports -1 when unknown: not counted
  after.window_entries = 11000;
  after.window_bytes = 3 * 1024 * 1024;
  EXPECT_EQ(format_progress(before, after, 2.0),
            "1.2k msg/s | dup 41.7% | lag 120 | window 11k entries, 3.0 MiB");
  EXPECT_EQ(format_progress(after, after, 0),
            "0 msg/s | dup 0.0% | lag 120 | window 11k entries, 3.0 MiB");
}

TEST(Progress, PrintsAtMostOncePerIntervalAndOnlyWhenEnabled) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  EXPECT_FALSE(ProgressLine(sink).enabled());  // a file is not a terminal
  ProgressLine line(sink, std::chrono::seconds(2), /*force=*/true);
  const auto t0 = std::chrono::steady_clock::time_point{};
  ServiceStats s;
  EXPECT_FALSE(line.update(s, t0));  // first snapshot: nothing to compare yet
  s.unique = 10;
  EXPECT_FALSE(line.update(s, t0 + std::chrono::seconds(1)));
  EXPECT_TRUE(line.update(s, t0 + std::chrono::seconds(2)));
  EXPECT_FALSE(line.update(s, t0 + std::chrono::seconds(3)));
  line.finish();
  std::rewind(sink);
  std::string written;
  for (int c; (c = std::fgetc(sink)) != EOF;) written += static_cast<char>(c);
  std::fclose(sink);
  EXPECT_EQ(written, "\r5 msg/s | dup 0.0% | lag 0 | window 0 entries, 0.0 MiB\x1b[K\n");
}

TEST(Progress, ALogLineAfterTheProgressLineStartsALineOfItsOwn) {
  // The demo shows the progress line on any stderr; logs went on after it ("...MiB\x1b[K2026-...
  // info").
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  base::configure_logging(base::LogFormat::text, base::LogLevel::info, sink);
  ProgressLine line(sink, std::chrono::seconds(1), /*force=*/true);
  const auto t0 = std::chrono::steady_clock::time_point{};
  ServiceStats s;
  line.update(s, t0);
  ASSERT_TRUE(line.update(s, t0 + std::chrono::seconds(1)));
  base::log(base::LogLevel::info, "assigned 8 partition(s)");
  line.finish();  // the log line ended the progress line: no blank line
  base::configure_logging(base::LogFormat::text, base::LogLevel::info, stderr);
  std::rewind(sink);
  std::string written;
  for (int c; (c = std::fgetc(sink)) != EOF;) written += static_cast<char>(c);
  std::fclose(sink);
  const std::string progress = "\r0 msg/s | dup 0.0% | lag 0 | window 0 entries, 0.0 MiB\x1b[K\n";
  ASSERT_EQ(written.substr(0, progress.size()), progress) << written;
  EXPECT_NE(written.find(" info assigned 8 partition(s)\n"), std::string::npos) << written;
  EXPECT_EQ(written.find("\n\n"), std::string::npos) << "a blank line: " << written;
}

}  // namespace
}  // namespace neardup::metrics
