#pragma once
// The changelog's read side on Kafka: ChangelogReader assigns every partition
// of the topic (no consumer group, nothing committed), reads each from its
// beginning to the high watermark as of the start (the rebuild), and can keep
// following it afterwards. The record format is stream/records/changelog_record.h.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
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
  /// group.id, auto commit and partition EOF are overridden. Throws
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
  /// Kafka records read so far (valid or not; a batch counts once).
  std::uint64_t records_read() const { return read_; }

 private:
  void consume(kafka::Message m, const Visit& visit, const Corrupt& corrupt);
  /// Reads until every partition's position reaches `target` (per partition),
  /// or `give_up()` turns true first (then returns false).
  bool read_until(const std::vector<std::int64_t>& target, const Visit& visit,
                  const Corrupt& corrupt, const std::function<bool()>& give_up);

  std::string topic_;
  std::unique_ptr<kafka::Consumer> consumer_;
  std::vector<std::int64_t> high_;      ///< per partition: the high watermark at construction
  std::vector<std::int64_t> position_;  ///< per partition: next offset to read (-1 unknown)
  std::uint64_t read_ = 0;
  std::vector<ChangelogRecord> entries_;  ///< scratch for one record's entries
  std::string skip_prefix_;               ///< the value prefix of skipped records ("" = none)
};

}  // namespace neardup::stream
