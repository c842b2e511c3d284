#include "stream/kafka/clients/admin.h"

#include <librdkafka/rdkafka.h>

#include <cstddef>
#include <memory>

#include "stream/kafka/handle.h"

namespace neardup::stream::kafka {

namespace {

struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
struct AdminOptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};

/// An admin client: a producer handle that never produces.
HandlePtr admin_client(const Properties& properties) {
  ConfPtr conf = make_conf(properties);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, reinterpret_cast<rd_kafka_conf_t*>(conf.get()),
                                errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka admin client: ") + errstr, errc::invalid_arg,
                     Severity::fatal);
  conf.release();
  return HandlePtr(reinterpret_cast<ClientHandle*>(rk));
}

/// Sends one admin request (`send` enqueues it on the queue it is given) and
/// returns the outcome of each topic in its result event.
template <typename Send, typename Results>
std::vector<TopicOutcome> admin_request(const Properties& properties, rd_kafka_admin_op_t op,
                                        std::chrono::milliseconds timeout, const char* what,
                                        Send send, Results results_of) {
  HandlePtr client = admin_client(properties);
  auto* rk = reinterpret_cast<rd_kafka_t*>(client.get());
  std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter> options(
      rd_kafka_AdminOptions_new(rk, op));
  char errstr[512];
  const int ms = static_cast<int>(timeout.count());
  rd_kafka_AdminOptions_set_request_timeout(options.get(), ms, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), ms, errstr, sizeof errstr);
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue(rd_kafka_queue_new(rk));
  send(rk, options.get(), queue.get());
  // (the request timeout bounds the wait; the margin covers the connection)
  std::unique_ptr<rd_kafka_event_t, EventDeleter> event(
      rd_kafka_queue_poll(queue.get(), ms + 5000));
  if (!event)
    throw KafkaError(std::string(what) + ": no answer from " + properties.at("bootstrap.servers") +
                         " within " + std::to_string(timeout.count() / 1000) + " s",
                     errc::timed_out, Severity::retriable);
  if (const rd_kafka_resp_err_t err = rd_kafka_event_error(event.get())) {
    throw KafkaError(std::string(what) + " (" + properties.at("bootstrap.servers") +
                         "): " + rd_kafka_event_error_string(event.get()),
                     ErrorCode(err), classify(ErrorCode(err)));
  }
  std::size_t n = 0;
  const rd_kafka_topic_result_t** results = results_of(event.get(), &n);
  std::vector<TopicOutcome> outcomes;
  for (std::size_t i = 0; i < n; ++i) {
    TopicOutcome& o = outcomes.emplace_back();
    o.name = rd_kafka_topic_result_name(results[i]);
    o.err = ErrorCode(rd_kafka_topic_result_error(results[i]));
    if (const char* message = rd_kafka_topic_result_error_string(results[i])) o.message = message;
  }
  return outcomes;
}

}  // namespace

std::vector<TopicOutcome> create_topics(const Properties& properties,
                                        const std::vector<NewTopic>& topics,
                                        std::chrono::milliseconds timeout) {
  std::vector<rd_kafka_NewTopic_t*> requests;
  auto release = [&] {
    for (rd_kafka_NewTopic_t* t : requests) rd_kafka_NewTopic_destroy(t);
  };
  char errstr[512];
  for (const NewTopic& t : topics) {
    rd_kafka_NewTopic_t* request = rd_kafka_NewTopic_new(
        t.name.c_str(), t.partitions, t.replication_factor, errstr, sizeof errstr);
    if (!request) {
      release();
      throw KafkaError("topic '" + t.name + "': " + errstr, errc::invalid_arg, Severity::fatal);
    }
    requests.push_back(request);
    for (const auto& [name, value] : t.configs) {
      if (rd_kafka_resp_err_t err =
              rd_kafka_NewTopic_set_config(request, name.c_str(), value.c_str())) {
        release();
        throw KafkaError("topic '" + t.name + "': config " + name + ": " + rd_kafka_err2str(err),
                         ErrorCode(err), Severity::fatal);
      }
    }
  }
  try {
    auto outcomes = admin_request(
        properties, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout, "create topics",
        [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
          rd_kafka_CreateTopics(rk, requests.data(), requests.size(), options, queue);
        },
        [](rd_kafka_event_t* event, std::size_t* n) {
          return rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event), n);
        });
    release();
    return outcomes;
  } catch (...) {
    release();
    throw;
  }
}

std::vector<TopicOutcome> delete_topics(const Properties& properties,
                                        const std::vector<std::string>& topics,
                                        std::chrono::milliseconds timeout) {
  std::vector<rd_kafka_DeleteTopic_t*> requests;
  for (const std::string& t : topics) requests.push_back(rd_kafka_DeleteTopic_new(t.c_str()));
  auto release = [&] {
    for (rd_kafka_DeleteTopic_t* t : requests) rd_kafka_DeleteTopic_destroy(t);
  };
  try {
    auto outcomes = admin_request(
        properties, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout, "delete topics",
        [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
          rd_kafka_DeleteTopics(rk, requests.data(), requests.size(), options, queue);
        },
        [](rd_kafka_event_t* event, std::size_t* n) {
          return rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(event), n);
        });
    release();
    return outcomes;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace neardup::stream::kafka
