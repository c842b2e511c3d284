#pragma once
// The records of the judge topic and the verdict topic (consistent scale-out,
// docs/KAFKA.md "Several instances"): what an instance sends the judge about
// the messages it analyzed, and what the judge answers.
//
// Every instance analyzes its own input partitions (decode, SimHash, sketch)
// and sends the analyses of one polled batch as one request record to the
// single-partition judge topic; that partition's order is the one order in
// which every window decision is taken. The judge answers each request record
// with one verdict record (same batch number, entries in the same order) on
// the verdict topic, keyed by the requesting instance's id.
//
// Binary, little-endian, versioned by a 4-byte magic; a reader refuses
// anything that is not exactly this shape (never throws on any bytes).
//   request  "NDQ5" instance:u64 batch:u64 topics:u16 {len:u16 bytes}*
//            entries:u32 bits:u8 band_bins:u8 bands:u8
//            schema:u32 description_len:u8 description {entry}*
//            (bits, band_bins, bands: the sender's sketch options; bands 0 = sketch off;
//             schema: the sender's fingerprint schema, dedup/engine/schema.h)
//            "NDQ4" (read): the same without markers and words, with hashes that have no
//             boilerplate mark (bit 0 is cleared on reading: no story rule for them);
//            "NDQ3" (read): the same without the entries' exact sets;
//            "NDQ2" (read, from 0.1.0): nor schema and description (its schema reads as 0)
//     entry  topic:u16 partition:i32 offset:i64 time:i64 scope:u32 fingerprint:u64
//            features:u32 chars:u32 invalid_bytes:u32 text_bytes:u32
//            shingles:u32 [minhash:2*u64 {band key:u64}*bands]  (when shingles > 0)
//            exact:u8 [keys:u8 markers:u8 words:u8 {recent band key:u64}*8
//                      {hash:u32}*exact {key:u32}*keys {byte}*words]
//            (exact > 0: a short text's exact shingle set, sorted, bit 0 of a hash set
//             for a shingle of its URLs, hashtags or mentions; markers: how many
//             shingles its repost markers add to the text; words: the text's words
//             without boilerplate, for the typo rule (ASCII texts); for the judge's
//             recent-text stage, with its must-match token hashes; dedup/fingerprint/sketch.h)
//   verdict  "NDV2" instance:u64 batch:u64 topics:u16 {len:u16 bytes}*
//            entries:u32 {entry}*
//     entry  kind:u8 fingerprint:u64 features:u32 candidates:u32 flags:u8
//            [topic:u16 partition:i32 offset:i64 time:i64 fingerprint:u64 distance:u8
//             count:u32]                                                           (flags&1)
//            [similarity:f64]                                                      (flags&2)
//            flags&4: invalid because the request's fingerprint schema is not the judge's
// The verdict record's key is the instance id as 8 bytes (big-endian), so an
// instance skips other instances' verdicts without decoding them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/core/options.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"

namespace neardup::stream {

/// Where a message was read (the judge's and the instances' common name for it).
struct SourceName {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

/// The same, viewing a topic name held elsewhere (a decoded record's, or the
/// caller's): a verdict names its original without a string of its own.
struct SourceRef {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

/// One analyzed message, as the judge needs it.
struct JudgeRequestEntry {
  SourceName source;
  dedup::EventTime time;
  dedup::Analysis analysis;
};

/// One judged message, as its instance needs it.
struct JudgeVerdictEntry {
  dedup::VerdictKind kind = dedup::VerdictKind::unique;
  dedup::Fingerprint fingerprint;
  std::uint32_t features = 0;
  std::uint32_t candidates = 0;
  /// duplicates: the kept original (decoded: its topic views JudgeVerdicts::topics)
  std::optional<SourceRef> of;
  dedup::EventTime of_time;
  dedup::Fingerprint of_fingerprint;
  int distance = 0;
  std::uint32_t count = 0;  ///< duplicates: dedup::Verdict::count
  std::optional<double> similarity;
  /// invalid: the request was of another fingerprint schema than the judge's
  bool foreign_schema = false;
};

/// The 8-byte key of `instance`'s verdict records.
std::string verdict_key(std::uint64_t instance);

/// Builds one request record. Not thread-safe. O(entry size) per add().
class JudgeRequestWriter {
 public:
  /// The fingerprint schema of the analyses and its sketch options (the judge
  /// checks them against its own).
  explicit JudgeRequestWriter(const dedup::FingerprintSchema& schema)
      : bits_(schema.sketch.enabled ? schema.sketch.bits : 0),
        band_bins_(schema.sketch.enabled ? schema.sketch.band_bins : 0),
        bands_(schema.sketch.enabled ? schema.sketch.bands : 0),
        schema_(schema.id),
        description_(schema.description.substr(0, 255)) {}
  void start(std::uint64_t instance, std::uint64_t batch);
  void add(std::string_view topic, std::int32_t partition, std::int64_t offset,
           dedup::EventTime time, const dedup::Analysis& analysis);
  std::size_t entries() const { return entries_; }
  /// Bytes of the entries added since start() (the header adds the topics and the schema).
  std::size_t bytes() const { return body_.size(); }
  /// The record value; valid until the next start().
  std::string_view finish();

 private:
  std::uint16_t topic_index(std::string_view topic);
  std::vector<std::string> topics_;
  std::string body_, value_;
  int bits_, band_bins_, bands_;
  std::uint32_t schema_;
  std::string description_;
  std::uint64_t instance_ = 0, batch_ = 0;
  std::uint32_t entries_ = 0;
};

/// Builds one verdict record. Not thread-safe.
class JudgeVerdictWriter {
 public:
  void start(std::uint64_t instance, std::uint64_t batch);
  void add(const JudgeVerdictEntry& entry);
  std::size_t entries() const { return entries_; }
  std::string_view finish();

 private:
  std::uint16_t topic_index(std::string_view topic);
  std::vector<std::string> topics_;
  std::string body_, value_;
  std::uint64_t instance_ = 0, batch_ = 0;
  std::uint32_t entries_ = 0;
};

struct JudgeRequest {
  std::uint64_t instance = 0;
  std::uint64_t batch = 0;
  int bits = 0, band_bins = 0, bands = 0;  ///< the sender's sketch options (bands 0: off)
  std::uint32_t schema = 0;                ///< the sender's fingerprint schema; 0: unknown (NDQ2)
  std::string schema_description;
  std::vector<JudgeRequestEntry> entries;
};

struct JudgeVerdicts {
  std::uint64_t instance = 0;
  std::uint64_t batch = 0;
  /// The record's topic names, which the entries' `of` view: valid until the
  /// next decode into this object, which reuses their buffers (a decoder
  /// allocates nothing per duplicate).
  std::vector<std::string> topics;
  std::vector<JudgeVerdictEntry> entries;
};

/// Parse a record value into `out` (reused: its entries are replaced); on
/// anything malformed return false with no entries in `out` and set `*error`.
/// Never throws except std::bad_alloc. O(size).
bool decode_judge_request(std::string_view value, JudgeRequest& out, std::string* error);
bool decode_judge_verdicts(std::string_view value, JudgeVerdicts& out, std::string* error);

}  // namespace neardup::stream
