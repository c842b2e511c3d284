#pragma once
// Where `neardup run` takes its window decisions: the seam between the
// service's loop (consume, route, commit: service.cc) and the ways of
// deciding, one implementation each, chosen once when the service is built:
//   local  (local_decider.cc): kafka.judge_topic is "": the dedup worker owns
//          the window and decides; kept messages are appended to the changelog,
//          which rebuilds the window at start and brings other instances'
//          entries afterwards.
//   group  (group_decider.cc): the group's judge decides (stream/judge/):
//          analyzed messages go out as one request record per batch and wait
//          here for their verdicts; this process also runs a judge, which
//          decides for the whole group while it holds the judge topic.
//   passthrough (local_decider.cc): the benchmark baseline (ServiceOptions::
//          bypass_dedup): every message is kept as it is; no worker, no window.
// Each decider brings its own dedup worker (stream/pipeline/dedup_worker.h),
// if any: the loop hands it each polled batch (analyze) and collects it
// (wait_analyzed) whichever way it decides.
//
// The seam runs one way. A decider is given a batch (decide(slot)) and the
// loop's hooks (the Decider's methods); its verdicts go out through the one
// callback it holds, a DecisionSink, which the loop implements: each decided
// message is admitted there (the offset ledger) and routed there (outputs),
// whichever way it was decided. What else a decider uses it is given at
// construction (DeciderContext): the configuration, the service's producer
// (its changelog batches or judge requests), the interned sources, the
// ledger and the counters. Nothing here knows the loop's own state.
//
// Pipeline thread only (a Decider's methods run on it, some inside librdkafka
// callbacks served by its poll calls).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/dedup_worker.h"

namespace neardup::stream {

class BrokerHealth;
class CrashPoints;

/// A topic the cluster has, but not in the shape the configuration needs
/// (Service::kTopicLayoutError): a judge or verdict topic of more than one partition.
struct TopicLayoutError : kafka::KafkaError {
  explicit TopicLayoutError(const std::string& what)
      : KafkaError(what, kafka::errc::fail, kafka::Severity::fatal) {}
};

/// The loop's side of the seam: the steps every decided message takes,
/// whichever way it was decided, and the few services a decider asks of the
/// loop. Implemented by the service; pipeline thread only.
class DecisionSink {
 public:
  /// Message `i` of the analyzed `slot` arrives: nullopt when there is
  /// nothing more to do with it (its partition was not assigned when it was
  /// polled, or is not now; a consumer error, logged), else its ticket in the
  /// offset ledger, outstanding until its outputs are acknowledged. Throws
  /// kafka::KafkaError for a fatal consumer error.
  virtual std::optional<Ticket> arrive(const Slot& slot, std::size_t i) = 0;
  /// Message `in` of source `index` is decided (`outcome`): its partition's
  /// position moves past it and its outputs go out (output_router.h), in
  /// the order the calls come.
  virtual void decided(kafka::Message in, SourceIndex index, Ticket ticket,
                       const Prepared& prepared, const Outcome& outcome) = 0;
  /// Message `in` of source `index` passes undecided (the passthrough): its
  /// partition's position moves past it and it goes to the output topic as it is.
  virtual void passed(kafka::Message in, SourceIndex index, Ticket ticket) = 0;
  /// One outstanding output of `ticket` is done (a changelog entry
  /// acknowledged, a verdict received).
  virtual void acknowledge(Ticket ticket) = 0;
  /// A delivery report of a producer the decider owns (its records' tickets
  /// say they are the decider's: is_decider_record).
  virtual void on_delivery(kafka::Message report) = 0;
  /// Serves the service producer's delivery reports, up to `timeout`.
  virtual void serve_deliveries(std::chrono::milliseconds timeout) = 0;
  /// Publishes the counters (a long window rebuild shows its progress).
  virtual void progress() = 0;
  /// Whether a stop was asked for (request_stop or a signal).
  virtual bool stopping() const = 0;

  virtual ~DecisionSink() = default;
};

/// What a decider is given when it is built. Every reference outlives it.
struct DeciderContext {
  const config::Config& cfg;
  const std::string& brokers;                    ///< for error messages
  const kafka::Properties& consumer_properties;  ///< the service's input consumer's
  const kafka::Properties& producer_properties;  ///< the service's producer's
  /// The service's producer: a decider's changelog batches and (at-least-once)
  /// its judge requests; under exactly-once, records on it are in the
  /// service's transaction.
  kafka::Producer& producer;
  /// Whether the service's outputs commit in transactions (Delivery::
  /// transactional): its judge requests then need a producer of their own.
  bool transactional = false;
  std::uint64_t instance_id = 0;  ///< marks this process's changelog records and requests
  Sources& sources;               ///< the input partitions and window refs
  OffsetLedger& ledger;           ///< an output a decider adds is expected here
  ServiceSnapshot& stats;         ///< its counters
  BrokerHealth* broker_health = nullptr;
  std::chrono::milliseconds progress_interval{500};
  /// Where the group judge stops dead (stream/core/crash_points_testing.h;
  /// never, but in tests).
  const CrashPoints& crash_points;
  DecisionSink& sink;
};

/// The hooks a way of deciding has no use for do nothing by default.
class Decider {
 public:
  virtual ~Decider() = default;

  /// Before the input is subscribed: the window rebuilt from the changelog
  /// into the worker's engine (no slot handed over yet), `window_stats` set
  /// to its counters after the rebuild; or the verdicts' reader opened and
  /// the judge started. False when a stop came first. Throws kafka::KafkaError.
  virtual bool start(dedup::EngineStats& window_stats) = 0;
  /// Whether other instances' changelog entries wait for the worker's next
  /// slot (then an empty poll is handed over too, to carry them).
  virtual bool has_remembered() const { return false; }
  /// Hands a freshly polled `slot` (its jobs filled) to the decider's worker,
  /// with the entries remembered since: it decodes and analyzes it (and,
  /// deciding locally, decides it) on its own thread. The slot is the
  /// worker's until wait_analyzed(). Without a worker, nothing happens.
  virtual void analyze(Slot& slot) = 0;
  /// Until the slot handed over is analyzed; rethrows what the worker threw.
  virtual void wait_analyzed() = 0;
  /// The worker finished `slot`: each message of it is admitted
  /// (DecisionSink::arrive) and decided now or sent for judgement (then
  /// decided when its verdict comes, in input order). Leaves `slot.messages` empty.
  virtual void decide(Slot& slot) = 0;
  /// Whether messages wait for verdicts (then the input poll does not wait).
  virtual bool waiting() const { return false; }
  /// Whether so many messages wait for verdicts that the input should pause
  /// (with hysteresis; a change is logged).
  virtual bool behind() { return false; }
  /// Once per loop pass: verdicts read (up to `timeout` for the first) and
  /// routed, or the changelog batch sent and other instances' entries read.
  virtual void step(std::chrono::milliseconds /*timeout*/) {}
  /// Every commit interval: requests unanswered too long are sent again.
  virtual void tick() {}
  /// Buffered changelog entries go out (before a drain or a transaction commits).
  virtual void flush() {}
  /// Partitions were assigned: what their previous owners kept is read first.
  /// Throws kafka::KafkaError.
  virtual void assigned() {}
  /// A revoke or a stop: every handled message gets its verdict and is routed,
  /// within `limit`. False when some did not (their offsets stay uncommitted).
  virtual bool settle(std::chrono::milliseconds /*limit*/) { return true; }
  /// What `settle` left unanswered, for the log.
  virtual std::size_t unanswered() const { return 0; }
  /// After an aborted transaction: nothing handled waits any more (the input is
  /// rewound; its messages are read and decided again).
  virtual void forget() {}
  /// What was decided up to here is for good: the delivery committed it
  /// (exactly-once: at start and at each transaction's commit; never under
  /// at-least-once, which has nothing to go back to).
  virtual void committed() {}
  /// The delivery report of a record this decider produced (a changelog batch
  /// or a judge request: is_decider_record(ticket)).
  virtual void on_delivery(Ticket /*ticket*/, bool /*delivered*/) {}
  /// Serves the delivery reports of the decider's own producer, if any.
  virtual void serve() {}
  /// Raises what failed on another thread (the judge's). Throws.
  virtual void raise_if_failed() {}
  /// Its counters into the service's.
  virtual void publish(ServiceSnapshot& /*stats*/, dedup::EngineStats& /*engine*/) {}
  /// The end of run(): hands the judging over.
  virtual void stop() {}
  /// A simulated crash: nothing more reaches the broker.
  virtual void crash() {}
};

/// The deciders; what `context` refers to outlives them.
std::unique_ptr<Decider> make_local_decider(const DeciderContext& context);
std::unique_ptr<Decider> make_group_decider(const DeciderContext& context);
std::unique_ptr<Decider> make_passthrough_decider(const DeciderContext& context);

/// Whether a delivery report's ticket is a record of the decider's own (a
/// changelog batch or a judge request), and whether it is a judge request.
bool is_decider_record(Ticket ticket);
bool is_request_delivery(Ticket ticket);
/// The delivery opaque of a story summary (stream/pipeline/story_writer.h).
void* summary_opaque();
bool is_summary_delivery(Ticket ticket);

}  // namespace neardup::stream
