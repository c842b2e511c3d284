#include "stream/kafka/topic_partitions.h"

#include <librdkafka/rdkafka.h>

namespace neardup::stream::kafka {

static_assert(kOffsetBeginning == RD_KAFKA_OFFSET_BEGINNING);
static_assert(kOffsetEnd == RD_KAFKA_OFFSET_END);
static_assert(kOffsetInvalid == RD_KAFKA_OFFSET_INVALID);

namespace {

rd_kafka_topic_partition_list_t* raw(PartitionListHandle* list) {
  return reinterpret_cast<rd_kafka_topic_partition_list_t*>(list);
}

}  // namespace

void PartitionListDeleter::operator()(PartitionListHandle* list) const {
  rd_kafka_topic_partition_list_destroy(raw(list));
}

TopicPartitions::TopicPartitions(int capacity)
    : list_(reinterpret_cast<PartitionListHandle*>(rd_kafka_topic_partition_list_new(capacity))) {}

void TopicPartitions::add(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  rd_kafka_topic_partition_list_add(raw(list_.get()), topic.c_str(), partition)->offset = offset;
}

std::size_t TopicPartitions::size() const {
  return static_cast<std::size_t>(raw(list_.get())->cnt);
}

TopicPartition TopicPartitions::operator[](std::size_t i) const {
  const rd_kafka_topic_partition_t& e = raw(list_.get())->elems[i];
  return {e.topic, e.partition, e.offset, ErrorCode(e.err)};
}

std::optional<TopicPartition> TopicPartitions::find(std::string_view topic,
                                                    std::int32_t partition) const {
  for (std::size_t i = 0; i < size(); ++i) {
    const TopicPartition e = (*this)[i];
    if (e.partition == partition && e.topic == topic) return e;
  }
  return std::nullopt;
}

bool TopicPartitions::has_topic(std::string_view topic) const {
  for (std::size_t i = 0; i < size(); ++i)
    if ((*this)[i].topic == topic) return true;
  return false;
}

}  // namespace neardup::stream::kafka
