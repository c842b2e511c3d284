#include "stream/changelog/changelog_writer.h"

namespace neardup::stream {

void fill_kept_entry(ChangelogRecord& r, std::string_view topic, std::int32_t partition,
                     std::int64_t offset, dedup::EventTime time, dedup::Fingerprint fingerprint,
                     const dedup::SketchResult& sketch, const dedup::SketchOptions& options,
                     dedup::ScopeId scope) {
  std::string reused = std::move(r.topic);
  r = ChangelogRecord{};
  r.topic = std::move(reused);
  r.topic.assign(topic);
  r.scope = scope;
  r.fingerprint = fingerprint;
  r.time = time;
  r.partition = partition;
  r.offset = offset;
  if (options.enabled && sketch.shingles != 0) {
    r.has_sketch = true;
    r.bits = options.bits;
    r.band_bins = options.band_bins;
    r.scheme = dedup::kSketchScheme;
    r.bands = options.bands;
    r.sketch = sketch;
  }
}

ChangelogRecord kept_entry(std::string_view topic, std::int32_t partition, std::int64_t offset,
                           dedup::EventTime time, dedup::Fingerprint fingerprint,
                           const dedup::SketchResult& sketch, const dedup::SketchOptions& options,
                           dedup::ScopeId scope) {
  ChangelogRecord r;
  fill_kept_entry(r, topic, partition, offset, time, fingerprint, sketch, options, scope);
  return r;
}

ChangelogWriter::ChangelogWriter(const config::Config& config, kafka::Producer& producer,
                                 OffsetLedger& ledger, std::uint64_t instance)
    : cfg_(config),
      producer_(producer),
      ledger_(ledger),
      batch_(instance, dedup::fingerprint_schema(config.dedup)) {}

void ChangelogWriter::append(const Source& src, Ticket ticket, std::int64_t offset,
                             dedup::EventTime time, dedup::Fingerprint fingerprint,
                             const dedup::SketchResult& sketch, dedup::ScopeId scope) {
  fill_kept_entry(entry_, src.topic, src.partition, offset, time, fingerprint, sketch,
                  cfg_.dedup.sketch, scope);
  batch_.add(entry_);
  batch_tickets_.push_back(ticket);
  ledger_.expect(ticket);
  if (batch_.entries() >= kBatchMaxEntries || batch_.bytes() >= kBatchMaxBytes) flush();
}

kafka::Producer::Record changelog_append(std::string_view topic,
                                         const ChangelogBatch::Encoded& encoded) {
  kafka::Producer::Record rec;
  rec.topic = topic;
  rec.key = encoded.key;
  rec.has_key = true;
  rec.value = encoded.value;
  rec.timestamp_ms = encoded.stamp.ms > 0 ? encoded.stamp.ms : 0;
  return rec;
}

void ChangelogWriter::flush() {
  if (batch_.empty()) return;
  ChangelogBatch::Encoded encoded = batch_.take();
  const std::uint64_t number = next_batch_++;
  kafka::Producer::Record rec = changelog_append(cfg_.kafka.changelog_topic, encoded);
  rec.opaque =
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(Ticket{kBatchSource, number}.pack()));
  in_flight_.emplace(number, std::move(batch_tickets_));
  batch_tickets_ = {};
  if (const kafka::ErrorCode err = producer_.produce(rec)) {
    // Its entries stay outstanding in the ledger: none of those offsets commits.
    in_flight_.erase(number);
    throw kafka::KafkaError("cannot append to the window changelog '" + cfg_.kafka.changelog_topic +
                                "': " + kafka::describe(err),
                            err, kafka::Severity::fatal);
  }
}

std::size_t ChangelogWriter::on_delivery(std::uint64_t number, bool delivered,
                                         const std::function<void(Ticket)>& acknowledge) {
  auto it = in_flight_.find(number);
  if (it == in_flight_.end()) return 0;
  const std::size_t n = it->second.size();
  if (delivered) {
    for (Ticket t : it->second) acknowledge(t);
  }
  in_flight_.erase(it);
  return delivered ? n : 0;
}

}  // namespace neardup::stream
