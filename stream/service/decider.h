#pragma once
// Where `neardup run` takes its window decisions: the seam between the
// service's loop (consume, route, commit: service.cc) and the ways of
// deciding, one implementation each, chosen once when the service is built
// (make_decider):
//   local  (local_decider.cc): kafka.judge_topic is "": the dedup worker owns
//          the window and decides; kept messages are appended to the changelog,
//          which rebuilds the window at start and brings other instances'
//          entries afterwards.
//   group  (group_decider.cc): the group's judge decides (stream/judge/):
//          analyzed messages go out as one request record per batch and wait
//          here for their verdicts; this process also runs a judge, which
//          decides for the whole group while it holds the judge topic.
//   none   (local_decider.cc): the passthrough baseline (ServiceOptions::
//          bypass_dedup): nothing is decided.
// Pipeline thread only (a Decider's methods run on it, some inside librdkafka
// callbacks served by its poll calls).

#include <chrono>
#include <cstddef>
#include <memory>

#include "stream/core/offset_ledger.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/dedup_worker.h"
#include "stream/service/service.h"

namespace neardup::stream {

/// The hooks a way of deciding has no use for do nothing by default.
class Decider {
 public:
  virtual ~Decider() = default;

  /// Whether the dedup worker holds a window and decides (else it only analyzes).
  virtual bool worker_decides() const = 0;
  /// Before the input is subscribed: the window rebuilt from the changelog, or
  /// the verdicts' reader opened and the judge started. False when a stop came
  /// first. Throws kafka::KafkaError.
  virtual bool start() = 0;
  /// Whether other instances' changelog entries wait for the worker's next slot.
  virtual bool has_remembered() const { return false; }
  /// Moves them into `slot.remember`.
  virtual void take_remembered(Slot& /*slot*/) {}
  /// The worker finished `slot`: its messages are routed now, or sent for judgement.
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
  /// A transaction committed: what was decided up to here is for good.
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

/// The deciders; `service` outlives them. `producer_properties`: the
/// service's producer's (the judge and its request producer start from them).
std::unique_ptr<Decider> make_local_decider(Service::Impl& service);
std::unique_ptr<Decider> make_group_decider(Service::Impl& service,
                                            const kafka::Properties& producer_properties);
std::unique_ptr<Decider> make_no_decider(Service::Impl& service);

/// Whether a delivery report's ticket is a record of the decider's own (a
/// changelog batch or a judge request), and whether it is a judge request.
bool is_decider_record(Ticket ticket);
bool is_request_delivery(Ticket ticket);
/// The delivery opaque of a story summary (stream/pipeline/story_writer.h).
void* summary_opaque();
bool is_summary_delivery(Ticket ticket);

}  // namespace neardup::stream
