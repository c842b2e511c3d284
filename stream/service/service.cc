#include "stream/service/service_impl.h"

#include <algorithm>
#include <random>

#include "base/random_id.h"
#include "metrics/page/recent_pairs.h"
#include "stream/kafka/clients/broker_health.h"
#include "stream/kafka/clients/transaction.h"
#include "stream/service/service_testing.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

Service::Impl::~Impl() {
  // The consumer's close serves a last revoke, which must find every member
  // alive: close it here, first (a no-op when run() closed it already).
  abandoning = true;
  try {
    if (consumer) consumer->close();
  } catch (...) {
  }
}

Service::Impl::Impl(ServiceOptions opts, std::atomic<bool>& stop_flag)
    : options(std::move(opts)), cfg(options.config), stop(stop_flag) {
  // Every duplicate's SimHash distance, 0..64 bits (one the sketch stage found may exceed k).
  stats.match_distance.assign(65, 0);
  // The one place that chooses how outputs are delivered (delivery.h); the
  // clients are configured for it (a transactional producer, read_committed).
  const bool transactional =
      cfg.kafka.delivery == config::Delivery::exactly_once && !options.bypass_dedup;
  std::string transactional_id;
  if (transactional) {
    transactional_id = cfg.kafka.transactional_id.empty() ? default_transactional_id(cfg.kafka)
                                                          : cfg.kafka.transactional_id;
  }
  ServiceClientProperties clients =
      service_client_properties(options.brokers, cfg.kafka, transactional, transactional_id);
  consumer_properties = clients.consumer;
  producer_properties = clients.producer;
  const std::size_t record_limit = size_records_to_topics(cfg, producer_properties);
  instance_id = base::random_id();
  producer = std::make_unique<kafka::Producer>(
      producer_properties, [this](kafka::Message m) { on_delivery(m); }, options.broker_health);
  consumer = std::make_unique<kafka::Consumer>(
      consumer_properties,
      [this](bool assigned, const kafka::TopicPartitions& parts) { on_rebalance(assigned, parts); },
      options.broker_health);
  // The delivery reaches this loop only through its DeliveryLoop (this object).
  const DeliveryContext delivering{
      .producer = *producer,
      .consumer = *consumer,
      .sources = sources,
      .ledger = ledger,
      .stats = stats,
      .commit_offsets_after_transaction = options.commit_offsets_after_transaction,
      .crash_points = crash_points,
      .loop = *this};
  delivery = transactional ? make_exactly_once_delivery(delivering, std::move(transactional_id))
                           : make_at_least_once_delivery(delivering);
  router = std::make_unique<OutputRouter>(cfg, *producer, ledger, sources, stats, *delivery,
                                          record_limit);
  // The one place that chooses how verdicts are taken. The decider reaches
  // this loop only through its DecisionSink (this object).
  const DeciderContext context{.cfg = cfg,
                               .brokers = options.brokers,
                               .consumer_properties = consumer_properties,
                               .producer_properties = producer_properties,
                               .producer = *producer,
                               .transactional = delivery->transactional(),
                               .instance_id = instance_id,
                               .sources = sources,
                               .ledger = ledger,
                               .stats = stats,
                               .broker_health = options.broker_health,
                               .progress_interval = options.progress_interval,
                               .crash_points = crash_points,
                               .sink = *this};
  if (options.bypass_dedup) {
    decider = make_passthrough_decider(context);
  } else if (!cfg.kafka.judge_topic.empty()) {
    decider = make_group_decider(context);
  } else {
    decider = make_local_decider(context);
  }
}

void Service::Impl::crash_point(std::string_view point) {
  if (crash_points.crash_at(point)) throw SimulatedCrash{};
}

void Service::Impl::finish_inflight() {
  if (inflight < 0) return;
  Slot& slot = slots[inflight];
  inflight = -1;
  wait_worker(slot);
  decider->decide(slot);
}

void Service::Impl::wait_worker(const Slot& slot) {
  decider->wait_analyzed();
  engine_stats = slot.engine_stats;
}

void Service::Impl::submit(Slot& slot) {
  const std::size_t n = slot.messages.size();
  slot.jobs.resize(n);
  const std::int64_t now = wall_ms();
  for (std::size_t i = 0; i < n; ++i) {
    const kafka::Message m = slot.messages[i];
    Job& job = slot.jobs[i];
    job.decide = false;
    if (m.error()) continue;
    job.source = sources.intern(m.topic(), m.partition());
    job.decide = sources[job.source].assigned;
    const std::int64_t ts = m.timestamp();
    job.time = event_time_of(ts, now, cfg.dedup.window.max_future);
    if (job.time.ms < ts && future_timestamps++ < 10) {
      log(config::LogLevel::warn,
          std::string(m.topic()) + "/" + std::to_string(m.partition()) + "@" +
              std::to_string(m.offset()) + ": timestamp " + std::to_string(ts) +
              " is later than the clock plus window.max_future; judged at " +
              std::to_string(job.time.ms) + " (a clock far ahead would empty the window)" +
              (future_timestamps == 10 ? "; further ones are not logged" : ""));
    }
  }
  decider->analyze(slot);
}

std::optional<Ticket> Service::Impl::arrive(const Slot& slot, std::size_t i) {
  const kafka::Message m = slot.messages[i];
  const Job& job = slot.jobs[i];
  if (!m.error() && !job.decide) return std::nullopt;  // a partition not assigned when polled
  return arrive(m, job.source);
}

void Service::Impl::decided(kafka::Message in, SourceIndex index, Ticket ticket,
                            const Prepared& prepared, const Outcome& outcome) {
  sources[index].position = in.offset() + 1;
  route_verdict(in, index, ticket, &prepared, &outcome);
}

void Service::Impl::passed(kafka::Message in, SourceIndex index, Ticket ticket) {
  sources[index].position = in.offset() + 1;
  ++stats.passed;
  router->forward(in, ticket);
}

std::optional<Ticket> Service::Impl::arrive(kafka::Message in, SourceIndex index) {
  if (in.error()) {
    const auto severity = kafka::classify(in.error());
    const std::string what = "consumer: " + kafka::describe(in.error());
    if (in.error() == kafka::errc::fatal)
      throw KafkaError(what + ": " + consumer->fatal_reason(), consumer->fatal_code(), severity);
    log(config::LogLevel::warn,
        what);  // transient (broker down, topic not there yet): librdkafka retries
    return std::nullopt;
  }
  Source& src = sources[index];
  if (!src.assigned) return std::nullopt;  // fetched before a revoke; it will be read again
  if (src.first_read < 0) src.first_read = in.offset();
  ++stats.consumed;
  const OffsetLedger::Added added = ledger.add(index, Offset(in.offset()), in.timestamp());
  if (added.jumped_back) {
    log(config::LogLevel::warn,
        "input " + src.topic + " partition " + std::to_string(src.partition) +
            ": offsets went back from " + std::to_string(added.previous_offset.value) + " to " +
            std::to_string(in.offset()) +
            " (topic recreated, log truncated or offsets reset); judging on and "
            "committing the new offsets");
  }
  return added.ticket;
}

void Service::Impl::route_verdict(kafka::Message in, SourceIndex index, Ticket ticket,
                                  const Prepared* prepared, const Outcome* outcome) {
  const Source& src = sources[index];
  const dedup::Verdict& verdict = outcome->verdict;
  stats.processing_ns += outcome->spent_ns;
  stats.processing_seconds.observe(static_cast<double>(outcome->spent_ns) * 1e-9);
  if (verdict.kind != dedup::VerdictKind::invalid)  // an invalid text is never looked up
    stats.candidates_per_probe.observe(static_cast<double>(verdict.candidates));

  const Source* of = nullptr;
  if (verdict.kind == dedup::VerdictKind::duplicate && verdict.match) {
    const SourceIndex of_index = ref_source(verdict.match->of);
    if (sources.contains(of_index)) of = &sources[of_index];
  }
  if (options.on_verdict) {
    VerdictEvent event{src.topic, src.partition, in.offset(), prepared->text(), &verdict, {}, 0, 0};
    if (of) {
      event.of_topic = of->topic;
      event.of_partition = of->partition;
      event.of_offset = ref_offset(verdict.match->of);
    }
    options.on_verdict(event);
  }

  if (options.recent_pairs) note_for_page(src, index, in.offset(), prepared->text(), verdict, of);

  router->route(in, ticket, verdict, outcome->error, of);
}

void Service::Impl::note_for_page(const Source& src, SourceIndex index, std::int64_t offset,
                                  std::string_view text, const dedup::Verdict& verdict,
                                  const Source* of) {
  if (verdict.kind == dedup::VerdictKind::unique) {
    options.recent_pairs->kept(pack_ref(index, offset).value, text);
  } else if (of) {  // a duplicate (its original's source is known)
    metrics::DuplicateSeen seen;
    seen.original_key = verdict.match->of.value;
    seen.original = {of->topic, of->partition, ref_offset(verdict.match->of)};
    seen.duplicate = {src.topic, src.partition, offset};
    seen.duplicate_text = text;
    seen.distance = verdict.match->distance;
    seen.similarity = verdict.similarity;
    seen.count = verdict.count;  // the window's count (the judge's, when it decided)
    options.recent_pairs->duplicate(seen);
  }
}

void Service::Impl::fill_lag() {
  stats.consumer_lag.clear();
  for (const SourceIndex index : sources.indices()) {
    const Source& src = sources[index];
    if (!src.assigned) continue;
    const kafka::Consumer::Watermarks w = consumer->cached_watermarks(src.topic, src.partition);
    const std::int64_t lo = w.low, hi = w.high;
    if (w.error == kafka::errc::no_error && hi >= 0) {
      // A committed offset below the log start (trimmed by retention) resumes at the start.
      const std::int64_t committed = ledger.committed_offset(index).value;
      const std::int64_t pos =
          std::max(lo, src.position >= 0 ? src.position : (committed >= 0 ? committed : lo));
      stats.consumer_lag[{src.topic, src.partition}] = std::max<std::int64_t>(0, hi - pos);
    }
  }
}

void Service::Impl::publish() {
  decider->publish(stats, engine_stats);
  if (!options.on_progress) return;
  stats.engine = engine_stats;
  fill_lag();
  options.on_progress(stats);
}

void Service::Impl::raise_if_fatal() {
  if (producer->fatal())
    throw KafkaError("producer: " + producer->fatal_reason(), kafka::errc::fatal,
                     kafka::Severity::fatal);
  if (consumer->fatal())
    throw KafkaError("consumer: " + consumer->fatal_reason(), consumer->fatal_code(),
                     kafka::Severity::fatal);
  if (!delivery_fatal.empty())
    throw KafkaError(delivery_fatal, kafka::errc::fail, kafka::Severity::fatal);
  if (!rebalance_fatal.empty())
    throw KafkaError(rebalance_fatal, kafka::errc::fail, kafka::Severity::fatal);
  if (rebalance_exception) std::rethrow_exception(std::exchange(rebalance_exception, nullptr));
}

void Service::Impl::poll_and_decide() {
  // Double buffering: the worker analyzes and judges the batch just polled
  // while this thread produces the one before it. With a batch in flight the
  // poll does not wait, so a lone message is not held back.
  const int next = inflight == 0 ? 1 : 0;
  Slot& polled = slots[next];
  polled.messages.clear();
  hold_back_input();
  consumer->poll_batch(polled.messages, 2000,
                       std::chrono::milliseconds(inflight >= 0 || decider->waiting() ? 0 : 50));
  // (a revoke inside the poll may have finished the in-flight batch already)
  const int previous = inflight;
  if (previous >= 0) wait_worker(slots[previous]);
  inflight = -1;
  if (!polled.messages.empty() || decider->has_remembered()) {
    submit(polled);
    inflight = next;
  }
  if (previous >= 0) {
    crash_point("before-produce");
    decider->decide(slots[previous]);
    crash_point("produced");
  }
}

int Service::Impl::run() {
  try {
    publish();
    if (!decider->start(engine_stats)) {
      log(config::LogLevel::info, "stopped while rebuilding the window; nothing was consumed");
      publish();
      return 0;
    }
    delivery->start();
    warn_of_missing_topics();
    consumer->subscribe(cfg.kafka.input_topics);
    auto last_commit = Clock::now(), last_progress = Clock::now();
    const auto subscribed = Clock::now();
    bool said_waiting = false;
    while (!stop.load(std::memory_order_relaxed) && !stop_signalled()) {
      poll_and_decide();
      if (stats.assigned) said_waiting = true;  // (only the first assignment is explained)
      if (!said_waiting && Clock::now() - subscribed > std::chrono::seconds(5) &&
          (!options.broker_health || options.broker_health->snapshot().reachable)) {
        said_waiting = true;
        log(config::LogLevel::info, waiting_for_assignment());
      }
      decider->step(std::chrono::milliseconds(inflight >= 0 ? 0 : 5));
      serve_deliveries(std::chrono::milliseconds(0));
      raise_if_fatal();
      const auto now = Clock::now();
      if (now - last_commit >= options.commit_interval || delivery->commit_due()) {
        decider->tick();
        delivery->commit(false);
        last_commit = now;
      }
      if (now - last_progress >= options.progress_interval) {
        publish();
        last_progress = now;
      }
    }
    log(config::LogLevel::info, "stopping: flushing output and committing offsets");
    finish_inflight();  // every polled message of a still assigned partition is handled
    if (!decider->settle(options.shutdown_flush)) {
      log(config::LogLevel::warn,
          std::to_string(decider->unanswered()) +
              " message(s) unanswered by the judge at shutdown; they are not committed and "
              "will be read again");
    }
    delivery->commit_decided();
    const bool drained = drain(options.shutdown_flush);
    raise_if_fatal();
    delivery->commit(true);
    if (!drained) {
      log(config::LogLevel::warn,
          std::to_string(producer->in_flight()) +
              " output record(s) unacknowledged at shutdown; their input offsets are not "
              "committed and will be read again");
    }
    // Leaving the group revokes the partitions; the flush above had the
    // shutdown's time, so that revoke only commits what is acknowledged by now.
    revoke_drain = std::chrono::milliseconds(500);
    consumer->close();
    decider->stop();
    publish();
    return 0;
  } catch (const TopicLayoutError& e) {
    stop_after_fatal(e.what(), "cannot start");
    return Service::kTopicLayoutError;
  } catch (const KafkaError& e) {
    if (e.code() == kafka::errc::fenced_instance) {
      stop_after_fatal(fenced_instance_reason(e.what()), "cannot go on");
      return Service::kFencedInstance;
    }
    return stop_after_fatal(e.what());
  } catch (const SimulatedCrash&) {
    return crash();
  }
}

void Service::Impl::warn_of_missing_topics() {
  for (const std::string& topic : cfg.kafka.input_topics) {
    try {
      // (the consumer's metadata: a producer's may have the brokers create the topic)
      if (consumer->partition_count(topic, std::chrono::seconds(5)) > 0) continue;
    } catch (const KafkaError&) {
      continue;  // (unknown: the brokers' state shows elsewhere)
    }
    missing_inputs.push_back(topic);
    log(config::LogLevel::warn,
        "input topic '" + topic +
            "' does not exist: the group waits, with nothing of it to assign, until it is "
            "created (`neardup topics create --config FILE` creates every topic a "
            "configuration uses)");
  }
  std::vector<const std::string*> outputs{&cfg.kafka.output_topic, &cfg.kafka.dead_letter_topic};
  if (cfg.action == config::Action::route) outputs.push_back(&cfg.kafka.duplicates_topic);
  for (const std::string* topic : outputs) {
    if (topic->empty()) continue;
    try {
      if (producer->partition_count(*topic, std::chrono::seconds(5)) > 0) continue;
    } catch (const KafkaError&) {
      continue;  // (unknown: the brokers' state shows elsewhere)
    }
    log(config::LogLevel::warn,
        "topic '" + *topic +
            "' does not exist: records to it fail, and stop the service, unless the cluster "
            "creates topics on first use (`neardup topics create --config FILE` creates every "
            "topic a configuration uses)");
  }
}

std::string Service::Impl::waiting_for_assignment() const {
  auto property = [&](const char* name, const char* otherwise) {
    const auto it = consumer_properties.find(name);
    return std::string(name) + ": " +
           (it != consumer_properties.end() ? it->second + " ms" : std::string(otherwise));
  };
  const std::string session = property("session.timeout.ms", "45 s");
  const std::string head = "no partitions assigned yet: group '" + cfg.kafka.group_id + "' ";
  if (!missing_inputs.empty()) {
    std::string names;
    for (const std::string& t : missing_inputs) names += (names.empty() ? "'" : ", '") + t + "'";
    return head + "has no input partitions: input topic(s) " + names +
           " did not exist at start (kafka.input_topics); create them";
  }
  if (consumer_properties.contains("group.instance.id")) {
    return head +
           "is rebalancing, or a static member that stopped (kafka.instance_id) still holds "
           "its partitions: they wait for it to come back until its session times out (" +
           session + ")";
  }
  return head +
         "is rebalancing: the group waits for a member that died until its session times out "
         "(" +
         session + "), and for the members of a rebalance to rejoin until the rebalance timeout (" +
         property("max.poll.interval.ms", "300 s") +
         "); each restart of a member may start another such wait, so an instance that crashes "
         "and restarts in a loop can keep the whole group unassigned. Set kafka.instance_id "
         "(static membership, docs/KAFKA.md) so that a restarted instance takes its "
         "partitions back without a rebalance";
}

std::string Service::Impl::fenced_instance_reason(const std::string& what) const {
  const auto it = consumer_properties.find("group.instance.id");
  const std::string id = it != consumer_properties.end() ? it->second : cfg.kafka.instance_id;
  return "another instance uses kafka.instance_id '" + id + "' in group '" + cfg.kafka.group_id +
         "': the group coordinator fenced this one (" + what +
         "). Each instance needs its own kafka.instance_id, stable across its restarts; this one "
         "stops with exit status 2, since a restart would only fence the other";
}

int Service::Impl::crash() {
  log(config::LogLevel::warn, "simulated crash: stopping without flushing, committing or aborting");
  abandoning = true;
  try {
    if (inflight >= 0) decider->wait_analyzed();
  } catch (...) {
  }
  inflight = -1;
  decider->crash();
  producer->purge();
  try {
    consumer->close();  // (a real crash would leave the group only at the session timeout)
  } catch (...) {
  }
  return kSimulatedCrash;
}

int Service::Impl::stop_after_fatal(const std::string& what, std::string_view headline) {
  fatal_error = what;
  log(config::LogLevel::error, std::string(headline) + ": " + what);
  try {
    // The worker's batch is dropped (its offsets are not committed); wait
    // for it only so that its counters are final.
    if (inflight >= 0) wait_worker(slots[std::exchange(inflight, -1)]);
  } catch (...) {
  }
  try {
    delivery->abandon();
  } catch (...) {
  }
  abandoning = true;
  try {
    consumer->close();  // leaves the group now (its revoke produces and commits nothing)
  } catch (...) {
  }
  publish();
  return 1;
}

Service::Service(ServiceOptions options) {
  if (options.brokers.empty() && options.config.kafka.brokers)
    options.brokers = *options.config.kafka.brokers;
  if (options.brokers.empty())
    throw std::invalid_argument("no Kafka brokers given (kafka.brokers or --brokers)");
  if (options.config.kafka.input_topics.empty())
    throw std::invalid_argument("kafka.input_topics is empty");
  impl_ = std::make_unique<Impl>(std::move(options), stop_);
}

Service::~Service() = default;

void ServiceTesting::set_crash_points(Service& service, std::shared_ptr<const CrashPoints> points) {
  service.impl_->crash_points.set(std::move(points));
}

int Service::run() { return impl_->run(); }
const std::string& Service::fatal_error() const { return impl_->fatal_error; }
ServiceSnapshot Service::snapshot() const {
  ServiceSnapshot s = impl_->stats;
  s.engine = impl_->engine_stats;
  return s;
}

}  // namespace neardup::stream
