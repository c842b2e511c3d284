#pragma once
// Where each judged input goes, and with which headers: unique messages to the
// output topic, duplicates dropped, tagged or routed, invalid ones (and any
// record a topic refuses) to the dead-letter topic. Each record it produces is
// one more outstanding output of its input in the OffsetLedger.
//
// No single message can stop the service: a record that the producer or the
// broker refuses as a record (too large, invalid) goes to the dead-letter
// topic instead, cut to fit `max_record_bytes` when it must be (headers
// neardup-original-size and neardup-truncated-to say so; neardup-source names
// topic/partition/offset, so anyone can fetch the original). If the dead-letter
// topic refuses even that, a record of neardup's headers alone is sent. Only a
// fault of the cluster (authorization, a missing topic, a fenced producer)
// stops the service, as a fatal kafka::KafkaError.
//
// Pipeline thread only: produce, and the delivery reports served by
// Producer::poll on that thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "dedup/core/types.h"
#include "stream/core/offset_ledger.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {

/// The bytes a record may take besides its value and key: record framing.
inline constexpr std::size_t kRecordFraming = 512;

/// What fits of `value` in a record of at most `max_record_bytes` with this key
/// and these header bytes (0 when not even the headers fit). Pure.
std::size_t fitting_value_bytes(std::size_t max_record_bytes, std::size_t key_bytes,
                                std::size_t header_bytes);

/// What becomes of a record refused for good, which depends on how outputs are
/// delivered (delivery.h implements it). at-least-once: it goes to the dead
/// letters at once. exactly-once: a refused record fails its whole transaction,
/// so nothing is resent into it; instead the refusal is kept by input, and
/// when the aborted messages are judged again, that input goes to the dead
/// letters (cut to half the limit; bare if the dead letter was refused too).
class RefusedRecords {
 public:
  struct Refusal {
    std::string reason;
    bool dead_letter_refused = false;
  };
  /// The producer refused a record with `err`, an error not of the record's
  /// own (kafka::classify: not message-level). True when that fails the
  /// record's transaction (noted: it must abort) and no dead letter is to be
  /// sent; false: the record goes to the dead letters.
  virtual bool refused_by_transaction(kafka::ErrorCode err) = 0;
  /// The broker refused, as a record, an output of the input at (`source`,
  /// `offset`) to `topic` (`was_dead_letter`: a dead letter of it). True when
  /// the refusal is kept for that input's next judgement (take() returns
  /// it); false: the router resends it to the dead letters now.
  virtual bool keep(SourceIndex source, Offset offset, std::string_view topic, bool was_dead_letter,
                    kafka::ErrorCode err) = 0;
  /// The refusal kept for the input at (`source`, `offset`), removed; nullopt
  /// if none. Asked for every routed message.
  virtual std::optional<Refusal> take(SourceIndex source, Offset offset) = 0;

  virtual ~RefusedRecords() = default;
};

class OutputRouter {
 public:
  /// `max_record_bytes`: the producer's message.max.bytes, or the topics'
  /// max.message.bytes when that is smaller (then a record over it goes to the
  /// dead letters without being produced). The references must outlive the router.
  OutputRouter(const config::Config& config, kafka::Producer& producer, OffsetLedger& ledger,
               Sources& sources, ServiceSnapshot& stats, RefusedRecords& refused,
               std::size_t max_record_bytes);

  /// Sends a judged input by its verdict and the configured action, counting
  /// it in the snapshot (unique, duplicate by distance, dropped, invalid).
  void route(kafka::Message in, Ticket ticket, const dedup::Verdict& verdict,
             std::string_view error, const Source* of);
  /// A unique message (or any, passed through undecided): to the output topic, its headers kept.
  void forward(kafka::Message in, Ticket ticket);
  /// A near-duplicate of `of` (null if its source is unknown) by the configured action.
  void duplicate(kafka::Message in, Ticket ticket, const dedup::Verdict& verdict, const Source* of);
  /// An input that cannot be judged: to the dead-letter topic with `reason`.
  void dead_letter(kafka::Message in, Ticket ticket, std::string_view reason);

  /// A delivery report with an error for a record of `ticket`. A record-level
  /// refusal is queued for the dead-letter topic (the input's output stays
  /// outstanding; resend() produces it) and true is returned; false for any
  /// other error (the caller stops). Called inside Producer::poll.
  bool on_delivery_error(kafka::Message report, Ticket ticket);
  /// Produces what on_delivery_error() queued. Call after Producer::poll, not inside it.
  void resend();
  /// Drops queued resends (their transaction was aborted).
  void forget_resends() { resends_.clear(); }
  bool has_resends() const { return !resends_.empty(); }

  /// The input's partition on `topic` when it has as many partitions as the
  /// input's topic, else "any" (by key).
  std::int32_t output_partition(const Source& src, const std::string& topic);

 private:
  /// A dead letter in the making: the record's parts and what neardup adds.
  struct Letter {
    Ticket ticket;
    std::int64_t offset = 0;
    bool has_key = false;
    std::string key;
    bool has_value = false;
    std::string value;
    kafka::Headers headers;  ///< the input's own headers (none: empty)
    std::int64_t timestamp_ms = 0;
    std::string reason;
    std::size_t original_size = 0;  ///< of the input's value
    bool bare = false;              ///< neardup's headers only
    bool replaces_output = false;   ///< stands in for a refused output still counted in the ledger
  };

  void send(const std::string& topic, std::int32_t partition, kafka::Message in,
            kafka::Headers headers, Ticket ticket);
  /// A dead letter of record `m` (an input or a refused output) of input
  /// `ticket` at `offset`: its value cut to fit `record_limit` with its headers
  /// and neardup's, or nothing but neardup's headers when `bare`.
  Letter letter_for(kafka::Message m, Ticket ticket, std::int64_t offset, std::string reason,
                    std::size_t record_limit, bool bare) const;
  void send_letter(Letter letter);
  /// True when `err` refused a record for its transaction's sake (refused_ notes it).
  bool refused_by_transaction(kafka::ErrorCode err);
  int partitions_of(const std::string& topic);

  const config::Config& cfg_;
  kafka::Producer& producer_;
  OffsetLedger& ledger_;
  Sources& sources_;
  ServiceSnapshot& stats_;
  RefusedRecords& refused_;
  const std::size_t max_record_bytes_;
  /// max_record_bytes_ is a topic's max.message.bytes, below the producer's
  /// limit: records are checked against it before they are produced.
  const bool sized_by_topics_;
  std::map<std::string, int> topic_partitions_;  // cached partition counts (-1: unknown)
  std::vector<Letter> resends_;                  // refused records, for the dead-letter topic
};

}  // namespace neardup::stream
