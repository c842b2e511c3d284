#pragma once
// Appends the window changelog: every kept message's fingerprint entry, in
// batch records (stream/records/changelog_record.h) of at most kBatchMaxEntries entries or
// kBatchMaxBytes, sent at the end of every poll loop iteration or earlier when
// full. Each entry is one more outstanding output of its input message in the
// OffsetLedger, acknowledged when the batch record that carries it is.
//
// Pipeline thread only (produce, and delivery reports served by Producer::poll).

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "dedup/core/types.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/records/changelog_record.h"

namespace neardup::stream {

/// The changelog entry of a kept message; its sketch only when `options`
/// (the writer's dedup.sketch) are on and the text had shingles.
ChangelogRecord kept_entry(std::string_view topic, std::int32_t partition, std::int64_t offset,
                           dedup::EventTime time, dedup::Fingerprint fingerprint,
                           const dedup::SketchResult& sketch, const dedup::SketchOptions& options,
                           dedup::ScopeId scope);
/// The same, written over `out` (every field; its topic's buffer is reused),
/// for a writer that makes one entry after another without allocating.
void fill_kept_entry(ChangelogRecord& out, std::string_view topic, std::int32_t partition,
                     std::int64_t offset, dedup::EventTime time, dedup::Fingerprint fingerprint,
                     const dedup::SketchResult& sketch, const dedup::SketchOptions& options,
                     dedup::ScopeId scope);

/// The record that appends a taken batch to `topic`: keyed, stamped with the
/// batch's stamp. It views `topic` and the batch's buffers (valid until its next add()).
kafka::Producer::Record changelog_append(std::string_view topic,
                                         const ChangelogBatch::Encoded& encoded);

class ChangelogWriter {
 public:
  /// The source index of a delivery opaque that names a batch (its seq is the batch number).
  static constexpr SourceIndex kBatchSource{Ticket::kMaxSources};
  static constexpr std::size_t kBatchMaxEntries = 1000;
  static constexpr std::size_t kBatchMaxBytes =
      512 * 1024;  ///< well below Kafka's default 1 MB message.max.bytes

  ChangelogWriter(const config::Config& config, kafka::Producer& producer, OffsetLedger& ledger,
                  std::uint64_t instance);

  /// One kept message's entry. May flush. Throws kafka::KafkaError when the topic refuses the
  /// batch.
  void append(const Source& src, Ticket ticket, std::int64_t offset, dedup::EventTime time,
              dedup::Fingerprint fingerprint, const dedup::SketchResult& sketch,
              dedup::ScopeId scope);
  /// Produces the pending entries as one batch record (none: nothing).
  void flush();
  /// The delivery report of batch `number`: on success `acknowledge` is called
  /// once per entry with its input's ticket; returns how many entries were
  /// delivered (0 if none, or the batch is unknown).
  std::size_t on_delivery(std::uint64_t number, bool delivered,
                          const std::function<void(Ticket)>& acknowledge);

 private:
  const config::Config& cfg_;
  kafka::Producer& producer_;
  OffsetLedger& ledger_;
  ChangelogBatch batch_;               // the entries not yet produced
  ChangelogRecord entry_;              // the entry being appended (its buffers reused)
  std::vector<Ticket> batch_tickets_;  // their input messages
  std::unordered_map<std::uint64_t, std::vector<Ticket>> in_flight_;  // by batch number
  std::uint64_t next_batch_ = 0;
};

}  // namespace neardup::stream
