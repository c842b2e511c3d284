#include "stream/service/service_impl.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

void Service::Impl::on_delivery(kafka::Message m) {
  const Ticket ticket =
      Ticket::unpack(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m.opaque())));
  if (is_decider_record(ticket)) {  // a changelog batch or a judge request
    if (m.error()) {
      ++stats.produce_errors;
      // A request is never in a transaction: nothing else would notice. A
      // changelog batch may be (delivery.h): then its transaction aborts.
      if (is_request_delivery(ticket) || delivery->failure_is_fatal(m.error(), true))
        note_delivery_fatal(m);
    }
    decider->on_delivery(ticket, !m.error());  // (a request's verdict acknowledges its messages)
    return;
  }
  if (m.error()) {
    ++stats.produce_errors;
    // A record the broker refuses as a record goes to the dead letters
    // (router->resend() after the poll); anything else is final after
    // librdkafka's own retries: never commit past it, stop, so a restart replays it.
    // (exactly-once: the transaction aborts; the delivery keeps a refused
    // record, so the messages judged again send it to the dead letters.)
    if (!router->on_delivery_error(m, ticket) && delivery->failure_is_fatal(m.error(), false)) {
      note_delivery_fatal(m);  // (a bare dead letter refused: a cluster fault, in either mode)
    }
    return;
  }
  ++stats.produced;
  if (m.topic() == cfg.kafka.dead_letter_topic) ++stats.dead_letters;
  acknowledge(ticket);
}

void Service::Impl::note_delivery_fatal(kafka::Message m) {
  if (!delivery_fatal.empty()) return;
  delivery_fatal =
      "cannot deliver to '" + std::string(m.topic()) + "': " + kafka::describe(m.error()) + " (" +
      std::string(kafka::to_string(kafka::classify(m.error()))) + " error after retries)";
}

void Service::Impl::acknowledge(Ticket ticket) {
  // The delivery report's own timestamp is the broker's (log append time
  // with some brokers), so the input's timestamp is kept in the ledger.
  if (auto ts = ledger.acknowledge(ticket)) stats.end_to_end.observe_ms(wall_ms() - *ts);
}

void Service::Impl::serve_deliveries(std::chrono::milliseconds timeout) {
  decider->serve();
  producer->poll(timeout);
  try {
    router->resend();
  } catch (const KafkaError& e) {
    if (delivery_fatal.empty()) delivery_fatal = e.what();
  }
}

void Service::Impl::drop_uncommitted() {
  if (inflight >= 0) {
    decider->wait_analyzed();
    slots[std::exchange(inflight, -1)].messages.clear();  // judged, never sent: read again
  }
  router->forget_resends();
  decider->forget();
}

void Service::Impl::hold_back_input() {
  const bool behind = decider->behind();
  const bool hold = behind || delivery->holds_input();
  // An eager assignment comes unpaused (on_rebalance resumed what it paused
  // before). Resuming a partition that was never paused is not harmless:
  // librdkafka restarts its fetch from the position the application last
  // saw, and what it had queued comes again.
  if (std::exchange(reapply_hold, false)) input_held = false;
  if (hold == input_held) return;
  kafka::TopicPartitions parts;
  if (consumer->assignment(parts) != kafka::errc::no_error) return;
  const kafka::ErrorCode err = hold ? consumer->pause(parts) : consumer->resume(parts);
  if (err) return;  // (tried again next iteration)
  input_held = hold;
}

bool Service::Impl::drain(std::chrono::milliseconds limit) {
  decider->flush();
  const auto deadline = Clock::now() + limit;
  while ((producer->in_flight() > 0 || router->has_resends()) && Clock::now() < deadline) {
    serve_deliveries(std::chrono::milliseconds(50));
  }
  serve_deliveries(std::chrono::milliseconds(0));
  return producer->in_flight() == 0;
}

}  // namespace neardup::stream
