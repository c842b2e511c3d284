#pragma once
// Lists of topic-partitions with an offset each.

#include <librdkafka/rdkafka.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stream/kafka/errors.h"

namespace neardup::stream {
class TransactionCycle;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// Offsets with a meaning of their own: a partition's first and next-to-be-written
/// offsets (where to start reading), and no offset at all (none committed).
inline constexpr std::int64_t kOffsetBeginning = RD_KAFKA_OFFSET_BEGINNING;
inline constexpr std::int64_t kOffsetEnd = RD_KAFKA_OFFSET_END;
inline constexpr std::int64_t kOffsetInvalid = RD_KAFKA_OFFSET_INVALID;

struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using PartitionListPtr = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;

/// One entry of a TopicPartitions: `topic` is a view into the list.
struct TopicPartition {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = kOffsetInvalid;
  /// What the broker answered for this partition (a commit, committed()).
  ErrorCode error = errc::no_error;
};

/// An owning list of topic-partitions with an offset each: what is assigned,
/// committed, looked up or sought. It holds librdkafka's list itself, so the
/// clients take it as it is (no copy). Move-only; not thread-safe. add() is
/// amortized O(1); find() is O(size).
class TopicPartitions {
 public:
  explicit TopicPartitions(int capacity = 0);
  /// A copy of librdkafka's list (stream/kafka/ and its callbacks).
  explicit TopicPartitions(const rd_kafka_topic_partition_list_t& list);
  TopicPartitions(TopicPartitions&&) noexcept = default;
  TopicPartitions& operator=(TopicPartitions&&) noexcept = default;

  void add(const std::string& topic, std::int32_t partition, std::int64_t offset = kOffsetInvalid);
  std::size_t size() const { return static_cast<std::size_t>(list_->cnt); }
  bool empty() const { return list_->cnt == 0; }
  TopicPartition operator[](std::size_t i) const {
    const rd_kafka_topic_partition_t& e = list_->elems[i];
    return {e.topic, e.partition, e.offset, e.err};
  }
  /// The entry for (topic, partition), if any.
  std::optional<TopicPartition> find(std::string_view topic, std::int32_t partition) const;
  /// Whether some entry is a partition of `topic`.
  bool has_topic(std::string_view topic) const;

  class Iterator {
   public:
    using value_type = TopicPartition;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const TopicPartitions* list, std::size_t i) : list_(list), i_(i) {}
    TopicPartition operator*() const { return (*list_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++i_;
      return before;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    const TopicPartitions* list_ = nullptr;
    std::size_t i_ = 0;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  friend class Consumer;
  friend class ::neardup::stream::TransactionCycle;
  PartitionListPtr list_;
};

}  // namespace neardup::stream::kafka
