#include "stream/kafka/clients/producer.h"

#include <librdkafka/rdkafka.h>

#include "stream/kafka/clients/broker_health.h"

namespace neardup::stream::kafka {

static_assert(kAnyPartition == RD_KAFKA_PARTITION_UA);

namespace {

rd_kafka_t* raw(ClientHandle* client) { return reinterpret_cast<rd_kafka_t*>(client); }

}  // namespace

/// librdkafka's callbacks, with the producer as their opaque.
struct Producer::Callbacks {
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
    auto* self = static_cast<Producer*>(opaque);
    if (self->on_delivery_)
      self->on_delivery_(Message(reinterpret_cast<const MessageHandle*>(message)));
  }

  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    auto* self = static_cast<Producer*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__FATAL)
      self->fatal_reason_ = fatal_reason_of(reinterpret_cast<ClientHandle*>(rk));
    // Other errors are transient: librdkafka retries and reports per record; the
    // broker connection state is BrokerHealth's to tell.
    if (self->health_)
      self->health_->on_error(rd_kafka_name(rk), ErrorCode(err), reason ? reason : "");
  }

  static int on_statistics(rd_kafka_t* rk, char* json, size_t size, void* opaque) {
    auto* self = static_cast<Producer*>(opaque);
    if (self->health_)
      self->health_->on_statistics(rd_kafka_name(rk), std::string_view(json, size));
    return 0;  // librdkafka frees the JSON
  }
};

Producer::Producer(const Properties& properties, DeliveryHandler on_delivery, BrokerHealth* health)
    : on_delivery_(std::move(on_delivery)), health_(health) {
  create(properties);
}

Producer::Producer(const Properties& properties, std::nullptr_t, BrokerHealth* health)
    : health_(health) {
  create(properties);
}

void Producer::create(const Properties& properties) {
  ConfPtr conf = make_client_conf(properties, this, health_);
  auto* raw_conf = reinterpret_cast<rd_kafka_conf_t*>(conf.get());
  if (health_) rd_kafka_conf_set_stats_cb(raw_conf, &Callbacks::on_statistics);
  rd_kafka_conf_set_dr_msg_cb(raw_conf, &Callbacks::on_delivery);
  rd_kafka_conf_set_error_cb(raw_conf, &Callbacks::on_error);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, raw_conf, errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka producer: ") + errstr, errc::invalid_arg,
                     Severity::fatal);
  conf.release();  // owned by rk now
  rk_.reset(reinterpret_cast<ClientHandle*>(rk));
}

Producer::~Producer() {
  for (auto& [name, rkt] : topics_)
    rd_kafka_topic_destroy(reinterpret_cast<rd_kafka_topic_t*>(rkt));
  // Records still queued are purged by rd_kafka_destroy; callers flush first.
}

Producer::TopicHandle* Producer::topic(std::string_view name) {
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(raw(rk_.get()), std::string(name).c_str(), nullptr);
  if (!rkt) {
    rd_kafka_resp_err_t err = rd_kafka_last_error();
    throw KafkaError("cannot open topic '" + std::string(name) + "': " + rd_kafka_err2str(err),
                     ErrorCode(err), Severity::fatal);
  }
  auto* handle = reinterpret_cast<TopicHandle*>(rkt);
  topics_.emplace(std::string(name), handle);
  return handle;
}

ErrorCode Producer::produce(const Record& record, Headers headers) {
  Record with = record;
  with.headers = headers.headers_.release();
  return produce(with);
}

ErrorCode Producer::produce(const Record& record) {
  auto* rkt = reinterpret_cast<rd_kafka_topic_t*>(topic(record.topic));
  auto* headers = reinterpret_cast<rd_kafka_headers_t*>(record.headers);
  for (;;) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        raw(rk_.get()), RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(record.partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(record.has_value ? const_cast<char*>(record.value.data()) : nullptr,
                         record.has_value ? record.value.size() : 0),
        RD_KAFKA_V_KEY(record.has_key ? record.key.data() : nullptr,
                       record.has_key ? record.key.size() : 0),
        RD_KAFKA_V_TIMESTAMP(record.timestamp_ms), RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(record.opaque), RD_KAFKA_V_END);
    if (!err) return errc::no_error;  // headers now owned by librdkafka
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      // Backpressure: serve delivery reports until librdkafka has room.
      rd_kafka_poll(raw(rk_.get()), 10);
      if (fatal()) {
        if (headers) rd_kafka_headers_destroy(headers);
        throw KafkaError("producer: " + fatal_reason(), errc::fatal, Severity::fatal);
      }
      continue;
    }
    if (headers) rd_kafka_headers_destroy(headers);
    const ErrorCode code(err);
    Severity severity = classify(code, code == errc::fatal);
    if (severity == Severity::fatal) {
      std::string reason = rd_kafka_err2str(err);
      // (the error callback that says why may not have been served yet)
      if (code == errc::fatal && fatal()) reason = fatal_reason();
      throw KafkaError("producing to '" + std::string(record.topic) + "': " + reason, code,
                       severity);
    }
    return code;
  }
}

bool Producer::fatal() const {
  return !fatal_reason_.empty() ||
         rd_kafka_fatal_error(raw(rk_.get()), nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR;
}

std::string Producer::fatal_reason() const {
  if (!fatal_reason_.empty()) return fatal_reason_;
  if (rd_kafka_fatal_error(raw(rk_.get()), nullptr, 0) == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return fatal_reason_of(rk_.get());
}

int Producer::poll(std::chrono::milliseconds timeout) {
  return rd_kafka_poll(raw(rk_.get()), static_cast<int>(timeout.count()));
}

bool Producer::flush(std::chrono::milliseconds timeout) {
  return rd_kafka_flush(raw(rk_.get()), static_cast<int>(timeout.count())) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

int Producer::in_flight() const { return rd_kafka_outq_len(raw(rk_.get())); }

void Producer::purge() {
  rd_kafka_purge(raw(rk_.get()), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
}

bool Producer::cluster_holds_empty_fetches() const { return holds_empty_fetches(rk_.get()); }

int Producer::partition_count(const std::string& topic, std::chrono::milliseconds timeout) const {
  return kafka::partition_count(rk_.get(), topic, timeout);
}

}  // namespace neardup::stream::kafka
