#include "stream/kafka/clients/admin.h"

#include <librdkafka/rdkafka.h>

#include <charconv>
#include <cstddef>
#include <memory>
#include <string_view>

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

/// An admin request's result event, with the client and queue it came from
/// (declared first: destroyed after the event).
struct AdminAnswer {
  HandlePtr client;
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue;
  std::unique_ptr<rd_kafka_event_t, EventDeleter> event;
};

/// Sends one admin request (`send` enqueues it on the queue it is given) and
/// returns its result event, or throws KafkaError when the request failed.
template <typename Send>
AdminAnswer admin_event(const Properties& properties, rd_kafka_admin_op_t op,
                        std::chrono::milliseconds timeout, const char* what, Send send) {
  AdminAnswer answer;
  answer.client = admin_client(properties);
  auto* rk = reinterpret_cast<rd_kafka_t*>(answer.client.get());
  std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter> options(
      rd_kafka_AdminOptions_new(rk, op));
  char errstr[512];
  const int ms = static_cast<int>(timeout.count());
  rd_kafka_AdminOptions_set_request_timeout(options.get(), ms, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), ms, errstr, sizeof errstr);
  answer.queue.reset(rd_kafka_queue_new(rk));
  send(rk, options.get(), answer.queue.get());
  // (the request timeout bounds the wait; the margin covers the connection)
  answer.event.reset(rd_kafka_queue_poll(answer.queue.get(), ms + 5000));
  if (!answer.event)
    throw KafkaError(std::string(what) + ": no answer from " + properties.at("bootstrap.servers") +
                         " within " + std::to_string(timeout.count() / 1000) + " s",
                     errc::timed_out, Severity::retriable);
  if (const rd_kafka_resp_err_t err = rd_kafka_event_error(answer.event.get())) {
    throw KafkaError(std::string(what) + " (" + properties.at("bootstrap.servers") +
                         "): " + rd_kafka_event_error_string(answer.event.get()),
                     ErrorCode(err), classify(ErrorCode(err)));
  }
  return answer;
}

/// admin_event(), then the outcome of each topic in its result event.
template <typename Send, typename Results>
std::vector<TopicOutcome> admin_request(const Properties& properties, rd_kafka_admin_op_t op,
                                        std::chrono::milliseconds timeout, const char* what,
                                        Send send, Results results_of) {
  const AdminAnswer answer = admin_event(properties, op, timeout, what, send);
  std::size_t n = 0;
  const rd_kafka_topic_result_t** results = results_of(answer.event.get(), &n);
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

std::vector<TopicRecordLimit> describe_record_limits(const Properties& properties,
                                                     const std::vector<std::string>& topics,
                                                     std::chrono::milliseconds timeout) {
  {
    // librdkafka's mock cluster never answers DescribeConfigs (it waits for a
    // controller it does not name): asked of it, nothing is known.
    HandlePtr probe = admin_client(properties);
    auto* rk = reinterpret_cast<rd_kafka_t*>(probe.get());
    char* id = rd_kafka_clusterid(rk, static_cast<int>(timeout.count()));
    if (id == nullptr)
      throw KafkaError("describe topic configs: no answer from " +
                           properties.at("bootstrap.servers") + " within " +
                           std::to_string(timeout.count() / 1000) + " s",
                       errc::timed_out, Severity::retriable);
    const bool mock = std::string_view(id).starts_with("mockCluster");
    rd_kafka_mem_free(rk, id);
    if (mock) return {};
  }
  std::vector<rd_kafka_ConfigResource_t*> requests;
  for (const std::string& t : topics)
    requests.push_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, t.c_str()));
  struct Release {
    std::vector<rd_kafka_ConfigResource_t*>& r;
    ~Release() {
      for (rd_kafka_ConfigResource_t* c : r) rd_kafka_ConfigResource_destroy(c);
    }
  } release{requests};
  const AdminAnswer answer =
      admin_event(properties, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout, "describe topic configs",
                  [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
                    rd_kafka_DescribeConfigs(rk, requests.data(), requests.size(), options, queue);
                  });
  std::size_t n = 0;
  const rd_kafka_ConfigResource_t** resources = rd_kafka_DescribeConfigs_result_resources(
      rd_kafka_event_DescribeConfigs_result(answer.event.get()), &n);
  std::vector<TopicRecordLimit> limits;
  for (std::size_t i = 0; i < n; ++i) {
    TopicRecordLimit& l = limits.emplace_back();
    l.name = rd_kafka_ConfigResource_name(resources[i]);
    l.err = ErrorCode(rd_kafka_ConfigResource_error(resources[i]));
    if (const char* message = rd_kafka_ConfigResource_error_string(resources[i]))
      l.message = message;
    std::size_t entries = 0;
    const rd_kafka_ConfigEntry_t** configs =
        rd_kafka_ConfigResource_configs(resources[i], &entries);
    // Kafka answers the topic's effective max.message.bytes; a broker that lists
    // its own message.max.bytes among a topic's configs (kfake) applies it too:
    // the smaller of the two.
    for (std::size_t e = 0; e < entries; ++e) {
      const std::string_view name = rd_kafka_ConfigEntry_name(configs[e]);
      if (name != "max.message.bytes" && name != "message.max.bytes") continue;
      const char* value = rd_kafka_ConfigEntry_value(configs[e]);
      std::int64_t bytes = -1;
      if (value == nullptr) continue;
      const std::string_view v(value);
      if (std::from_chars(v.data(), v.data() + v.size(), bytes).ec != std::errc() || bytes <= 0)
        continue;
      if (l.max_message_bytes < 0 || bytes < l.max_message_bytes) l.max_message_bytes = bytes;
    }
  }
  return limits;
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
