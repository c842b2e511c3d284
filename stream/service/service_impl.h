#pragma once
// Service::Impl, the state of one `neardup run` service, shared by the files
// that implement it (one concern each): service.cc (construction, the poll
// loop, batches, shutdown), service_delivery.cc (delivery reports, offset
// commits, the input's hold and transactions), service_rebalance.cc
// (assignments and revocations) and service_judge.cc (requests to the group
// judge, its verdicts). Internal to stream/: include only from those files.
//
// Threads: everything here is the pipeline thread's (run(), and the delivery
// and rebalance callbacks librdkafka serves inside its poll calls), except
// `stop` (any thread) and what the DedupWorker owns between submit and wait.
#include "stream/service/service.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "stream/changelog/changelog_writer.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/sources.h"
#include "stream/judge/judge.h"
#include "stream/kafka/client_properties.h"
#include "stream/kafka/kafka.h"
#include "stream/kafka/transaction.h"
#include "stream/pipeline/dedup_worker.h"
#include "stream/pipeline/event_time.h"
#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"
#include "stream/service/output_router.h"

namespace neardup::stream {
namespace service_detail {

using Clock = std::chrono::steady_clock;

/// Thrown at a crash point a test chose (ServiceOptions::crash_at).
struct SimulatedCrash {};

/// A topic the cluster has, but not in the shape the configuration needs
/// (Service::kTopicLayoutError).
struct TopicLayoutError : kafka::KafkaError {
  explicit TopicLayoutError(const std::string& what)
      : KafkaError(what, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal) {}
};

inline std::int64_t timestamp_of(const rd_kafka_message_t& m) {
  rd_kafka_timestamp_type_t type;
  return rd_kafka_message_timestamp(&m, &type);
}

}  // namespace service_detail

/// Whether a delivery report is a judge request's (stream/service_judge.cc).
bool is_request_delivery(Ticket ticket);

struct Service::Impl {
  // ---- constant after construction
  ServiceOptions options;
  const config::Config& cfg;
  std::atomic<bool>& stop;
  std::uint64_t instance_id = 0;  // marks this process's changelog records
  bool exactly_once = false;      // kafka.delivery: exactly-once
  std::string transactional_id;   // exactly-once: the producer's
  bool judged_remotely = false;   // kafka.judge_topic set: the group's judge decides (judge.h)
  kafka::Properties consumer_properties;

  // ---- pipeline thread
  std::string fatal_error;
  ServiceSnapshot stats;
  Sources sources;
  OffsetLedger ledger;
  std::unique_ptr<kafka::Producer> producer;
  /// exactly-once with the group judge: judge requests go out through this
  /// idempotent producer, outside the transaction (the judge reads its topic
  /// read_committed, and the transaction commits only after the verdicts came
  /// back). Null otherwise: requests go through `producer`.
  std::unique_ptr<kafka::Producer> request_producer;
  std::unique_ptr<OutputRouter> router;
  std::unique_ptr<ChangelogWriter> changelog_writer;  // null when the changelog is off
  std::unique_ptr<ChangelogFollower> changelog;       // set while the changelog is on and read
  std::string delivery_fatal;  // set in the delivery handler, raised after the poll
  std::unique_ptr<kafka::Consumer> consumer;
  std::unique_ptr<TransactionCycle> txn;  // exactly-once only
  Slot slots[2];                          // (their messages go before the consumer does)
  std::unique_ptr<DedupWorker> worker;    // null in bypass mode; after slots: joined before they go
  dedup::EngineStats engine_stats;        // the worker's, as of the last slot it finished
  std::vector<Remembered> followed;       // other instances' changelog entries for the next slot
  int inflight = -1;            // the slot with the worker (polled, not yet handled), or -1
  std::string rebalance_fatal;  // an error while finishing a batch inside a revoke
  std::exception_ptr rebalance_exception;  // any other exception there (std::bad_alloc)
  bool abandoning = false;                 // after a fatal error: a revoke only lets go
  // ---- consistent scale-out (judged_remotely): stream/service_judge.cc
  std::optional<JudgeOptions> judge_options;  // until run() starts the judge
  bool input_held = false;                    // input partitions paused (hold_back_input)
  bool held_for_judge = false;                // ... because too many messages wait for verdicts
  bool reapply_hold = false;                  // an eager assignment since: nothing is paused
  std::unique_ptr<Judge> judge;               // this process's judge (active or standby)
  std::unique_ptr<kafka::Consumer> verdict_reader;  // the verdict topic, assigned, no group
  JudgeRequestWriter requests{cfg.dedup.sketch};
  std::string verdict_key_of_mine;  // verdict_key(instance_id)
  /// Messages sent for judgement, by request batch number, until their verdicts come.
  struct Awaiting {
    std::vector<kafka::MessagePtr> messages;
    std::vector<Prepared> prepared;
    std::vector<Outcome> outcomes;
    std::vector<std::uint32_t> sources;
    std::vector<Ticket> tickets;
    std::vector<dedup::EventTime> times;
    std::int64_t sent_ms = 0;                     // when the request was produced (verdict latency)
    service_detail::Clock::time_point last_sent;  // when it was produced last (resend_unanswered)
    std::string request;                          // the record value, for a resend
  };
  std::map<std::uint64_t, Awaiting> awaiting;
  std::size_t awaiting_messages = 0;  // messages in `awaiting`
  std::uint64_t next_request = 0;
  /// A request unanswered this long is sent again (a judge takeover takes the
  /// session timeout, 6 s by default, plus the window's rebuild).
  static constexpr std::chrono::seconds kResendAfter{15};
  /// Above this many messages waiting for verdicts, the input is not polled
  /// (a judge that is down or behind holds the instances back).
  static constexpr std::size_t kMaxAwaiting = 200'000;
  JudgeVerdicts verdicts_buffer;
  std::vector<kafka::MessagePtr> verdicts_polled;
  std::uint64_t verdicts_corrupt_logged = 0;
  /// Messages stamped later than the wall clock plus window.max_future
  /// (stream/event_time.h), judged at that time instead; the first few are logged.
  std::uint64_t future_timestamps = 0;

  // How long a revoke waits for the output of the partitions it takes away: a
  // rebalance can afford it; the shutdown's revoke comes after its own flush.
  std::chrono::milliseconds revoke_drain{60'000};

  ~Impl();

  Impl(ServiceOptions opts, std::atomic<bool>& stop_flag);

  // ---------------------------------------------------------------- delivery

  void on_delivery(const rd_kafka_message_t& m);

  void note_delivery_fatal(const rd_kafka_message_t& m);

  /// One output record of the input `ticket` is acknowledged.
  void acknowledge(Ticket ticket);

  /// Serves delivery reports (up to `timeout`), then sends what they turned into dead letters.
  void serve_deliveries(std::chrono::milliseconds timeout);

  // ---------------------------------------------------------------- commits

  /// exactly-once: commits the open transaction with the input offsets of
  /// every message handled in it (their outputs are in it); on an abort, the
  /// input is rewound to the last committed offsets.
  void commit_transaction();

  /// exactly-once, after an abort: what the aborted transaction held is read
  /// and judged again from the last committed offsets (the window keeps its
  /// entries; a message is never its own duplicate, so the verdicts repeat).
  void rewind();

  void crash_point(std::string_view point);

  /// The periodic commit: the transaction (exactly-once) or the acknowledged offsets.
  void commit_progress(bool sync);

  /// at-least-once: the outcome of an offset commit (librdkafka's callback):
  /// a failed one is offered again and holds the input back until one succeeds
  /// or the group is joined again.
  void on_commit_result(rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t* offsets);
  std::optional<service_detail::Clock::time_point>
      commits_failing_since;  // the first failure since a success
  std::uint64_t commit_failures_logged = 0;

  /// Commits what is acknowledged; false when the commit failed (logged; a later one carries the
  /// offsets).
  bool commit(bool sync, const rd_kafka_topic_partition_list_t* subset = nullptr);

  /// Waits until every produced record is acknowledged (or `limit` passes).
  bool drain(std::chrono::milliseconds limit);

  // ---------------------------------------------------------------- rebalance

  void on_rebalance(bool assigned, const rd_kafka_topic_partition_list_t& parts);

  void release(const rd_kafka_topic_partition_list_t& parts);

  /// Where each newly assigned partition resumes, for the lag until its first
  /// message arrives (else the lag would count the partition from its start).
  void learn_committed_positions(const rd_kafka_topic_partition_list_t& parts);

  // ---------------------------------------------------------------- batches

  /// Waits for the worker's batch, if any, and produces it.
  void finish_inflight();

  void wait_worker(const Slot& slot);

  /// Hands freshly polled messages (and the changelog entries followed since
  /// the last slot) to the worker. Sources are interned here, on this thread.
  void submit(Slot& slot);

  void handle_slot(Slot& slot);

  // ---------------------------------------------------------------- per message

  /// `index`: the source of `in` (interned; unused when in.err). `prepared`,
  /// `outcome`: the worker's decode, analysis and verdict of `in` (null in
  /// bypass mode). `time`: its event time (bypass: unused).
  void handle(const rd_kafka_message_t& in, std::uint32_t index, const Prepared* prepared,
              const Outcome* outcome, dedup::EventTime time);
  /// handle()'s first half: a consumer error is raised or logged; a message of
  /// an assigned partition enters the ledger. nullopt: nothing more to do.
  std::optional<Ticket> arrive(const rd_kafka_message_t& in, std::uint32_t index);
  /// handle()'s second half: the verdict's outputs (and changelog entry).
  void route_verdict(const rd_kafka_message_t& in, std::uint32_t index, Ticket ticket,
                     const Prepared* prepared, const Outcome* outcome, dedup::EventTime time);

  /// The page's record (options.recent_pairs set): a kept message's text, or a duplicate pair.
  void note_for_page(const Source& src, std::uint32_t index, std::int64_t offset,
                     std::string_view text, const dedup::Verdict& verdict, const Source* of);

  // ---------------------------------------------------------------- changelog

  void flush_changelog();

  /// Reads the whole changelog and replays it into the engine. Returns false if
  /// a stop was requested first. Throws KafkaError (missing topic, fatal errors).
  bool rebuild_window();

  /// Remembers what other instances kept since the last call.
  void follow_changelog();

  /// On an assignment: what the partitions' previous owners kept is in the
  /// changelog by now (their revoke waited for it); read it before judging
  /// any message of those partitions, so their near-copies are caught.
  void read_changelog_to_end();

  // ---------------------------------------------------------------- the judge

  /// Checks the judge and verdict topics and starts reading verdicts from
  /// their current end (before the first request). Throws KafkaError.
  void start_verdicts();
  /// judged_remotely: the analyzed slot's messages enter the ledger and go to
  /// the judge as one request record (invalid ones wait with them, in order).
  void send_for_judgement(Slot& slot);
  /// Produces request record `number` (a first send or a resend). Throws KafkaError.
  void send_request(std::uint64_t number, std::string_view value);
  /// The producer of judge requests: request_producer when set, else producer.
  kafka::Producer& requests_out() { return request_producer ? *request_producer : *producer; }
  /// Reads verdicts (up to `timeout` for the first) and routes the messages they answer.
  void poll_verdicts(std::chrono::milliseconds timeout);
  /// Pauses the input partitions while more than kMaxAwaiting messages wait
  /// for verdicts (resumes them below half of it), or while offset commits
  /// fail (at-least-once: what is handled past the last commit is read again
  /// after the rejoin that follows, so that work is bounded).
  void hold_back_input();
  /// Sends again the requests unanswered for kResendAfter; forgets those whose
  /// messages were all revoked since.
  void resend_unanswered();
  /// Waits until every message sent for judgement has its verdict (or `limit` passes).
  bool await_verdicts(std::chrono::milliseconds limit);
  /// Routes one answered batch (`answers` null: none needed, all invalid).
  void conclude(Awaiting& batch, const JudgeVerdicts* answers);
  void raise_if_judge_failed();

  // ---------------------------------------------------------------- progress

  void fill_lag();

  void publish();

  void raise_if_fatal();

  // ---------------------------------------------------------------- the loop

  /// One poll loop iteration's consume and judge step.
  void poll_and_judge();

  int run();
  /// Warns of an output, duplicates (route) or dead-letter topic the cluster does not have.
  void warn_of_missing_outputs();

  /// A crash as a test simulates it: nothing more reaches the broker.
  int crash();

  /// Logs `headline: what`, then stops as after a fatal Kafka error; returns 1.
  int stop_after_fatal(const std::string& what, std::string_view headline =
                                                    "fatal Kafka error, stopping (offsets of "
                                                    "undelivered messages are not committed)");
};

}  // namespace neardup::stream
