// The group's way of deciding (decider.h): analyzed messages wait here for
// the group judge's verdicts (stream/judge/), then are routed in input order.
#include <chrono>
#include <cstring>
#include <map>

#include "stream/changelog/changelog_writer.h"
#include "stream/core/crash_points_testing.h"
#include "stream/core/process.h"
#include "stream/judge/judge.h"
#include "stream/kafka/client_properties.h"
#include "stream/pipeline/event_time.h"
#include "stream/records/judge_record.h"
#include "stream/service/decider.h"

namespace neardup::stream {

using kafka::KafkaError;
using Clock = std::chrono::steady_clock;

namespace {

/// The delivery opaque of a request record: the changelog's reserved source,
/// with this bit set in its sequence number.
constexpr std::uint64_t kRequestBit = std::uint64_t{1} << 47;
/// A request record closes once its entries reach this many bytes.
constexpr std::size_t kMaxRequestBytes = 512 * 1024;

/// The group judge's side of one instance. Its state is what waits for verdicts.
class GroupDecider final : public Decider {
 public:
  explicit GroupDecider(const DeciderContext& context);

  bool start(dedup::EngineStats& window_stats) override;
  void analyze(Slot& slot) override { worker->submit(slot); }
  void wait_analyzed() override { worker->wait(); }
  void decide(Slot& slot) override { send_for_judgement(slot); }
  bool waiting() const override { return !awaiting.empty(); }
  bool behind() override;
  void step(std::chrono::milliseconds timeout) override {
    poll_verdicts(timeout);
    raise_if_judge_failed();
  }
  void tick() override { resend_unanswered(); }
  bool settle(std::chrono::milliseconds limit) override { return await_verdicts(limit); }
  std::size_t unanswered() const override { return awaiting_messages; }
  void forget() override {
    awaiting.clear();
    awaiting_messages = 0;
  }
  void serve() override {
    if (request_producer) request_producer->poll(std::chrono::milliseconds(0));
  }
  void raise_if_failed() override { raise_if_judge_failed(); }
  void publish(ServiceSnapshot& stats, dedup::EngineStats& engine) override;
  void stop() override {
    if (judge) judge->stop();  // hands the judging over (what it judged is committed)
  }
  void crash() override;

 private:
  /// Messages sent for judgement, by request batch number, until their verdicts come.
  struct Awaiting {
    std::vector<kafka::MessagePtr> messages;
    std::vector<Prepared> prepared;
    std::vector<Outcome> outcomes;
    std::vector<SourceIndex> sources;
    std::vector<Ticket> tickets;
    std::int64_t sent_ms = 0;     // when the request was produced (verdict latency)
    Clock::time_point last_sent;  // when it was produced last (resend_unanswered)
    std::string request;          // the record value, for a resend
  };
  /// A request unanswered this long is sent again (a judge takeover takes the
  /// session timeout, 6 s by default, plus the window's rebuild).
  static constexpr std::chrono::seconds kResendAfter{15};
  /// Above this many messages waiting for verdicts, the input is not polled
  /// (a judge that is down or behind holds the instances back).
  static constexpr std::size_t kMaxAwaiting = 200'000;

  /// Checks the judge and verdict topics and starts reading verdicts from
  /// their current end (before the first request). Throws KafkaError.
  void start_verdicts();
  /// The analyzed slot's messages enter the ledger and go to the judge as
  /// request records of at most about kMaxRequestBytes (invalid ones wait with
  /// them, in order).
  void send_for_judgement(Slot& slot);
  /// An empty batch: a spare one (its vectors keep their capacity) or a new one.
  Awaiting take_batch();
  /// Keeps a concluded batch's vectors for a later one (up to a few batches).
  void recycle(Awaiting&& batch);
  /// Sends `batch`'s request (the one `requests` holds) as record `number`
  /// and waits for its verdict; concludes it at once when nothing in it needs one.
  void send_batch(Awaiting batch, std::uint64_t number);
  /// Produces request record `number` (a first send or a resend). Throws KafkaError.
  void send_request(std::uint64_t number, std::string_view value);
  /// The producer of judge requests: request_producer when set, else the service's.
  kafka::Producer& requests_out() { return request_producer ? *request_producer : c_.producer; }
  /// Reads verdicts (up to `timeout` for the first) and routes the messages they answer.
  void poll_verdicts(std::chrono::milliseconds timeout);
  /// Sends again the requests unanswered for kResendAfter; forgets those whose
  /// messages were all revoked since.
  void resend_unanswered();
  /// Waits until every message sent for judgement has its verdict (or `limit` passes).
  bool await_verdicts(std::chrono::milliseconds limit);
  /// Routes one answered batch (`answers` null: none needed, all invalid).
  void conclude(Awaiting& batch, const JudgeVerdicts* answers);
  void raise_if_judge_failed();

  const DeciderContext c_;
  /// exactly-once: judge requests go out through this idempotent producer,
  /// outside the transaction (the judge reads its topic read_committed, and
  /// the transaction commits only after the verdicts came back). Null
  /// otherwise: requests go through the service's producer.
  std::unique_ptr<kafka::Producer> request_producer;
  std::optional<JudgeOptions> judge_options;  // until start() starts the judge
  bool holds_empty_fetches = false;           // the brokers hold empty fetches (start_verdicts)
  std::unique_ptr<Judge> judge;               // this process's judge (active or standby)
  std::unique_ptr<kafka::Consumer> verdict_reader;  // the verdict topic, assigned, no group
  // The dead letters' reason for a message the judge refused as of another
  // fingerprint schema (outcomes view it: it lives as long as the decider).
  std::string foreign_schema_reason;
  JudgeRequestWriter requests;
  std::string verdict_key_of_mine;  // verdict_key(instance_id)
  bool held = false;                // behind(): too many messages wait for verdicts
  std::map<std::uint64_t, Awaiting> awaiting;
  std::size_t awaiting_messages = 0;  // messages in `awaiting`
  std::uint64_t next_request = 0;
  JudgeVerdicts verdicts_buffer;
  std::vector<kafka::MessagePtr> verdicts_polled;
  /// Concluded batches, emptied, whose vectors keep their capacity: the next
  /// batches are built in them, so a steady stream allocates nothing per batch.
  std::vector<Awaiting> spare_batches;
  std::uint64_t verdicts_corrupt_logged = 0;
  /// Decodes and analyzes each batch (the judge decides); last: its thread is
  /// joined before what it uses goes.
  std::unique_ptr<DedupWorker> worker;
};

GroupDecider::GroupDecider(const DeciderContext& context)
    : c_(context),
      foreign_schema_reason(
          "the group judge runs another fingerprint schema than this "
          "instance's " +
          dedup::fingerprint_schema(context.cfg.dedup).hex() +
          " (dedup options differ; the judge's log names them): every "
          "instance of a group needs the same dedup options"),
      requests(dedup::fingerprint_schema(context.cfg.dedup)) {
  const config::Config& cfg = c_.cfg;
  if (c_.transactional) {
    auto request_props = c_.producer_properties;
    request_props.erase("transactional.id");
    request_props.erase("transaction.timeout.ms");
    request_props.insert_or_assign("linger.ms", std::string("1"));  // a verdict is waited for
    request_producer = std::make_unique<kafka::Producer>(
        request_props, [this](kafka::Message m) { c_.sink.on_delivery(m); }, c_.broker_health);
  }
  JudgeOptions j;
  j.config = cfg;
  j.consumer_properties = c_.consumer_properties;
  j.producer_properties = c_.producer_properties;
  j.producer_properties.erase("transactional.id");
  j.exactly_once = c_.transactional;
  j.transactional_id = "neardup-" + cfg.kafka.group_id + "-judge";  // one for the whole group
  j.health = c_.broker_health;
  j.crash_points = &c_.crash_points;
  judge_options = std::move(j);  // started in start(), once the topics are checked
  c_.stats.judged_by_group = true;
  worker = std::make_unique<DedupWorker>(cfg, /*decides=*/false);  // (it analyzes only)
}

bool GroupDecider::start(dedup::EngineStats&) {
  c_.stats.window_ready = true;  // (the window is the judge's, rebuilt when it takes over)
  start_verdicts();
  judge_options->broker_holds_empty_fetches = holds_empty_fetches;
  judge = std::make_unique<Judge>(std::move(*judge_options));
  return true;
}

bool GroupDecider::behind() {
  const bool now_behind =
      held ? awaiting_messages > kMaxAwaiting / 2 : awaiting_messages > kMaxAwaiting;
  if (now_behind != held) {
    held = now_behind;
    log(config::LogLevel::warn,
        now_behind ? std::to_string(awaiting_messages) +
                         " messages wait for the judge's verdicts: input paused until half are "
                         "answered"
                   : "input resumed: the judge caught up");
  }
  return held;
}

void GroupDecider::publish(ServiceSnapshot& stats, dedup::EngineStats& engine) {
  if (!judge) return;
  const JudgeStats j = judge->stats();
  stats.judge_decisions = j.decisions;
  stats.judge_takeovers = j.takeovers;
  stats.judge_takeover_seconds = static_cast<double>(j.takeover_ns) * 1e-9;
  stats.judge_active = j.active;
  stats.judge_awaiting = awaiting_messages;
  stats.judge_waiting_seconds = awaiting.empty()
                                    ? 0.0
                                    : static_cast<double>(std::max<std::int64_t>(
                                          0, wall_ms() - awaiting.begin()->second.sent_ms)) /
                                          1000.0;
  stats.changelog_written = j.written;  // (the judge writes this group's changelog)
  stats.changelog_replayed = j.restored;
  stats.changelog_rebuild_read = j.restore_read;
  stats.changelog_corrupt = j.changelog_corrupt;
  stats.changelog_foreign_schema = j.changelog_foreign_schema;
  stats.judge_foreign_schema = j.foreign_schema;
  engine = j.engine;  // the group's window, when this process judges (else empty)
  stats.summarizing = !c_.cfg.kafka.summary_topic.empty();
  stats.stories = j.stories;
}

void GroupDecider::crash() {
  if (judge) {
    judge->simulate_crash();
    judge.reset();
  }
  if (request_producer) request_producer->purge();
}

}  // namespace

bool is_request_delivery(Ticket ticket) {
  return ticket.source == ChangelogWriter::kBatchSource && (ticket.seq & kRequestBit) != 0;
}

void GroupDecider::start_verdicts() {
  const std::chrono::milliseconds timeout(10000);
  for (const std::string* topic : {&c_.cfg.kafka.judge_topic, &c_.cfg.kafka.verdict_topic}) {
    int n = 0;
    try {
      n = c_.producer.partition_count(*topic, timeout);
    } catch (const KafkaError& e) {
      if (e.code() != kafka::errc::transport && e.code() != kafka::errc::timed_out &&
          e.code() != kafka::errc::all_brokers_down)
        throw;
      throw KafkaError("cannot reach the Kafka brokers " + c_.brokers + " within " +
                           std::to_string(timeout.count() / 1000) + " s (" + e.what() + ")",
                       e.code(), e.severity());
    }
    holds_empty_fetches = c_.producer.cluster_holds_empty_fetches();  // (known after metadata)
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
      throw KafkaError("topic '" + *topic + "' does not exist" + why, kafka::errc::fail,
                       kafka::Severity::fatal);
    throw TopicLayoutError("topic '" + *topic + "' has " + std::to_string(n) + " partitions" + why);
  }
  log(config::LogLevel::info,
      "judge and verdict consumers: a fetch waits up to " +
          awaited_fetch_wait_ms(holds_empty_fetches) + " ms for data (" +
          (holds_empty_fetches ? "the brokers answer it as soon as data arrives"
                               : "the brokers answer a fetch that finds nothing only when its "
                                 "wait ends, as librdkafka's mock cluster does") +
          ")");
  kafka::Properties props = c_.consumer_properties;
  props["group.id"] = c_.cfg.kafka.group_id + ".verdicts";  // never joined nor committed
  props.erase("group.instance.id");
  props["enable.auto.commit"] = "false";
  props["enable.partition.eof"] = "false";
  // (a std::string value: GCC 12 -Wrestrict, as in judge_state.cc)
  props.insert_or_assign("fetch.wait.max.ms", awaited_fetch_wait_ms(holds_empty_fetches));
  props["auto.offset.reset"] =
      "earliest";  // (a verdict topic trimmed or recreated: from its start)
  verdict_reader = std::make_unique<kafka::Consumer>(props, nullptr, c_.broker_health);
  const kafka::Consumer::Watermarks end =
      verdict_reader->query_watermarks(c_.cfg.kafka.verdict_topic, 0, timeout);
  if (end.error) {
    throw KafkaError("verdict topic '" + c_.cfg.kafka.verdict_topic +
                         "': cannot read its end offset: " + kafka::describe(end.error),
                     end.error, kafka::Severity::fatal);
  }
  // From the end as of now: every verdict for this process's requests comes later.
  kafka::TopicPartitions list(1);
  list.add(c_.cfg.kafka.verdict_topic, 0, end.high);
  if (const kafka::ErrorCode err = verdict_reader->assign(list)) {
    throw KafkaError(
        "verdict topic '" + c_.cfg.kafka.verdict_topic + "': assign: " + kafka::describe(err), err,
        kafka::Severity::fatal);
  }
  verdict_key_of_mine = verdict_key(c_.instance_id);
}

void GroupDecider::send_request(std::uint64_t number, std::string_view value) {
  kafka::Producer::Record rec;
  rec.topic = c_.cfg.kafka.judge_topic;
  rec.partition = 0;
  rec.value = value;
  rec.opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(
      Ticket{ChangelogWriter::kBatchSource, kRequestBit | (number & (kRequestBit - 1))}.pack()));
  if (const kafka::ErrorCode err = requests_out().produce(rec)) {
    // Its messages stay outstanding in the ledger: none of those offsets commits.
    throw KafkaError("cannot send to the judge topic '" + c_.cfg.kafka.judge_topic +
                         "': " + kafka::describe(err),
                     err, kafka::Severity::fatal);
  }
}

GroupDecider::Awaiting GroupDecider::take_batch() {
  if (spare_batches.empty()) return Awaiting{};
  Awaiting batch = std::move(spare_batches.back());
  spare_batches.pop_back();
  return batch;
}

void GroupDecider::recycle(Awaiting&& batch) {
  constexpr std::size_t kMaxSpare = 8;  // a few batches in flight at a time
  if (spare_batches.size() >= kMaxSpare) return;
  batch.messages.clear();
  batch.prepared.clear();
  batch.outcomes.clear();
  batch.sources.clear();
  batch.tickets.clear();
  batch.request.clear();
  spare_batches.push_back(std::move(batch));
}

void GroupDecider::send_for_judgement(Slot& slot) {
  const std::size_t n = slot.messages.size();
  Awaiting batch = take_batch();
  std::uint64_t number = next_request++;
  requests.start(c_.instance_id, number);
  for (std::size_t i = 0; i < n; ++i) {
    const kafka::Message m = slot.messages[i];
    const std::optional<Ticket> ticket = c_.sink.arrive(slot, i);
    if (!ticket) continue;
    const Job& job = slot.jobs[i];
    Outcome& outcome = slot.outcomes[i];
    if (outcome.to_judge) {
      const Source& src = c_.sources[job.source];
      requests.add(src.topic, src.partition, m.offset(), job.time, slot.prepared[i].analysis);
    }
    c_.ledger.expect(*ticket);  // its verdict, acknowledged when it came and was routed
    batch.messages.push_back(std::move(slot.messages[i]));
    batch.prepared.push_back(std::move(slot.prepared[i]));
    batch.outcomes.push_back(outcome);
    batch.sources.push_back(job.source);
    batch.tickets.push_back(*ticket);
    // A record stays well under the brokers' and librdkafka's message.max.bytes
    // (1 MB by default): short texts carry their shingle sets, up to ~600 bytes each.
    if (requests.bytes() >= kMaxRequestBytes && i + 1 < n) {
      send_batch(std::move(batch), number);
      batch = take_batch();
      number = next_request++;
      requests.start(c_.instance_id, number);
    }
  }
  slot.messages.clear();
  send_batch(std::move(batch), number);
}

void GroupDecider::send_batch(Awaiting batch, std::uint64_t number) {
  if (batch.messages.empty()) {
    recycle(std::move(batch));
    return;
  }
  if (requests.entries() == 0) {  // every one invalid: nothing to judge
    conclude(batch, nullptr);
    recycle(std::move(batch));
    return;
  }
  batch.request.assign(requests.finish());
  send_request(number, batch.request);
  c_.stats.judge_requests += 1;
  c_.stats.judge_request_bytes += batch.request.size();
  c_.stats.judge_request_entries += requests.entries();
  batch.sent_ms = wall_ms();
  batch.last_sent = Clock::now();
  awaiting_messages += batch.messages.size();
  awaiting.emplace(number, std::move(batch));
}

void GroupDecider::poll_verdicts(std::chrono::milliseconds timeout) {
  if (!verdict_reader) return;
  verdicts_polled.clear();
  verdict_reader->poll_batch(verdicts_polled, 1000,
                             awaiting.empty() ? std::chrono::milliseconds(0) : timeout);
  for (const kafka::Message m : verdicts_polled) {
    if (m.error()) {
      if (m.error() == kafka::errc::fatal)
        throw KafkaError("verdict reader: " + verdict_reader->fatal_reason(), m.error(),
                         kafka::Severity::fatal);
      continue;  // transient: librdkafka retries
    }
    if (m.key() != verdict_key_of_mine) continue;  // another instance's
    std::string error;
    if (!decode_judge_verdicts(m.payload(), verdicts_buffer, &error)) {
      if (verdicts_corrupt_logged++ < 10)
        log(config::LogLevel::warn,
            "verdict at offset " + std::to_string(m.offset()) + " skipped: " + error);
      continue;
    }
    auto it = awaiting.find(verdicts_buffer.batch);
    if (it == awaiting.end() || verdicts_buffer.instance != c_.instance_id)
      continue;  // answered already (a new judge repeats what its predecessor left uncommitted)
    Awaiting batch = std::move(it->second);
    awaiting.erase(it);
    awaiting_messages -= batch.messages.size();
    c_.stats.judge_round_trip.observe_ms(wall_ms() - batch.sent_ms);
    conclude(batch, &verdicts_buffer);
    recycle(std::move(batch));
  }
}

void GroupDecider::conclude(Awaiting& batch, const JudgeVerdicts* answers) {
  std::size_t next_answer = 0;
  for (std::size_t i = 0; i < batch.messages.size(); ++i) {
    const kafka::Message m = batch.messages[i];
    const Ticket ticket = batch.tickets[i];
    Outcome& outcome = batch.outcomes[i];
    const JudgeVerdictEntry* answer = nullptr;
    if (outcome.to_judge) {
      if (!answers || next_answer >= answers->entries.size()) {
        throw KafkaError("the judge answered request " + std::to_string(batch.tickets[i].seq) +
                             " with fewer verdicts than it asked for",
                         kafka::errc::fail, kafka::Severity::fatal);
      }
      answer = &answers->entries[next_answer++];
    }
    // Revoked (or revoked and assigned again) since it was sent: the partition's
    // next reader judges it again.
    if (!c_.sources[batch.sources[i]].assigned || !c_.ledger.offset_of(ticket)) continue;
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
        match.of = pack_ref(c_.sources.intern(answer->of->topic, answer->of->partition),
                            answer->of->offset);
        match.distance = answer->distance;
        match.time = answer->of_time;
        match.fingerprint = answer->of_fingerprint;
        v.match = match;
      }
      if (v.kind == dedup::VerdictKind::invalid)
        outcome.error = answer->foreign_schema ? std::string_view(foreign_schema_reason)
                                               : dedup::invalid_reason(batch.prepared[i].analysis);
    }
    c_.sink.decided(m, batch.sources[i], ticket, batch.prepared[i], outcome);
    c_.sink.acknowledge(ticket);  // the verdict itself
  }
}

void GroupDecider::resend_unanswered() {
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
      wanted = c_.sources[batch.sources[i]].assigned && c_.ledger.offset_of(batch.tickets[i]);
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
    ++c_.stats.judge_resends;
    if (c_.stats.judge_resends <= 10 || c_.stats.judge_resends % 1000 == 0) {
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

bool GroupDecider::await_verdicts(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!awaiting.empty() && Clock::now() < deadline) {
    raise_if_judge_failed();
    poll_verdicts(std::chrono::milliseconds(20));
    c_.sink.serve_deliveries(std::chrono::milliseconds(0));
  }
  return awaiting.empty();
}

void GroupDecider::raise_if_judge_failed() {
  if (!judge) return;
  if (judge->crashed()) throw SimulatedCrash{};
  if (std::string what = judge->fatal_error(); !what.empty())
    throw KafkaError(what, judge->fatal_code(), kafka::Severity::fatal);
}

std::unique_ptr<Decider> make_group_decider(const DeciderContext& context) {
  return std::make_unique<GroupDecider>(context);
}

}  // namespace neardup::stream
