// The instance's side of consistent scale-out (stream/judge.h): analyzed
// messages wait here for the group judge's verdicts, then are routed in
// input order.
#include "stream/service/service_impl.h"

namespace neardup::stream {

using namespace service_detail;
using kafka::KafkaError;

namespace {

/// The delivery opaque of a request record: the changelog's reserved source,
/// with this bit set in its sequence number.
constexpr std::uint64_t kRequestBit = std::uint64_t{1} << 47;

}  // namespace

bool is_request_delivery(Ticket ticket) {
  return ticket.source == ChangelogWriter::kBatchSource && (ticket.seq & kRequestBit) != 0;
}

void Service::Impl::start_verdicts() {
  const std::chrono::milliseconds timeout(10000);
  for (const std::string* topic : {&cfg.kafka.judge_topic, &cfg.kafka.verdict_topic}) {
    int n = 0;
    try {
      n = kafka::partition_count(producer->handle(), *topic, timeout);
    } catch (const KafkaError& e) {
      if (e.code() != RD_KAFKA_RESP_ERR__TRANSPORT && e.code() != RD_KAFKA_RESP_ERR__TIMED_OUT &&
          e.code() != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        throw;
      throw KafkaError("cannot reach the Kafka brokers " + options.brokers + " within " +
                           std::to_string(timeout.count() / 1000) + " s (" + e.what() + ")",
                       e.code(), e.severity());
    }
    if (n == 1) continue;
    const std::string why =
        ": the judge and verdict topics (kafka.judge_topic, kafka.verdict_topic) need "
        "exactly one partition each (docs/KAFKA.md \"Several instances\"); or set "
        "kafka.judge_topic: \"\" to let every instance judge its own messages. Create them "
        "before the group's first instance starts: a broker that creates a topic on first "
        "use gives it its default partition count (`neardup topics create --config FILE` "
        "creates every topic a configuration uses; on the embedded broker, `neardup broker "
        "--groups G`)";
    // Missing: it may be being created (a restart may find it). More than one
    // partition: only a person can fix that (exit 2, as a configuration error).
    if (n == 0)
      throw KafkaError("topic '" + *topic + "' does not exist" + why, RD_KAFKA_RESP_ERR__FAIL,
                       kafka::Severity::fatal);
    throw TopicLayoutError("topic '" + *topic + "' has " + std::to_string(n) + " partitions" + why);
  }
  kafka::Properties props = consumer_properties;
  props["group.id"] = cfg.kafka.group_id + ".verdicts";  // never joined nor committed
  props["enable.auto.commit"] = "false";
  props["enable.partition.eof"] = "false";
  props.insert_or_assign("fetch.wait.max.ms",
                         std::string("5"));  // (GCC 12 -Wrestrict, as in judge.cc)
  props["auto.offset.reset"] =
      "earliest";  // (a verdict topic trimmed or recreated: from its start)
  verdict_reader = std::make_unique<kafka::Consumer>(props, nullptr, options.broker_health);
  std::int64_t low = 0, high = 0;
  if (const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
          verdict_reader->handle(), cfg.kafka.verdict_topic.c_str(), 0, &low, &high,
          static_cast<int>(timeout.count()))) {
    throw KafkaError("verdict topic '" + cfg.kafka.verdict_topic +
                         "': cannot read its end offset: " + rd_kafka_err2str(err),
                     err, kafka::Severity::fatal);
  }
  // From the end as of now: every verdict for this process's requests comes later.
  kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), cfg.kafka.verdict_topic.c_str(), 0)->offset = high;
  if (const rd_kafka_resp_err_t err = rd_kafka_assign(verdict_reader->handle(), list.get())) {
    throw KafkaError(
        "verdict topic '" + cfg.kafka.verdict_topic + "': assign: " + rd_kafka_err2str(err), err,
        kafka::Severity::fatal);
  }
  verdict_key_of_mine = verdict_key(instance_id);
}

void Service::Impl::send_request(std::uint64_t number, std::string_view value) {
  kafka::Producer::Record rec;
  rec.topic = cfg.kafka.judge_topic;
  rec.partition = 0;
  rec.value = value;
  rec.opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(
      Ticket{ChangelogWriter::kBatchSource, kRequestBit | (number & (kRequestBit - 1))}.pack()));
  if (const rd_kafka_resp_err_t err = requests_out().produce(rec)) {
    // Its messages stay outstanding in the ledger: none of those offsets commits.
    throw KafkaError(
        "cannot send to the judge topic '" + cfg.kafka.judge_topic + "': " + rd_kafka_err2str(err),
        err, kafka::Severity::fatal);
  }
}

void Service::Impl::send_for_judgement(Slot& slot) {
  const std::size_t n = slot.messages.size();
  Awaiting batch;
  const std::uint64_t number = next_request++;
  requests.start(instance_id, number);
  for (std::size_t i = 0; i < n; ++i) {
    const rd_kafka_message_t& m = *slot.messages[i];
    const Job& job = slot.jobs[i];
    if (!m.err && !job.judge) continue;  // a partition not assigned when polled
    const std::optional<Ticket> ticket = arrive(m, job.source);
    if (!ticket) continue;
    Outcome& outcome = slot.outcomes[i];
    if (outcome.to_judge) {
      const Source& src = sources[job.source];
      requests.add(src.topic, src.partition, m.offset, job.time, slot.prepared[i].analysis);
    }
    ledger.expect(*ticket);  // its verdict, acknowledged when it came and was routed
    batch.messages.push_back(std::move(slot.messages[i]));
    batch.prepared.push_back(std::move(slot.prepared[i]));
    batch.outcomes.push_back(outcome);
    batch.sources.push_back(job.source);
    batch.tickets.push_back(*ticket);
    batch.times.push_back(job.time);
  }
  slot.messages.clear();
  if (batch.messages.empty()) return;
  if (requests.entries() == 0) {  // every one invalid: nothing to judge
    conclude(batch, nullptr);
    return;
  }
  batch.request.assign(requests.finish());
  send_request(number, batch.request);
  stats.judge_requests += 1;
  stats.judge_request_bytes += batch.request.size();
  stats.judge_request_entries += requests.entries();
  batch.sent_ms = wall_ms();
  batch.last_sent = Clock::now();
  awaiting_messages += batch.messages.size();
  awaiting.emplace(number, std::move(batch));
}

void Service::Impl::poll_verdicts(std::chrono::milliseconds timeout) {
  if (!verdict_reader) return;
  verdicts_polled.clear();
  verdict_reader->poll_batch(verdicts_polled, 1000,
                             awaiting.empty() ? std::chrono::milliseconds(0) : timeout);
  for (const kafka::MessagePtr& m : verdicts_polled) {
    if (m->err) {
      if (m->err == RD_KAFKA_RESP_ERR__FATAL)
        throw KafkaError("verdict reader: " + verdict_reader->fatal_reason(), m->err,
                         kafka::Severity::fatal);
      continue;  // transient: librdkafka retries
    }
    if (m->key_len != verdict_key_of_mine.size() ||
        std::memcmp(m->key, verdict_key_of_mine.data(), m->key_len) != 0)
      continue;  // another instance's
    std::string error;
    const std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
    if (!decode_judge_verdicts(value, verdicts_buffer, &error)) {
      if (verdicts_corrupt_logged++ < 10)
        log(config::LogLevel::warn,
            "verdict at offset " + std::to_string(m->offset) + " skipped: " + error);
      continue;
    }
    auto it = awaiting.find(verdicts_buffer.batch);
    if (it == awaiting.end() || verdicts_buffer.instance != instance_id)
      continue;  // answered already (a new judge repeats what its predecessor left uncommitted)
    Awaiting batch = std::move(it->second);
    awaiting.erase(it);
    awaiting_messages -= batch.messages.size();
    stats.judge_round_trip.observe_ms(wall_ms() - batch.sent_ms);
    conclude(batch, &verdicts_buffer);
  }
}

void Service::Impl::conclude(Awaiting& batch, const JudgeVerdicts* answers) {
  std::size_t next_answer = 0;
  for (std::size_t i = 0; i < batch.messages.size(); ++i) {
    const rd_kafka_message_t& m = *batch.messages[i];
    const Ticket ticket = batch.tickets[i];
    Outcome& outcome = batch.outcomes[i];
    const JudgeVerdictEntry* answer = nullptr;
    if (outcome.to_judge) {
      if (!answers || next_answer >= answers->entries.size()) {
        throw KafkaError("the judge answered request " + std::to_string(batch.tickets[i].seq) +
                             " with fewer verdicts than it asked for",
                         RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
      }
      answer = &answers->entries[next_answer++];
    }
    // Revoked (or revoked and assigned again) since it was sent: the partition's
    // next reader judges it again.
    if (!sources[batch.sources[i]].assigned || !ledger.offset_of(ticket)) continue;
    if (answer) {
      dedup::Verdict& v = outcome.verdict;
      v = dedup::Verdict{};
      v.kind = answer->kind;
      v.fingerprint = answer->fingerprint;
      v.features = answer->features;
      v.candidates = answer->candidates;
      v.similarity = answer->similarity;
      v.count = answer->count;
      if (answer->of) {
        dedup::Match match;
        match.of =
            pack_ref(sources.intern(answer->of->topic, answer->of->partition), answer->of->offset);
        match.distance = answer->distance;
        match.time = answer->of_time;
        match.fingerprint = answer->of_fingerprint;
        v.match = match;
      }
      if (v.kind == dedup::VerdictKind::invalid)
        outcome.error = dedup::invalid_reason(batch.prepared[i].analysis);
    }
    sources[batch.sources[i]].position = m.offset + 1;
    route_verdict(m, batch.sources[i], ticket, &batch.prepared[i], &outcome, batch.times[i]);
    acknowledge(ticket);  // the verdict itself
  }
}

void Service::Impl::resend_unanswered() {
  const auto now = Clock::now();
  for (auto it = awaiting.begin(); it != awaiting.end();) {
    Awaiting& batch = it->second;
    if (now - batch.last_sent < kResendAfter) {
      ++it;
      continue;
    }
    // Revoked since: the partitions' next reader judges them again; nothing to wait for.
    bool wanted = false;
    for (std::size_t i = 0; i < batch.tickets.size() && !wanted; ++i)
      wanted = sources[batch.sources[i]].assigned && ledger.offset_of(batch.tickets[i]);
    if (!wanted) {
      awaiting_messages -= batch.messages.size();
      it = awaiting.erase(it);
      continue;
    }
    // Lost (a judge topic trimmed or recreated, a broker restarted empty) or a
    // judge that is slow to take over: the same request again. A verdict given
    // twice is the same verdict, and the second is ignored.
    send_request(it->first, batch.request);
    batch.last_sent = now;
    ++stats.judge_resends;
    if (stats.judge_resends <= 10 || stats.judge_resends % 1000 == 0) {
      log(config::LogLevel::warn,
          "no verdict for judge request " + std::to_string(it->first) + " after " +
              std::to_string(kResendAfter.count()) + " s (" +
              std::to_string(batch.messages.size()) +
              " messages waiting); sent it again (is an instance of the group judging? "
              "see neardup_judge_active)");
    }
    ++it;
  }
}

bool Service::Impl::await_verdicts(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!awaiting.empty() && Clock::now() < deadline) {
    raise_if_judge_failed();
    poll_verdicts(std::chrono::milliseconds(20));
    serve_deliveries(std::chrono::milliseconds(0));
  }
  return awaiting.empty();
}

void Service::Impl::raise_if_judge_failed() {
  if (!judge) return;
  if (judge->crashed()) throw SimulatedCrash{};
  if (std::string what = judge->fatal_error(); !what.empty())
    throw KafkaError(what, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
}

}  // namespace neardup::stream
