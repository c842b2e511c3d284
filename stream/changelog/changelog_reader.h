#pragma once
// The changelog's read side on Kafka: ChangelogReader assigns every partition
// of the topic (no consumer group, nothing committed), reads ranges of it up
// to the high watermark as of the start (the rebuild, window_restore.h chooses
// them), and can keep following it afterwards. The record format is
// stream/records/changelog_record.h.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stream/kafka/kafka.h"
#include "stream/records/changelog_record.h"

namespace neardup::stream {

/// Reads the changelog topic without a consumer group. Not thread-safe: one thread.
class ChangelogReader {
 public:
  /// Called once per entry (a batch, version 2 or 3, holds many).
  using Visit = std::function<void(const ChangelogRecord&)>;
  using Corrupt =
      std::function<void(std::int32_t partition, std::int64_t offset, const std::string& reason)>;

  /// `properties`: the service's consumer properties (bootstrap, security...);
  /// group.id, auto commit and partition EOF are overridden. Reading starts
  /// at the beginning unless read_range or follow_from_end says otherwise. Throws
  /// kafka::KafkaError (fatal) when the topic does not exist, naming the fix.
  ChangelogReader(kafka::Properties properties, const std::string& topic,
                  std::chrono::milliseconds metadata_timeout);
  ~ChangelogReader();
  ChangelogReader(const ChangelogReader&) = delete;
  ChangelogReader& operator=(const ChangelogReader&) = delete;

  /// Reads every partition from its beginning (the log start offset: retention
  /// or compaction may have moved it) up to the high watermark it had when this
  /// reader was constructed, calling `visit` for every valid record and
  /// `corrupt` for every other. Returns false if `stopped()` turned true first.
  /// Transient broker errors are retried (librdkafka); fatal ones throw kafka::KafkaError.
  bool catch_up(const Visit& visit, const Corrupt& corrupt, const std::function<bool()>& stopped);

  /// Reads [from[p], to[p]) of every partition p (nothing where from >= to),
  /// calling `visit` and `corrupt` as catch_up does; records at or past to[p]
  /// that a fetch brings are passed over. Returns false if `stopped()` turned
  /// true first. Fatal broker errors throw kafka::KafkaError.
  bool read_range(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to,
                  const Visit& visit, const Corrupt& corrupt, const std::function<bool()>& stopped);

  /// Per partition: the first offset in [low, high) whose record is stamped at
  /// or after `time_ms`, or high when none is (high and low as of
  /// construction). The partitions' leaders answer; where an answer
  /// contradicts a record read already (a broker that cannot look offsets up
  /// by time, such as librdkafka's mock cluster, answers "none"), the offset
  /// is searched for by reading single records, which assumes timestamps grow
  /// with offsets. A partition is asked for up to 3 times; one still without
  /// an answer gives low (counted in unanswered()). Returns nullopt if
  /// `stopped()` turned true first.
  std::optional<std::vector<std::int64_t>> offsets_for_time(std::int64_t time_ms,
                                                            const std::function<bool()>& stopped);

  /// After read_range: following (poll, read_to_end) continues from the high
  /// watermarks of construction.
  void follow_from_end();

  /// Afterwards: whatever newer records have arrived, up to `max`, without waiting.
  void poll(const Visit& visit, const Corrupt& corrupt, std::size_t max);

  /// Afterwards: reads until every partition reaches the high watermark it has
  /// now (asked of the broker), or `limit` passes. Returns whether it got there.
  /// For the moment partitions change hands: what their previous owner kept is
  /// then in the changelog (its revoke waited for the acknowledgements).
  bool read_to_end(const Visit& visit, const Corrupt& corrupt, std::chrono::milliseconds limit);

  /// Batches written by `instance` (this process's ChangelogBatch) are
  /// passed over without parsing from now on: following its own records costs
  /// a prefix comparison each. They still count in records_read().
  void skip_instance(std::uint64_t instance);

  int partitions() const { return static_cast<int>(high_.size()); }
  /// Per partition, as of construction: the log start offset and the high watermark.
  const std::vector<std::int64_t>& low() const { return low_; }
  const std::vector<std::int64_t>& high() const { return high_; }
  /// Kafka records the topic held at construction (high minus low, summed).
  std::uint64_t records_held() const;
  /// Kafka records read so far (valid or not; a batch counts once).
  std::uint64_t records_read() const { return read_; }
  /// Entries passed to a `visit` so far.
  std::uint64_t entries_read() const { return entries_read_; }
  /// Per partition: the newest timestamp of a readable record read so far (-1: none).
  const std::vector<std::int64_t>& newest_read() const { return newest_; }
  /// Per partition: the oldest timestamp of a readable record read so far
  /// (the int64 maximum: none).
  const std::vector<std::int64_t>& oldest_read() const { return oldest_; }
  /// Whether a record read so far was stamped by its broker on arrival
  /// (message.timestamp.type LogAppendTime) instead of by its writer.
  bool saw_log_append_time() const { return log_append_time_; }
  /// Offsets offsets_for_time() had to search for by reading.
  std::uint64_t searched_by_reading() const { return searched_; }
  /// Partitions offsets_for_time() got no answer for in 3 requests (each then
  /// read from its start), and the last request's error.
  std::uint64_t unanswered() const { return unanswered_; }
  const std::string& unanswered_reason() const { return unanswered_reason_; }

 private:
  void consume(kafka::Message m, const Visit& visit, const Corrupt& corrupt);
  /// Reads until every partition's position reaches `target` (per partition),
  /// or `give_up()` turns true first (then returns false).
  bool read_until(const std::vector<std::int64_t>& target, const Visit& visit,
                  const Corrupt& corrupt, const std::function<bool()>& give_up);
  /// Moves partition p to from[p] where from[p] < to[p], the others to their
  /// high watermark (they count as read); records from to[p] on are passed over.
  void assign_from(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to);
  /// Before anything was read: every partition from its beginning.
  void start_if_unassigned();
  /// Assigns `list` the first time, seeks to it afterwards.
  void move_to(const kafka::TopicPartitions& list);
  /// The first record of `partition` at or after `offset`: its offset and
  /// timestamp, or nullopt at the end (or stopped, or 30 s without an answer).
  struct Probe {
    std::int64_t offset;
    std::int64_t timestamp;
  };
  std::optional<Probe> probe(std::int32_t partition, std::int64_t offset,
                             const std::function<bool()>& stopped, bool& failed);
  /// offsets_for_time's search by reading single records, in [low, high).
  std::optional<std::int64_t> search(std::int32_t partition, std::int64_t time_ms,
                                     const std::function<bool()>& stopped);

  std::string topic_;
  std::unique_ptr<kafka::Consumer> consumer_;
  std::vector<std::int64_t> high_;      ///< per partition: the high watermark at construction
  std::vector<std::int64_t> low_;       ///< per partition: the log start offset at construction
  std::vector<std::int64_t> position_;  ///< per partition: next offset to read (-1 unknown)
  std::vector<std::int64_t> limit_;     ///< per partition: records from here on are passed over
  std::vector<std::int64_t> newest_;    ///< per partition: newest record timestamp read (-1 none)
  std::vector<std::int64_t> oldest_;    ///< per partition: oldest record timestamp read
  std::chrono::milliseconds metadata_timeout_;
  std::uint64_t read_ = 0;
  std::uint64_t entries_read_ = 0;
  std::uint64_t searched_ = 0;
  std::uint64_t unanswered_ = 0;
  std::string unanswered_reason_;
  bool log_append_time_ = false;
  bool assigned_ = false;
  std::vector<ChangelogRecord> entries_;  ///< scratch for one record's entries
  std::string skip_prefix_;               ///< the value prefix of skipped records ("" = none)
};

}  // namespace neardup::stream
