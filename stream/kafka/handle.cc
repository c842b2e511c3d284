#include "stream/kafka/handle.h"

#include <string_view>

#include <librdkafka/rdkafka.h>

#include "stream/kafka/errors.h"

namespace neardup::stream::kafka {

namespace {

rd_kafka_t* raw(ClientHandle* client) { return reinterpret_cast<rd_kafka_t*>(client); }

}  // namespace

void HandleDeleter::operator()(ClientHandle* client) const { rd_kafka_destroy(raw(client)); }

ConfPtr make_client_conf(const Properties& properties, void* opaque, BrokerHealth* health) {
  ConfPtr conf;
  if (health && !properties.contains("statistics.interval.ms")) {
    Properties with_statistics = properties;
    with_statistics.emplace("statistics.interval.ms", kHealthStatisticsMs);
    conf = make_conf(with_statistics);
  } else {
    conf = make_conf(properties);
  }
  rd_kafka_conf_set_opaque(reinterpret_cast<rd_kafka_conf_t*>(conf.get()), opaque);
  return conf;
}

std::string fatal_reason_of(ClientHandle* client) {
  char buf[512];
  rd_kafka_resp_err_t orig = rd_kafka_fatal_error(raw(client), buf, sizeof buf);
  return std::string(rd_kafka_err2name(orig)) + ": " + buf;
}

bool holds_empty_fetches(ClientHandle* client) {
  // (the mock cluster's id is "mockCluster" and a hex number)
  char* id = rd_kafka_clusterid(raw(client), 0);
  if (id == nullptr) return false;
  const bool mock = std::string_view(id).starts_with("mockCluster");
  rd_kafka_mem_free(raw(client), id);
  return !mock;
}

int partition_count(ClientHandle* client, const std::string& topic,
                    std::chrono::milliseconds timeout) {
  rd_kafka_t* rk = raw(client);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk, 0, rkt, &metadata, static_cast<int>(timeout.count()));
  rd_kafka_topic_destroy(rkt);
  if (err) {
    throw KafkaError("metadata for topic '" + topic + "': " + rd_kafka_err2str(err), ErrorCode(err),
                     classify(ErrorCode(err)));
  }
  int count = 0;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const auto& t = metadata->topics[i];
    if (topic == t.topic && t.err == RD_KAFKA_RESP_ERR_NO_ERROR) count = t.partition_cnt;
  }
  rd_kafka_metadata_destroy(metadata);
  return count;
}

}  // namespace neardup::stream::kafka
