#include "stream/changelog/changelog_reader.h"

#include <algorithm>
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
  const int n = consumer_->partition_count(topic, metadata_timeout);
  if (n <= 0) {
    throw kafka::KafkaError(
        "window changelog topic '" + topic +
            "' does not exist: create it (`neardup topics create`; cleanup.policy=delete, "
            "retention.ms >= "
            "window.duration) or set kafka.changelog_topic: \"\" to run without one",
        kafka::errc::unknown_topic_or_partition, kafka::Severity::fatal);
  }
  high_.assign(static_cast<std::size_t>(n), 0);
  position_.assign(static_cast<std::size_t>(n), -1);
  kafka::TopicPartitions list(n);
  for (int p = 0; p < n; ++p) {
    const auto w = consumer_->query_watermarks(topic, p, metadata_timeout);
    if (w.error) {
      throw kafka::KafkaError("window changelog '" + topic + "' partition " + std::to_string(p) +
                                  ": cannot read its offsets: " + kafka::describe(w.error),
                              w.error, kafka::Severity::fatal);
    }
    high_[static_cast<std::size_t>(p)] = w.high;
    // empty: nothing to catch up on
    if (w.high <= w.low) position_[static_cast<std::size_t>(p)] = w.high;
    list.add(topic, p, kafka::kOffsetBeginning);
  }
  if (const kafka::ErrorCode err = consumer_->assign(list)) {
    throw kafka::KafkaError("window changelog '" + topic + "': assign: " + kafka::describe(err),
                            err, kafka::Severity::fatal);
  }
}

ChangelogReader::~ChangelogReader() = default;

void ChangelogReader::skip_instance(std::uint64_t instance) {
  skip_prefix_ = ChangelogBatch::value_prefix(instance);
}

void ChangelogReader::consume(kafka::Message m, const Visit& visit, const Corrupt& corrupt) {
  const auto p = static_cast<std::size_t>(m.partition());
  if (m.error() == kafka::errc::partition_eof) {
    if (p < position_.size()) position_[p] = std::max(position_[p], m.offset());
    return;
  }
  if (m.error()) {
    if (m.error() == kafka::errc::fatal) {
      throw kafka::KafkaError("window changelog: " + consumer_->fatal_reason(), m.error(),
                              kafka::Severity::fatal);
    }
    return;  // transient (broker down, leader change): librdkafka retries
  }
  ++read_;
  if (p < position_.size()) position_[p] = std::max(position_[p], m.offset() + 1);
  const std::string_view value = m.payload();
  if (!skip_prefix_.empty() && value.starts_with(skip_prefix_)) return;
  std::string reason;
  entries_.clear();
  if (decode_changelog(value, entries_, &reason)) {
    for (const auto& entry : entries_) visit(entry);
  } else {
    corrupt(m.partition(), m.offset(), reason);
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
      throw kafka::KafkaError("window changelog: " + consumer_->fatal_reason(), kafka::errc::fatal,
                              kafka::Severity::fatal);
    }
    batch.clear();
    consumer_->poll_batch(batch, 5000, std::chrono::milliseconds(50));
    for (const auto& m : batch) consume(m, visit, corrupt);
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
    const auto w = consumer_->query_watermarks(topic_, static_cast<std::int32_t>(p),
                                               std::max(left, std::chrono::milliseconds(1)));
    if (w.error) return false;
    target[p] = w.high > w.low ? w.high : -1;  // -1: empty, nothing to wait for
  }
  return read_until(target, visit, corrupt,
                    [&] { return std::chrono::steady_clock::now() >= deadline; });
}

void ChangelogReader::poll(const Visit& visit, const Corrupt& corrupt, std::size_t max) {
  std::vector<kafka::MessagePtr> batch;
  consumer_->poll_batch(batch, max, std::chrono::milliseconds(0));
  for (const auto& m : batch) consume(m, visit, corrupt);
}

}  // namespace neardup::stream
