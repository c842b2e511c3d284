#pragma once
// The window changelog: the fingerprint record of every kept (unique) message
// is appended to a Kafka topic (kafka.changelog_topic), so that a restarted
// instance, or another instance of the same group, can rebuild the window
// exactly as if it had processed those messages itself.
//
// Format version 4 (written; documented byte by byte in docs/KAFKA.md): one
// Kafka record carries the entries of many kept messages (a batch), because
// the cost of the changelog is per Kafka record, and binary
// (stream/records/binary_record.h), because the judge writes one entry per
// kept message. What every entry of a batch shares (the writer's fingerprint
// schema, dedup/engine/schema.h, and sketch options) is said once in the header; an
// entry's time and offset are deltas from the previous entry's, as varints:
// a typical entry with the default sketch (3 bands) takes 54 bytes.
//   key    "<instance, 16 hex>-<batch sequence, 16 hex>" (unique per batch)
//   value  "NDC4" instance:u64 batch:u64 topics:u16 {len:u16 bytes}* entries:u32
//          schema:u32 description_len:u8 description (dedup::FingerprintSchema)
//          bits:u8 band_bins:u8 scheme:u8 bands:u8 (the batch's sketch options)
//          {entry}*
//          entry: flags:u8 (1: sketch, 2: scope, 4: sketch options of its own)
//                 fingerprint:u64 time:zigzag varint (event time, ms, minus the
//                 previous entry's; the first: minus 0) topic:varint partition:varint
//                 offset:zigzag varint (minus the previous entry's; the first: minus 0)
//                 [scope:varint] [bits:u8 band_bins:u8 scheme:u8 bands:u8 (flag 4)]
//                 [minhash:2*u64 {band key:u64}*bands (flag 1)]
//          varint: LEB128, 7 bits a byte, low first; zigzag: (v << 1) ^ (v >> 63)
//   timestamp  the newest event time among the entries
// Format version 3 (read; written before version 4): no schema, every entry whole,
//   value  "NDC3" instance:u64 batch:u64 topics:u16 {len:u16 bytes}* entries:u32 {entry}*
//          entry: flags:u8 (1: sketch, 2: scope) fingerprint:u64 time:i64 (event time, ms)
//                 topic:u16 partition:i32 offset:i64 [scope:u32]
//                 [bits:u8 band_bins:u8 scheme:u8 bands:u8 minhash:2*u64 {band key:u64}*bands]
// Format version 2 (read; written before version 3): the same batch as JSON,
//   value  {"v":2,"instance":"<16 hex>","entries":[<entry>,...]}  (1..N entries)
//          entry: {"fp":"<16 hex>","t":<event time, ms>,"topic":"<source topic>",
//                  "partition":<int>,"offset":<int>,"scope":<u32, when not 0>,
//                  "sketch":{"bits":2,"band_bins":4,"scheme":2,"minhash":"<32 hex>",
//                            "bands":["<16 hex>",...]}}
//          "scheme" is dedup::kSketchScheme (absent before it existed: read as 1)
// Format version 1 (read, still written by encode_changelog_value for tests):
// one record per kept message,
//   key    the fingerprint, 16 lower-case hex digits
//   value  {"v":1,"fp":...,"t":...,"topic":...,"partition":...,"offset":...,
//           "instance":"<16 hex>","sketch":{...}}
// In all, the sketch is absent when the writer's sketch stage was off or the
// text had no shingles; "instance" is a random id per service process: an
// instance skips its own records while it follows the topic live.
// Readers refuse (and count) any value that is not exactly this shape (a batch
// with one bad entry is refused whole); in JSON, unknown extra members are ignored.
//
// Reading it from Kafka: stream/changelog/changelog_reader.h.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/core/types.h"
#include "dedup/engine/schema.h"
#include "dedup/fingerprint/sketch.h"

namespace neardup::stream {

inline constexpr int kChangelogVersion = 4;   ///< what ChangelogBatch writes (binary)
inline constexpr int kChangelogVersion3 = 3;  ///< binary batches without a schema; still read
inline constexpr int kChangelogVersion2 = 2;  ///< JSON batches; still read
inline constexpr int kChangelogVersion1 = 1;  ///< one JSON record per entry; still read

/// One kept message, as the changelog carries it.
struct ChangelogRecord {
  dedup::Fingerprint fingerprint;
  dedup::EventTime time;
  std::string topic;  ///< where the kept message was read
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::uint64_t instance = 0;  ///< the writing process's random id
  bool has_sketch = false;
  int bits = 0;  ///< SketchOptions the sketch was made with
  int band_bins = 0;
  int scheme = dedup::kSketchScheme;  ///< the writer's sketch scheme (decoded: 1 when absent)
  int bands = 0;                      ///< band keys carried (the writer's sketch.bands)
  dedup::SketchResult sketch;  ///< shingles is 1 when has_sketch (the engine indexes it), else 0
  dedup::ScopeId scope;        ///< dedup.scope of the message; "scope" is written only when not 0
  /// The writer's fingerprint schema id (dedup/engine/schema.h); 0 in formats before version 4.
  std::uint32_t schema = 0;
  /// Its description, shared by the entries of one batch (null when schema is 0).
  std::shared_ptr<const std::string> schema_description;
};

/// The record key: the fingerprint's 16 hex digits.
std::string changelog_key(dedup::Fingerprint fingerprint);

/// A version 1 record value (one entry). Never throws except std::bad_alloc.
std::string encode_changelog_value(const ChangelogRecord& record);

/// Parses a version 1 record value. On anything malformed (not JSON, another
/// version, a missing or out-of-range member) returns nullopt and sets `*error`
/// to a short reason. Never throws on any input bytes. O(size).
std::optional<ChangelogRecord> decode_changelog_value(std::string_view value, std::string* error);

/// Parses a record value of any version, appending its entries to `out`
/// (version 1: one; versions 2 and 3: every entry, each with the batch's instance).
/// All or nothing: on anything malformed appends nothing, sets `*error` and
/// returns false. Never throws on any input bytes except std::bad_alloc. O(size).
bool decode_changelog(std::string_view value, std::vector<ChangelogRecord>& out,
                      std::string* error);

/// Builds one version 4 record (a batch) entry by entry, encoding as it goes.
/// Not thread-safe. O(entry size) per add().
class ChangelogBatch {
 public:
  /// `schema`: the writer's (its sketch options are the batch's; an entry with
  /// other ones carries its own).
  explicit ChangelogBatch(std::uint64_t instance,
                          dedup::FingerprintSchema schema = dedup::fingerprint_schema({}));

  /// Appends one kept message's entry (record.instance and record.schema are
  /// ignored: the batch's are written).
  void add(const ChangelogRecord& record);
  std::size_t entries() const { return entries_; }
  std::size_t bytes() const { return body_.size(); }  ///< the entries' (the header adds the topics)
  bool empty() const { return entries_ == 0; }
  /// The newest event time added (for the record timestamp).
  dedup::EventTime newest() const { return newest_; }

  /// The finished record: key (unique per batch of this instance) and value.
  /// The batch is empty again afterwards; key and value view its buffers (whose
  /// capacity is kept) and are valid until the next add().
  struct Encoded {
    std::string_view key, value;
    dedup::EventTime newest;
    /// The record's timestamp: the newest event time of this batch and of
    /// every earlier one of this writer, so its records are stamped in order
    /// (lookups by time that assume timestamps grow with offsets, as kfake's
    /// and the rebuild's search by reading do, find them) and no later than
    /// any of their entries.
    dedup::EventTime stamp;
    std::size_t entries = 0;
  };
  Encoded take();

  /// How every value of this batch writer begins (ChangelogReader::skip_instance).
  static std::string value_prefix(std::uint64_t instance);

 private:
  std::uint64_t instance_;
  dedup::FingerprintSchema schema_;
  std::string params_;  // schema and sketch options, as the header carries them
  std::uint64_t sequence_ = 0;
  std::int64_t last_time_ = 0, last_offset_ = 0;  // the previous entry's (deltas)
  std::size_t entries_ = 0;
  dedup::EventTime newest_{0};
  dedup::EventTime stamp_{0};  // the newest of every batch taken so far
  std::vector<std::string> topics_;
  std::string body_;
  std::string value_;
  std::string key_;
};

}  // namespace neardup::stream
