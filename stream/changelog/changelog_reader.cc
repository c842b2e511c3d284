#include "stream/changelog/changelog_reader.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace neardup::stream {

ChangelogReader::ChangelogReader(kafka::Properties properties, const std::string& topic,
                                 std::chrono::milliseconds metadata_timeout)
    : topic_(topic) {
  // Assigned partitions only: the group id is never joined nor committed to.
  properties["group.id"] = properties["group.id"] + ".changelog-reader";
  properties["enable.auto.commit"] = "false";
  properties["enable.partition.eof"] = "true";
  properties["auto.offset.reset"] = "earliest";
  properties["allow.auto.create.topics"] = "false";
  consumer_ = std::make_unique<kafka::Consumer>(properties, nullptr);
  const int n = kafka::partition_count(consumer_->handle(), topic, metadata_timeout);
  if (n <= 0) {
    throw kafka::KafkaError(
        "window changelog topic '" + topic +
            "' does not exist: create it (`neardup topics create`; cleanup.policy=delete, "
            "retention.ms >= "
            "window.duration) or set kafka.changelog_topic: \"\" to run without one",
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, kafka::Severity::fatal);
  }
  high_.assign(static_cast<std::size_t>(n), 0);
  position_.assign(static_cast<std::size_t>(n), -1);
  kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(n));
  for (int p = 0; p < n; ++p) {
    std::int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(consumer_->handle(), topic.c_str(), p, &lo, &hi,
                                         static_cast<int>(metadata_timeout.count()));
    if (err) {
      throw kafka::KafkaError("window changelog '" + topic + "' partition " + std::to_string(p) +
                                  ": cannot read its offsets: " + rd_kafka_err2str(err),
                              err, kafka::Severity::fatal);
    }
    high_[static_cast<std::size_t>(p)] = hi;
    if (hi <= lo) position_[static_cast<std::size_t>(p)] = hi;  // empty: nothing to catch up on
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (rd_kafka_resp_err_t err = rd_kafka_assign(consumer_->handle(), list.get())) {
    throw kafka::KafkaError("window changelog '" + topic + "': assign: " + rd_kafka_err2str(err),
                            err, kafka::Severity::fatal);
  }
}

ChangelogReader::~ChangelogReader() = default;

void ChangelogReader::skip_instance(std::uint64_t instance) {
  skip_prefix_ = ChangelogBatch::value_prefix(instance);
}

void ChangelogReader::consume(const rd_kafka_message_t& m, const Visit& visit,
                              const Corrupt& corrupt) {
  const auto p = static_cast<std::size_t>(m.partition);
  if (m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    if (p < position_.size()) position_[p] = std::max(position_[p], m.offset);
    return;
  }
  if (m.err) {
    if (m.err == RD_KAFKA_RESP_ERR__FATAL) {
      throw kafka::KafkaError("window changelog: " + consumer_->fatal_reason(), m.err,
                              kafka::Severity::fatal);
    }
    return;  // transient (broker down, leader change): librdkafka retries
  }
  ++read_;
  if (p < position_.size()) position_[p] = std::max(position_[p], m.offset + 1);
  if (!skip_prefix_.empty() && m.payload && m.len >= skip_prefix_.size() &&
      std::memcmp(m.payload, skip_prefix_.data(), skip_prefix_.size()) == 0) {
    return;
  }
  std::string reason;
  entries_.clear();
  if (decode_changelog(std::string_view(static_cast<const char*>(m.payload), m.payload ? m.len : 0),
                       entries_, &reason)) {
    for (const auto& entry : entries_) visit(entry);
  } else {
    corrupt(m.partition, m.offset, reason);
  }
}

bool ChangelogReader::read_until(const std::vector<std::int64_t>& target, const Visit& visit,
                                 const Corrupt& corrupt, const std::function<bool()>& give_up) {
  std::vector<kafka::MessagePtr> batch;
  auto behind = [&] {
    for (std::size_t p = 0; p < target.size(); ++p) {
      if (position_[p] < target[p]) return true;
    }
    return false;
  };
  while (behind()) {
    if (give_up()) return false;
    if (consumer_->fatal()) {
      throw kafka::KafkaError("window changelog: " + consumer_->fatal_reason(),
                              RD_KAFKA_RESP_ERR__FATAL, kafka::Severity::fatal);
    }
    batch.clear();
    consumer_->poll_batch(batch, 5000, std::chrono::milliseconds(50));
    for (const auto& m : batch) consume(*m, visit, corrupt);
  }
  return true;
}

bool ChangelogReader::catch_up(const Visit& visit, const Corrupt& corrupt,
                               const std::function<bool()>& stopped) {
  return read_until(high_, visit, corrupt, stopped);
}

bool ChangelogReader::read_to_end(const Visit& visit, const Corrupt& corrupt,
                                  std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<std::int64_t> target(high_.size(), 0);
  for (std::size_t p = 0; p < high_.size(); ++p) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    std::int64_t lo = 0, hi = 0;
    if (rd_kafka_query_watermark_offsets(
            consumer_->handle(), topic_.c_str(), static_cast<std::int32_t>(p), &lo, &hi,
            static_cast<int>(std::max<std::int64_t>(left.count(), 1))) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
      return false;
    target[p] = hi > lo ? hi : -1;  // -1: empty, nothing to wait for
  }
  return read_until(target, visit, corrupt,
                    [&] { return std::chrono::steady_clock::now() >= deadline; });
}

void ChangelogReader::poll(const Visit& visit, const Corrupt& corrupt, std::size_t max) {
  std::vector<kafka::MessagePtr> batch;
  consumer_->poll_batch(batch, max, std::chrono::milliseconds(0));
  for (const auto& m : batch) consume(*m, visit, corrupt);
}

}  // namespace neardup::stream
