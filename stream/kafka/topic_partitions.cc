#include "stream/kafka/topic_partitions.h"

namespace neardup::stream::kafka {

TopicPartitions::TopicPartitions(int capacity)
    : list_(rd_kafka_topic_partition_list_new(capacity)) {}

TopicPartitions::TopicPartitions(const rd_kafka_topic_partition_list_t& list)
    : list_(rd_kafka_topic_partition_list_copy(&list)) {}

void TopicPartitions::add(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  rd_kafka_topic_partition_list_add(list_.get(), topic.c_str(), partition)->offset = offset;
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
