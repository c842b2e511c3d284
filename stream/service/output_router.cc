#include "stream/service/output_router.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "stream/core/process.h"
#include "stream/records/json_out.h"

namespace neardup::stream {
namespace {

using kafka::KafkaError;

void* to_opaque(Ticket ticket) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(ticket.pack()));
}

/// Bytes the headers take on the wire, roughly (name, value and a few bytes of varints each).
std::size_t header_bytes(const kafka::Headers& headers) {
  std::size_t total = 0;
  headers.for_each([&](std::string_view name, std::string_view value) {
    total += name.size() + value.size() + 16;
  });
  return total;
}

std::int64_t timestamp_of(kafka::Message m) {
  const std::int64_t ts = m.timestamp();
  return ts > 0 ? ts : 0;
}

}  // namespace

std::size_t fitting_value_bytes(std::size_t max_record_bytes, std::size_t key_bytes,
                                std::size_t header_bytes) {
  const std::size_t taken = key_bytes + header_bytes + kRecordFraming;
  return taken < max_record_bytes ? max_record_bytes - taken : 0;
}

OutputRouter::OutputRouter(const config::Config& config, kafka::Producer& producer,
                           OffsetLedger& ledger, Sources& sources, ServiceSnapshot& stats,
                           RefusedRecords& refused, std::size_t max_record_bytes)
    : cfg_(config),
      producer_(producer),
      ledger_(ledger),
      sources_(sources),
      stats_(stats),
      refused_(refused),
      max_record_bytes_(max_record_bytes),
      sized_by_topics_(max_record_bytes < config::producer_message_max_bytes(config.kafka)) {}

int OutputRouter::partitions_of(const std::string& topic) {
  auto it = topic_partitions_.find(topic);
  if (it != topic_partitions_.end()) return it->second;
  int n = 0;
  try {
    n = producer_.partition_count(topic, std::chrono::seconds(10));
  } catch (const KafkaError& e) {
    log(config::LogLevel::warn,
        std::string("partition count unknown, choosing output partitions by key: ") + e.what());
    n = -1;
  }
  topic_partitions_.emplace(topic, n);
  return n;
}

std::int32_t OutputRouter::output_partition(const Source& src, const std::string& topic) {
  const int in = partitions_of(src.topic);
  const int out = partitions_of(topic);
  return (in > 0 && in == out) ? src.partition : kafka::kAnyPartition;
}

void OutputRouter::route(kafka::Message in, Ticket ticket, const dedup::Verdict& verdict,
                         std::string_view error, const Source* of) {
  if (std::optional<RefusedRecords::Refusal> refusal =
          refused_.take(ticket.source, Offset(in.offset()))) {
    // Judged again after its transaction aborted: straight to the dead letters.
    Letter letter = letter_for(in, ticket, in.offset(), std::move(refusal->reason),
                               max_record_bytes_ / 2, refusal->dead_letter_refused);
    if (verdict.kind == dedup::VerdictKind::invalid) ++stats_.invalid;
    send_letter(std::move(letter));
    return;
  }
  switch (verdict.kind) {
    case dedup::VerdictKind::invalid:
      ++stats_.invalid;
      dead_letter(in, ticket, error);
      return;
    case dedup::VerdictKind::unique:
      ++stats_.unique;
      forward(in, ticket);
      return;
    case dedup::VerdictKind::duplicate:
      break;
  }
  ++stats_.duplicate;
  if (verdict.match) {
    const auto d = static_cast<std::size_t>(verdict.match->distance);
    if (d < stats_.match_distance.size()) ++stats_.match_distance[d];
  }
  if (cfg_.action == config::Action::drop) {
    ++stats_.dropped;
    return;
  }
  duplicate(in, ticket, verdict, of);
}

void OutputRouter::forward(kafka::Message in, Ticket ticket) {
  const Source& src = sources_[ticket.source];
  send(cfg_.kafka.output_topic, output_partition(src, cfg_.kafka.output_topic), in,
       kafka::Headers::copy_of(in), ticket);
}

void OutputRouter::duplicate(kafka::Message in, Ticket ticket, const dedup::Verdict& verdict,
                             const Source* of) {
  kafka::Headers hdrs = kafka::Headers::copy_of(in);
  hdrs.add("neardup-verdict", "duplicate");
  if (verdict.match) {
    hdrs.add("neardup-of", of ? of->locate(ref_offset(verdict.match->of)) : std::string("unknown"));
    hdrs.add("neardup-distance", std::to_string(verdict.match->distance));
    if (verdict.similarity) {
      std::string similarity;
      append_similarity(similarity, *verdict.similarity);
      hdrs.add("neardup-similarity", similarity);
    }
    if (verdict.count > 0) hdrs.add("neardup-count", std::to_string(verdict.count));
  }
  hdrs.add("neardup-fingerprint", verdict.fingerprint.hex());
  const std::string& topic =
      cfg_.action == config::Action::tag ? cfg_.kafka.output_topic : cfg_.kafka.duplicates_topic;
  send(topic, output_partition(sources_[ticket.source], topic), in, std::move(hdrs), ticket);
}

void OutputRouter::send(const std::string& topic, std::int32_t partition, kafka::Message in,
                        kafka::Headers headers, Ticket ticket) {
  if (sized_by_topics_ &&
      in.payload().size() >
          fitting_value_bytes(max_record_bytes_, in.key().size(), header_bytes(headers))) {
    // Over a topic's max.message.bytes: the broker would refuse it and every
    // record batched with it.
    ++stats_.produce_errors;
    dead_letter(in, ticket,
                "output to '" + topic + "' rejected: larger than the topics' max.message.bytes (" +
                    std::to_string(max_record_bytes_) + ")");
    return;
  }
  kafka::Producer::Record rec;
  rec.topic = topic;
  rec.partition = partition;
  rec.has_key = in.has_key();
  rec.key = in.key();
  rec.has_value = in.has_payload();
  rec.value = in.payload();
  rec.timestamp_ms = timestamp_of(in);
  rec.opaque = to_opaque(ticket);
  ledger_.expect(ticket);
  const kafka::ErrorCode err = producer_.produce(rec, std::move(headers));  // (fatal errors throw)
  if (!err) return;
  ++stats_.produce_errors;
  ledger_.acknowledge(ticket);  // never produced; the dead letter below counts its own record
  if (refused_by_transaction(err)) return;
  // The record itself cannot be written (e.g. too large for the topic): it
  // goes to the dead-letter topic rather than vanishing.
  dead_letter(in, ticket,
              std::string("output to '") + topic + "' rejected: " + kafka::describe(err));
}

bool OutputRouter::refused_by_transaction(kafka::ErrorCode err) {
  // A record refused as a record goes to the dead letters in any case; one
  // refused for another reason may be its transaction's (delivery.h).
  if (kafka::classify(err) == kafka::Severity::message) return false;
  return refused_.refused_by_transaction(err);
}

void OutputRouter::dead_letter(kafka::Message in, Ticket ticket, std::string_view reason) {
  send_letter(letter_for(in, ticket, in.offset(), std::string(reason), max_record_bytes_, false));
}

OutputRouter::Letter OutputRouter::letter_for(kafka::Message m, Ticket ticket, std::int64_t offset,
                                              std::string reason, std::size_t record_limit,
                                              bool bare) const {
  Letter letter;
  letter.ticket = ticket;
  letter.offset = offset;
  letter.has_key = m.has_key();
  letter.key.assign(m.key());
  letter.has_value = m.has_payload();
  letter.original_size = m.payload().size();
  letter.timestamp_ms = timestamp_of(m);
  letter.reason = std::move(reason);
  letter.bare = bare;
  if (!bare) {
    letter.headers = kafka::Headers::copy_of(m);
    // The value is copied only as far as it can go out (neardup's headers included).
    const std::size_t fits = fitting_value_bytes(
        record_limit, letter.key.size(), header_bytes(letter.headers) + 256 + letter.reason.size());
    if (m.has_payload()) letter.value.assign(m.payload().substr(0, fits));
  }
  return letter;
}

void OutputRouter::send_letter(Letter letter) {
  const Source& src = sources_[letter.ticket.source];
  const std::string& topic = cfg_.kafka.dead_letter_topic;
  kafka::Headers hdrs = letter.bare ? kafka::Headers() : std::move(letter.headers);
  letter.headers = kafka::Headers();
  hdrs.add("neardup-error", letter.reason);
  hdrs.add("neardup-source", src.locate(letter.offset));
  const bool key_fits = !letter.bare && letter.key.size() + kRecordFraming < max_record_bytes_ / 2;
  std::string_view value = letter.bare ? std::string_view() : std::string_view(letter.value);
  const std::size_t fits = fitting_value_bytes(max_record_bytes_, key_fits ? letter.key.size() : 0,
                                               header_bytes(hdrs) + 128);
  if (value.size() > fits) value = value.substr(0, fits);
  const bool cut = letter.has_value && value.size() < letter.original_size;
  if (cut) {
    hdrs.add("neardup-original-size", std::to_string(letter.original_size));
    hdrs.add("neardup-truncated-to", std::to_string(value.size()));
    ++stats_.dead_letters_truncated;
  }
  kafka::Producer::Record rec;
  rec.topic = topic;
  rec.partition = output_partition(src, topic);
  rec.has_key = letter.has_key && key_fits;
  rec.key = rec.has_key ? std::string_view(letter.key) : std::string_view();
  rec.has_value = letter.has_value && !letter.bare;
  rec.value = value;
  rec.timestamp_ms = letter.timestamp_ms;
  rec.opaque = to_opaque(letter.ticket);
  ledger_.expect(letter.ticket);
  if (std::exchange(letter.replaces_output, false))
    ledger_.acknowledge(letter.ticket);  // (counted once)
  const kafka::ErrorCode err = producer_.produce(rec, std::move(hdrs));
  if (!err) return;
  ++stats_.produce_errors;
  ledger_.acknowledge(letter.ticket);
  if (refused_by_transaction(err)) return;
  if (letter.bare) {
    // Not even neardup's own headers go through: the topic is unusable. The
    // input's offset is never committed past (its ledger entry stays open).
    ledger_.expect(letter.ticket);
    throw KafkaError("cannot dead-letter " + src.locate(letter.offset) + ": '" + topic +
                         "' refuses even a record without value: " + kafka::describe(err),
                     err, kafka::Severity::fatal);
  }
  letter.bare = true;
  letter.reason += std::string("; dead letter rejected: ") + kafka::describe(err);
  send_letter(std::move(letter));
}

bool OutputRouter::on_delivery_error(kafka::Message report, Ticket ticket) {
  if (kafka::classify(report.error()) != kafka::Severity::message ||
      !sources_.contains(ticket.source))
    return false;
  const std::string topic(report.topic());
  const bool was_dead_letter = topic == cfg_.kafka.dead_letter_topic;
  if (was_dead_letter && !report.has_payload() && !report.has_key())
    return false;  // a bare dead letter refused: nothing smaller to send
  const std::optional<Offset> offset = ledger_.offset_of(ticket);
  if (!offset) return true;  // its partition was revoked: the next owner reads the input again
  if (refused_.keep(ticket.source, *offset, topic, was_dead_letter, report.error())) return true;
  // The broker's limit is below the producer's: half of ours, then bare.
  Letter letter =
      letter_for(report, ticket, offset->value,
                 (was_dead_letter ? std::string("dead letter") : "output to '" + topic + "'") +
                     " rejected by the broker: " + kafka::describe(report.error()),
                 max_record_bytes_ / 2, false);
  letter.replaces_output = true;
  if (was_dead_letter) {
    // Sent again bare (neardup's headers only), keeping the first attempt's reason and size.
    if (auto first = letter.headers.find("neardup-error"))
      letter.reason = std::string(*first) + "; " + letter.reason;
    if (auto size = letter.headers.find("neardup-original-size")) {
      std::from_chars(size->data(), size->data() + size->size(), letter.original_size);
    }
    letter.bare = true;
    letter.headers = kafka::Headers();
    letter.value.clear();
  }
  resends_.push_back(std::move(letter));
  return true;
}

void OutputRouter::resend() {
  while (!resends_.empty()) {
    std::vector<Letter> batch;
    batch.swap(resends_);
    for (Letter& letter : batch) send_letter(std::move(letter));
  }
}

}  // namespace neardup::stream
