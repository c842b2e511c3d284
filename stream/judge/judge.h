#pragma once
// The judge of consistent scale-out (docs/KAFKA.md "Several instances"): the
// one place where the window decisions of a whole consumer group are taken,
// in the order of the one-partition judge topic (kafka.judge_topic).
//
// Every `neardup run` process has a Judge; they form the consumer group
// "<group_id>.judge" on the judge topic (cooperative sticky assignor, so
// members joining leave the partition where it is), so exactly one of them
// holds its partition (the active judge) and the others stand by. The active judge:
//  - on assignment, rebuilds the window from the changelog (what every earlier
//    judge kept), then resumes the judge topic at the group's committed offset;
//  - decides each request entry in partition order (dedup::Engine::decide),
//    answers each request record with one verdict record on kafka.verdict_topic
//    (keyed by the requesting instance), and appends what it kept to the
//    window changelog;
//  - at-least-once: commits the judge topic's offset once those records are
//    acknowledged (a successor re-judges at most what followed: a kept message
//    finds its own entry, never its own duplicate, so verdicts repeat);
//    exactly-once: verdicts, changelog entries and the judge topic's offset
//    commit in one transaction, with transactional.id "<id>-judge" shared by
//    every judge of the group, so a new judge fences a zombie one.
//
// Threads: the Judge runs on its own thread (consumer, producer, window are
// that thread's); request_stop(), stats(), active() and fatal_error() may be
// called from any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/thread_annotations.h"
#include "config/config.h"
#include "dedup/engine/engine.h"
#include "stream/core/service_stats.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {

class BrokerHealth;
class CrashPoints;

struct JudgeOptions {
  config::Config config;
  kafka::Properties consumer_properties;  ///< the service's (bootstrap, security, isolation)
  kafka::Properties producer_properties;  ///< the service's, without transactional.id
  bool exactly_once = false;
  /// The brokers hold a fetch that finds nothing until data arrives
  /// (kafka::holds_empty_fetches): the judge's fetches may wait longer.
  bool broker_holds_empty_fetches = false;
  std::string transactional_id;    ///< exactly-once: shared by every judge of the group
  BrokerHealth* health = nullptr;  ///< not owned; outlives the Judge
  /// Where the judge stops dead (stream/core/crash_points_testing.h); not
  /// owned, outlives the Judge. Null: nowhere.
  const CrashPoints* crash_points = nullptr;
};

/// Counters of one Judge (this process's share of the group's judging).
struct JudgeStats {
  std::uint64_t decisions = 0;     ///< request entries decided
  std::uint64_t requests = 0;      ///< request records answered
  std::uint64_t corrupt = 0;       ///< request records refused (not this format)
  std::uint64_t takeovers = 0;     ///< times this process became the active judge
  std::uint64_t restored = 0;      ///< window entries rebuilt at the last takeover
  std::uint64_t restore_read = 0;  ///< changelog entries the last takeover read
  /// The last takeover, from the partition's assignment to the first decision
  /// possible: reading the changelog, rebuilding the window, starting a transaction.
  std::uint64_t takeover_ns = 0;
  std::uint64_t written = 0;  ///< changelog entries acknowledged (at-least-once) or committed
  std::uint64_t changelog_corrupt = 0;  ///< changelog records skipped as unreadable at takeovers
  /// Changelog entries of another fingerprint schema, not used at takeovers.
  std::uint64_t changelog_foreign_schema = 0;
  /// Request entries of another fingerprint schema, answered invalid.
  std::uint64_t foreign_schema = 0;
  std::uint64_t decide_ns = 0;  ///< time spent deciding (engine only)
  bool active = false;
  dedup::EngineStats engine;  ///< the window's, while active
  bool summarizing = false;   ///< kafka.summary_topic is set
  StoryStats stories;         ///< story summaries this process's judge wrote
};

class Judge {
 public:
  /// Starts the judge's thread. Throws kafka::KafkaError when its clients cannot be created.
  explicit Judge(JudgeOptions options);
  ~Judge();  ///< stops: commits what it judged (or aborts), leaves the group
  Judge(const Judge&) = delete;
  Judge& operator=(const Judge&) = delete;

  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  /// Stops and waits for the thread (it commits what it judged and leaves the
  /// group first). Idempotent; stats() stays readable afterwards. Not concurrently with itself.
  void stop();
  JudgeStats stats() const EXCLUDES(mutex_);
  /// Non-empty once the judge stopped on a fatal error (the service then stops too).
  std::string fatal_error() const EXCLUDES(mutex_);
  /// The code of that error (kafka::errc::fenced_instance: another process
  /// joined the judge group with this one's instance id); no_error before one.
  kafka::ErrorCode fatal_code() const EXCLUDES(mutex_);
  /// Tests: the judge stops dead as at a crash point (the whole process "crashed").
  void simulate_crash() { crash_requested_.store(true); }
  /// True when the thread ended through a simulated crash (tests).
  bool crashed() const { return crashed_.load(); }

 private:
  struct State;
  void run();

  JudgeOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> crashed_{false};
  std::atomic<bool> crash_requested_{false};
  mutable base::Mutex mutex_;
  JudgeStats stats_ GUARDED_BY(mutex_);
  std::string fatal_ GUARDED_BY(mutex_);
  kafka::ErrorCode fatal_code_ GUARDED_BY(mutex_) = kafka::errc::no_error;
  friend struct State;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace neardup::stream
