#pragma once
// Service::Impl, the state of one `neardup run` service, shared by the files
// that implement it (one concern each): service.cc (construction, the poll
// loop, batches, the per-message steps, shutdown), service_delivery.cc
// (delivery reports, the drain, the input's hold) and service_rebalance.cc
// (assignments and revocations). The deciders (decider.h) and the delivery
// (delivery.h: commits, transactions) see none of it: they reach the loop
// through the DecisionSink and the DeliveryLoop it implements. Internal to
// stream/service/: include only from those files.
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
#include "stream/core/crash_points_testing.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/sources.h"
#include "stream/judge/judge.h"
#include "stream/kafka/client_properties.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/dedup_worker.h"
#include "stream/pipeline/event_time.h"
#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"
#include "stream/service/decider.h"
#include "stream/service/delivery.h"
#include "stream/service/output_router.h"

namespace neardup::stream {
namespace service_detail {

using Clock = std::chrono::steady_clock;

}  // namespace service_detail

struct Service::Impl final : DecisionSink, DeliveryLoop {
  // ---- constant after construction
  ServiceOptions options;
  const config::Config& cfg;
  std::atomic<bool>& stop;
  std::uint64_t instance_id = 0;  // marks this process's changelog records
  kafka::Properties consumer_properties;
  kafka::Properties producer_properties;
  CrashSwitch crash_points;  // never a crash, but in tests (service_testing.h)

  // ---- pipeline thread
  std::string fatal_error;
  ServiceSnapshot stats;
  Sources sources;
  OffsetLedger ledger;
  std::unique_ptr<kafka::Producer> producer;
  std::string delivery_fatal;  // set in the delivery handler, raised after the poll
  /// How outputs and offsets commit (delivery.h): before the consumer, whose
  /// callbacks it serves, and after the producer.
  std::unique_ptr<Delivery> delivery;
  std::unique_ptr<kafka::Consumer> consumer;
  std::unique_ptr<OutputRouter> router;
  Slot slots[2];                    // (their messages go before the consumer does)
  dedup::EngineStats engine_stats;  // the worker's, as of the last slot it finished
  int inflight = -1;                // the slot with the worker (polled, not yet handled), or -1
  std::string rebalance_fatal;      // an error while finishing a batch inside a revoke
  std::exception_ptr rebalance_exception;  // any other exception there (std::bad_alloc)
  bool abandoning = false;                 // after a fatal error: a revoke only lets go
  /// How verdicts are taken (decider.h), with the worker that analyzes each
  /// batch. After the consumer, the producer and the slots: it goes first,
  /// with the messages it holds (its worker joined before the slots go).
  std::unique_ptr<Decider> decider;
  bool input_held = false;    // input partitions paused (hold_back_input)
  bool reapply_hold = false;  // an eager assignment since: nothing is paused
  /// Messages stamped later than the wall clock plus window.max_future
  /// (stream/pipeline/event_time.h), judged at that time instead; the first few are logged.
  std::uint64_t future_timestamps = 0;

  // How long a revoke waits for the output of the partitions it takes away: a
  // rebalance can afford it; the shutdown's revoke comes after its own flush.
  std::chrono::milliseconds revoke_drain{60'000};

  ~Impl();

  Impl(ServiceOptions opts, std::atomic<bool>& stop_flag);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // ---------------------------------------------------------------- the decider's sink

  // What a decider calls (decider.h), which holds this object only as its
  // DecisionSink: the per-message steps of every decided message, whichever
  // way it was decided (service.cc), and the delivery reports (service_delivery.cc).

  /// Skips a message not to be decided, then arrive(in, index).
  std::optional<Ticket> arrive(const Slot& slot, std::size_t i) override;
  /// The source's position past `in`, then route_verdict.
  void decided(kafka::Message in, SourceIndex index, Ticket ticket, const Prepared& prepared,
               const Outcome& outcome) override;
  /// The source's position past `in`, then `in` forwarded as it is.
  void passed(kafka::Message in, SourceIndex index, Ticket ticket) override;
  /// One output record of the input `ticket` is acknowledged.
  void acknowledge(Ticket ticket) override;
  /// The delivery report of any record this service or its decider produced.
  void on_delivery(kafka::Message m) override;
  /// Serves delivery reports (up to `timeout`), then sends what they turned into dead letters.
  void serve_deliveries(std::chrono::milliseconds timeout) override;
  void progress() override { publish(); }
  bool stopping() const override {
    return stop.load(std::memory_order_relaxed) || stop_signalled();
  }

  // ---------------------------------------------------------------- the delivery's loop

  // What the delivery calls (delivery.h), which holds this object only as its
  // DeliveryLoop (service_delivery.cc).

  void flush_decided() override { decider->flush(); }
  void decided_for_good() override { decider->committed(); }
  /// The worker's batch (judged, never sent: read again), the router's
  /// resends and what waits for verdicts.
  void drop_uncommitted() override;
  /// Waits until every produced record is acknowledged (or `limit` passes).
  bool drain(std::chrono::milliseconds limit) override;

  // ---------------------------------------------------------------- delivery

  void note_delivery_fatal(kafka::Message m);

  void crash_point(std::string_view point);

  // ---------------------------------------------------------------- rebalance

  void on_rebalance(bool assigned, const kafka::TopicPartitions& parts);

  void release(const kafka::TopicPartitions& parts);

  /// Where each newly assigned partition resumes, for the lag until its first
  /// message arrives (else the lag would count the partition from its start).
  void learn_committed_positions(const kafka::TopicPartitions& parts);

  // ---------------------------------------------------------------- batches

  /// Waits for the worker's batch, if any, and produces it.
  void finish_inflight();

  void wait_worker(const Slot& slot);

  /// Hands freshly polled messages to the decider's worker (decider.h:
  /// analyze). Sources are interned here, on this thread.
  void submit(Slot& slot);

  /// Pauses the input partitions while the decider is behind (too many
  /// messages wait for verdicts) or the delivery holds them (at-least-once:
  /// offset commits fail; what is handled past the last commit is read again
  /// after the rejoin that follows, so that work is bounded); resumes them after.
  void hold_back_input();

  // ---------------------------------------------------------------- per message

  /// A message's arrival: a consumer error is raised or logged; a message of
  /// an assigned partition enters the ledger. nullopt: nothing more to do.
  std::optional<Ticket> arrive(kafka::Message in, SourceIndex index);
  /// A decided message's outputs (`prepared`, `outcome`: the worker's decode,
  /// analysis and verdict).
  void route_verdict(kafka::Message in, SourceIndex index, Ticket ticket, const Prepared* prepared,
                     const Outcome* outcome);

  /// The page's record (options.recent_pairs set): a kept message's text, or a duplicate pair.
  void note_for_page(const Source& src, SourceIndex index, std::int64_t offset,
                     std::string_view text, const dedup::Verdict& verdict, const Source* of);

  // ---------------------------------------------------------------- progress

  void fill_lag();

  void publish();

  void raise_if_fatal();

  // ---------------------------------------------------------------- the loop

  /// One poll loop iteration: poll a batch, hand it to the worker, decide the one before.
  void poll_and_decide();

  int run();
  /// Warns of an input, output, duplicates (route) or dead-letter topic the
  /// cluster does not have; the missing inputs are kept in missing_inputs.
  void warn_of_missing_topics();
  std::vector<std::string> missing_inputs;

  /// A crash as a test simulates it: nothing more reaches the broker.
  int crash();

  /// The log line of an instance still unassigned some seconds after it
  /// subscribed: what holds the group, by its consumer properties.
  std::string waiting_for_assignment() const;

  /// The log line of a consumer fenced for its group.instance.id (`what`:
  /// librdkafka's error): which id, and what to do about it.
  std::string fenced_instance_reason(const std::string& what) const;

  /// Logs `headline: what`, then stops as after a fatal Kafka error; returns 1.
  int stop_after_fatal(const std::string& what, std::string_view headline =
                                                    "fatal Kafka error, stopping (offsets of "
                                                    "undelivered messages are not committed)");
};

}  // namespace neardup::stream
