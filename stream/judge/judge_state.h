#pragma once
// Judge::State, the judge thread's state and its work, shared by the files
// that implement it: judge.cc (the thread: its consumer, its end),
// judge_state.cc (taking over and handing over the judge topic, the commit
// cycle, the poll loop) and judge_decide.cc (deciding a request, answering
// it, appending what it kept to the changelog). Internal to stream/judge/:
// include only from those files.
//
// Threads: the judge thread's alone (its rebalance and delivery callbacks run
// inside its poll calls); the Judge's counters are reached through add_stats().
#include "stream/judge/judge.h"

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/changelog_writer.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/sources.h"
#include "stream/kafka/clients/transaction.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/story_writer.h"
#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"

namespace neardup::stream {
namespace judge_detail {

/// Thrown at a crash point a test chose (JudgeOptions::crash_points), or
/// after Judge::simulate_crash().
struct SimulatedJudgeCrash {};

/// Exactly-once: request records decided per judge transaction at most.
inline constexpr std::size_t kRequestsPerTransaction = 32;

}  // namespace judge_detail

/// The judge thread's state (nothing here is touched by another thread).
struct Judge::State {
  Judge& judge;
  const config::Config& cfg;
  std::unique_ptr<kafka::Consumer> consumer;
  std::unique_ptr<kafka::Producer> producer;  // while active
  std::unique_ptr<TransactionCycle> txn;      // exactly-once, while active
  std::unique_ptr<dedup::Engine> engine;      // while active
  std::unique_ptr<StoryWriter> stories;       // kafka.summary_topic set; its stories while active
  Sources sources;                            // the window's refs: every source ever judged
  std::optional<SourceIndex> last_source;     // source_of()'s memo
  std::string last_source_topic;
  std::int32_t last_source_partition = 0;
  dedup::FingerprintSchema schema;  // this judge's (dedup/engine/schema.h)
  SchemaCompatibility schemas;
  ChangelogBatch changelog;
  ChangelogRecord kept_record;  // the entry being added (its topic buffer reused)
  JudgeVerdictWriter verdicts;
  JudgeRequest request;
  std::vector<kafka::MessagePtr> polled;
  std::string verdict_key_buffer;
  bool active = false;
  std::int64_t next_offset = -1;  // one past the last request record decided, -1 none yet
  std::int64_t committed = -1;    // what the last commit sent, -1 none
  std::string delivery_error;
  std::uint64_t corrupt_logged = 0;
  std::uint64_t corrupt_changelog_logged =
      0;  // unreadable changelog records (warn_unreadable_record)
  bool scope_mismatch_logged = false;
  bool sketch_mismatch_logged = false;
  std::vector<std::uint32_t> foreign_logged;  // request schemas said in the log
  std::exception_ptr pending_exception;       // thrown inside a rebalance, raised after the poll
  std::uint64_t unconfirmed_entries = 0;      // changelog entries since the last commit
  bool summaries_pending = false;             // story summaries produced since the last commit

  State(Judge& j, const config::Config& config);

  /// Changes the Judge's counters under its lock.
  void add_stats(const std::function<void(JudgeStats&)>& change);
  /// Throws SimulatedJudgeCrash where the test's crash points say so.
  void crash_point(std::string_view point);

  // ------------------------------------------------------------ roles (judge_state.cc)

  /// The judge topic's partition assigned (take_over) or revoked (hand_over);
  /// what either throws is kept in pending_exception, raised after the poll.
  void on_rebalance(bool assigned, const kafka::TopicPartitions& parts);
  /// Becomes the active judge: producer, window rebuilt from the changelog,
  /// the transaction started (it fences an earlier judge), the stories restored.
  void take_over();
  /// Commits what was decided and lets the window go.
  void hand_over();
  /// Makes what was decided since the last call durable, with the judge
  /// topic's offset: a transaction (exactly-once), or the records
  /// acknowledged and then the offset committed (at-least-once).
  void finish_cycle();
  /// exactly-once, after an abort: the requests since the last commit are read
  /// and decided again (the window keeps its entries; a message is never its
  /// own duplicate, so the verdicts repeat), and the stories go back to the
  /// last commit, so their duplicates count once.
  void rewind();
  /// Polls requests and decides them until the judge is asked to stop. Throws
  /// kafka::KafkaError (fatal) or SimulatedJudgeCrash.
  void loop();

  // ------------------------------------------------------------ deciding (judge_decide.cc)

  void on_delivery(kafka::Message report);
  /// Decides request record `m`'s entries in order and answers them with one
  /// verdict record; what is kept goes to the changelog.
  void decide(kafka::Message m);
  /// Answers every entry of a request of another fingerprint schema as
  /// invalid (its fingerprints and sketches would be compared with the
  /// window's under another meaning); says so once per schema.
  void refuse_foreign_schema();
  void send_verdicts();
  /// sources.intern(), remembering the last answer: a request's entries come
  /// partition by partition (an instance's poll batch), and interning builds a
  /// key string and hashes it for every entry.
  SourceIndex source_of(const SourceName& name);
  /// A kept entry into the changelog batch (sent when full).
  void remember(const JudgeRequestEntry& e, dedup::Fingerprint fingerprint);
  void flush_changelog();
};

}  // namespace neardup::stream
