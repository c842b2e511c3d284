#include "stream/embedded_broker.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace neardup::stream {

EmbeddedBroker::EmbeddedBroker(int brokers) {
  // The mock cluster lives inside a librdkafka handle; a bare producer that
  // never produces is the lightest host.
  kafka::ConfPtr conf = kafka::make_conf({{"log_level", "3"}});
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr);
  if (!rk) {
    throw kafka::KafkaError(std::string("embedded broker: cannot create host client: ") + errstr,
                            RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
  }
  conf.release();
  host_.reset(rk);
  cluster_ = rd_kafka_mock_cluster_new(rk, brokers);
  if (!cluster_) {
    throw kafka::KafkaError("embedded broker: cannot start the mock cluster (no free loopback port?)",
                            RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
  }
}

EmbeddedBroker::~EmbeddedBroker() {
  if (cluster_) rd_kafka_mock_cluster_destroy(cluster_);
}

std::string EmbeddedBroker::bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }

void EmbeddedBroker::create_topic(const std::string& topic, int partitions) {
  rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1);
  if (err && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    throw kafka::KafkaError("embedded broker: create topic '" + topic + "': " + rd_kafka_err2str(err), err,
                            kafka::Severity::fatal);
  }
}

void EmbeddedBroker::set_down(int id) { rd_kafka_mock_broker_set_down(cluster_, id); }
void EmbeddedBroker::set_up(int id) { rd_kafka_mock_broker_set_up(cluster_, id); }

void EmbeddedBroker::push_request_errors(int api_key, const std::vector<rd_kafka_resp_err_t>& errors) {
  rd_kafka_mock_push_request_errors_array(cluster_, static_cast<std::int16_t>(api_key), errors.size(), errors.data());
}

std::vector<std::string> service_topics(const config::KafkaOptions& kafka) {
  std::vector<std::string> topics = kafka.input_topics;
  for (const auto* t : {&kafka.output_topic, &kafka.duplicates_topic, &kafka.dead_letter_topic, &kafka.changelog_topic}) {
    if (!t->empty() && std::find(topics.begin(), topics.end(), *t) == topics.end()) topics.push_back(*t);
  }
  return topics;
}

void write_bootstrap_file(const std::string& path, const std::string& bootstrap) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << bootstrap << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write bootstrap file '" + temp + "'");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot write bootstrap file '" + path + "'");
  }
}

}  // namespace neardup::stream
