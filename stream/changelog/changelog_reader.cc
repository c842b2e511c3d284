#include "stream/changelog/changelog_reader.h"

#include <algorithm>
#include <limits>
#include <string>

namespace neardup::stream {

ChangelogReader::ChangelogReader(kafka::Properties properties, const std::string& topic,
                                 std::chrono::milliseconds metadata_timeout)
    : topic_(topic), metadata_timeout_(metadata_timeout) {
  // Assigned partitions only: the group id is never joined nor committed to.
  properties["group.id"] = properties["group.id"] + ".changelog-reader";
  properties.erase("group.instance.id");  // (a member's identity; this consumer is none)
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
  const auto count = static_cast<std::size_t>(n);
  high_.assign(count, 0);
  low_.assign(count, 0);
  position_.assign(count, -1);
  limit_.assign(count, std::numeric_limits<std::int64_t>::max());
  newest_.assign(count, -1);
  oldest_.assign(count, std::numeric_limits<std::int64_t>::max());
  for (int p = 0; p < n; ++p) {
    const auto w = consumer_->query_watermarks(topic, p, metadata_timeout);
    if (w.error) {
      throw kafka::KafkaError("window changelog '" + topic + "' partition " + std::to_string(p) +
                                  ": cannot read its offsets: " + kafka::describe(w.error),
                              w.error, kafka::Severity::fatal);
    }
    high_[static_cast<std::size_t>(p)] = w.high;
    low_[static_cast<std::size_t>(p)] = std::min(w.low, w.high);
  }
}

std::uint64_t ChangelogReader::records_held() const {
  std::uint64_t held = 0;
  for (std::size_t p = 0; p < high_.size(); ++p)
    held += static_cast<std::uint64_t>(high_[p] - low_[p]);
  return held;
}

void ChangelogReader::assign_from(const std::vector<std::int64_t>& from,
                                  const std::vector<std::int64_t>& to) {
  kafka::TopicPartitions list(static_cast<int>(high_.size()));
  for (std::size_t p = 0; p < high_.size(); ++p) {
    limit_[p] = to[p];
    // A partition with nothing to read waits at the end.
    position_[p] = from[p] < to[p] ? from[p] : to[p];
    list.add(topic_, static_cast<std::int32_t>(p), from[p] < to[p] ? from[p] : high_[p]);
  }
  move_to(list);
}

void ChangelogReader::move_to(const kafka::TopicPartitions& list) {
  // Assigned once, then moved by seeking: librdkafka 2.0 can fail an
  // assertion when assignments replace each other faster than its fetchers stop.
  if (!assigned_) {
    if (const kafka::ErrorCode err = consumer_->assign(list)) {
      throw kafka::KafkaError("window changelog '" + topic_ + "': assign: " + kafka::describe(err),
                              err, kafka::Severity::fatal);
    }
    assigned_ = true;
    return;
  }
  // A partition whose fetcher has not started yet refuses a seek for a moment.
  std::string why;
  std::vector<kafka::MessagePtr> stale;
  for (int attempt = 0; attempt < 100; ++attempt) {
    why = consumer_->seek(list, metadata_timeout_);
    if (why.empty()) return;
    stale.clear();
    consumer_->poll_batch(stale, 1000, std::chrono::milliseconds(100));  // from before the seek
  }
  throw kafka::KafkaError("window changelog '" + topic_ + "': seek: " + why, kafka::errc::fatal,
                          kafka::Severity::fatal);
}

void ChangelogReader::start_if_unassigned() {
  if (!assigned_)
    assign_from(low_,
                std::vector<std::int64_t>(high_.size(), std::numeric_limits<std::int64_t>::max()));
}

void ChangelogReader::follow_from_end() {
  assign_from(high_,
              std::vector<std::int64_t>(high_.size(), std::numeric_limits<std::int64_t>::max()));
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
  if (p >= position_.size())
    return;  // (the topic cannot shrink; partitions added later are not read)
  position_[p] = std::max(position_[p], m.offset() + 1);
  if (m.offset() >= limit_[p]) return;  // past the range being read
  ++read_;
  log_append_time_ = log_append_time_ || m.log_append_time();
  const std::string_view value = m.payload();
  if (!skip_prefix_.empty() && value.starts_with(skip_prefix_)) return;
  std::string reason;
  entries_.clear();
  if (decode_changelog(value, entries_, &reason)) {
    newest_[p] = std::max(newest_[p], m.timestamp());  // (an unreadable record's time says nothing)
    oldest_[p] = std::min(oldest_[p], m.timestamp());
    entries_read_ += entries_.size();
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
  // Every partition stays assigned past its high watermark: following goes on from there.
  assign_from(low_,
              std::vector<std::int64_t>(high_.size(), std::numeric_limits<std::int64_t>::max()));
  return read_until(high_, visit, corrupt, stopped);
}

bool ChangelogReader::read_range(const std::vector<std::int64_t>& from,
                                 const std::vector<std::int64_t>& to, const Visit& visit,
                                 const Corrupt& corrupt, const std::function<bool()>& stopped) {
  assign_from(from, to);
  return read_until(to, visit, corrupt, stopped);
}

std::optional<ChangelogReader::Probe> ChangelogReader::probe(std::int32_t partition,
                                                             std::int64_t offset,
                                                             const std::function<bool()>& stopped,
                                                             bool& failed) {
  const auto p = static_cast<std::size_t>(partition);
  kafka::TopicPartitions list(1);
  list.add(topic_, partition, offset);
  move_to(list);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<kafka::MessagePtr> batch;
  while (std::chrono::steady_clock::now() < deadline && !stopped()) {
    batch.clear();
    consumer_->poll_batch(batch, 100, std::chrono::milliseconds(50));
    for (const auto& mp : batch) {
      const kafka::Message m(mp);
      if (m.partition() != partition || m.offset() < offset) continue;  // an earlier assignment's
      if (m.error() == kafka::errc::partition_eof) {
        if (m.offset() >= high_[p]) return std::nullopt;  // nothing at or after `offset`
        continue;
      }
      if (m.error()) continue;  // transient: librdkafka retries
      log_append_time_ = log_append_time_ || m.log_append_time();
      return Probe{m.offset(), m.timestamp()};
    }
  }
  failed = true;
  return std::nullopt;
}

std::optional<std::int64_t> ChangelogReader::search(std::int32_t partition, std::int64_t time_ms,
                                                    const std::function<bool()>& stopped) {
  const auto p = static_cast<std::size_t>(partition);
  ++searched_;
  std::int64_t lo = low_[p], hi = high_[p];
  bool failed = false;
  // The first offset whose first record at or after it is stamped >= time_ms.
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    const std::optional<Probe> found = probe(partition, mid, stopped, failed);
    if (stopped()) return std::nullopt;
    if (failed) return low_[p];  // no answer: read it all
    if (!found || found->timestamp >= time_ms) {
      hi = mid;
    } else {
      lo = found->offset + 1;
    }
  }
  return lo;
}

std::optional<std::vector<std::int64_t>> ChangelogReader::offsets_for_time(
    std::int64_t time_ms, const std::function<bool()>& stopped) {
  std::vector<std::int64_t> out = low_;
  // Times below 1 are Kafka's special offsets (-1 end, -2 beginning...).
  if (time_ms <= 0) return out;
  // Asked up to 3 times: a partition left without an answer is read from its
  // start, which for a changelog of days is far more than a window.
  std::vector<std::optional<std::int64_t>> answers(high_.size());
  kafka::ErrorCode last_error;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0 && stopped()) return std::nullopt;
    kafka::TopicPartitions list(static_cast<int>(high_.size()));
    bool asked = false;
    for (std::size_t p = 0; p < high_.size(); ++p) {
      if (high_[p] <= low_[p] || answers[p]) continue;  // empty, or answered already
      list.add(topic_, static_cast<std::int32_t>(p), time_ms);
      asked = true;
    }
    if (!asked) break;
    const kafka::ErrorCode err = consumer_->offsets_for_times(list, metadata_timeout_);
    for (std::size_t p = 0; p < high_.size(); ++p) {
      if (high_[p] <= low_[p] || answers[p]) continue;
      const auto answer = list.find(topic_, static_cast<std::int32_t>(p));
      if (!err && answer && !answer->error) {
        answers[p] = answer->offset;
      } else {
        last_error = err ? err : answer ? answer->error : kafka::errc::fail;
      }
    }
  }
  for (std::size_t p = 0; p < high_.size(); ++p) {
    if (high_[p] <= low_[p]) continue;  // empty
    if (!answers[p]) {                  // no answer: read it all (low)
      ++unanswered_;
      unanswered_reason_ = kafka::describe(last_error);
      continue;
    }
    std::int64_t offset = *answers[p] < 0 ? high_[p] : *answers[p];  // < 0: none is
    // "None" while a record read already says otherwise: a broker that cannot
    // look offsets up by time. Search by reading.
    if (offset >= high_[p] && newest_[p] >= time_ms) {
      const std::optional<std::int64_t> searched =
          search(static_cast<std::int32_t>(p), time_ms, stopped);
      if (!searched) return std::nullopt;
      offset = *searched;
    }
    out[p] = std::clamp(offset, low_[p], high_[p]);
  }
  return out;
}

bool ChangelogReader::read_to_end(const Visit& visit, const Corrupt& corrupt,
                                  std::chrono::milliseconds limit) {
  start_if_unassigned();
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
  start_if_unassigned();
  std::vector<kafka::MessagePtr> batch;
  consumer_->poll_batch(batch, max, std::chrono::milliseconds(0));
  for (const auto& m : batch) consume(m, visit, corrupt);
}

}  // namespace neardup::stream
