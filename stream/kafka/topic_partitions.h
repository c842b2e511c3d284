#pragma once
// Lists of topic-partitions with an offset each.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "stream/kafka/errors.h"

namespace neardup::stream {
class TransactionCycle;
}  // namespace neardup::stream

namespace neardup::stream::kafka {

/// Offsets with a meaning of their own: a partition's first and next-to-be-written
/// offsets (where to start reading), and no offset at all (none committed).
/// (librdkafka's numbers: topic_partitions.cc checks them.)
inline constexpr std::int64_t kOffsetBeginning = -2;
inline constexpr std::int64_t kOffsetEnd = -1;
inline constexpr std::int64_t kOffsetInvalid = -1001;

/// librdkafka's partition list, opaque (topic_partitions.cc and the clients convert it).
struct PartitionListHandle;
struct PartitionListDeleter {
  void operator()(PartitionListHandle* list) const;
};
using PartitionListPtr = std::unique_ptr<PartitionListHandle, PartitionListDeleter>;

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
/// amortized O(1); find() is O(size); the accessors are out-of-line calls.
class TopicPartitions {
 public:
  explicit TopicPartitions(int capacity = 0);
  TopicPartitions(TopicPartitions&&) noexcept = default;
  TopicPartitions& operator=(TopicPartitions&&) noexcept = default;

  void add(const std::string& topic, std::int32_t partition, std::int64_t offset = kOffsetInvalid);
  std::size_t size() const;
  bool empty() const { return size() == 0; }
  TopicPartition operator[](std::size_t i) const;
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
  /// Takes `list` (stream/kafka/ and its callbacks).
  explicit TopicPartitions(PartitionListPtr list) : list_(std::move(list)) {}
  PartitionListPtr list_;
};

}  // namespace neardup::stream::kafka
