#include "stream/kafka/clients/producer.h"

#include "stream/kafka/clients/broker_health.h"

namespace neardup::stream::kafka {

Producer::Producer(const Properties& properties, DeliveryHandler on_delivery, BrokerHealth* health)
    : on_delivery_(std::move(on_delivery)), health_(health) {
  create(properties);
}

Producer::Producer(const Properties& properties, std::nullptr_t, BrokerHealth* health)
    : health_(health) {
  create(properties);
}

void Producer::create(const Properties& properties) {
  BrokerHealth* health = health_;
  ConfPtr conf = make_client_conf(properties, this, health, &Producer::on_statistics_cb);
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &Producer::on_delivery_cb);
  rd_kafka_conf_set_error_cb(conf.get(), &Producer::on_error_cb);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka producer: ") + errstr,
                     RD_KAFKA_RESP_ERR__INVALID_ARG, Severity::fatal);
  conf.release();  // owned by rk now
  rk_.reset(rk);
}

Producer::~Producer() {
  for (auto& [name, rkt] : topics_) rd_kafka_topic_destroy(rkt);
  // Records still queued are purged by rd_kafka_destroy; callers flush first.
}

rd_kafka_topic_t* Producer::topic(std::string_view name) {
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_.get(), std::string(name).c_str(), nullptr);
  if (!rkt) {
    rd_kafka_resp_err_t err = rd_kafka_last_error();
    throw KafkaError("cannot open topic '" + std::string(name) + "': " + rd_kafka_err2str(err), err,
                     Severity::fatal);
  }
  topics_.emplace(std::string(name), rkt);
  return rkt;
}

ErrorCode Producer::produce(const Record& record, Headers headers) {
  Record with = record;
  with.headers = headers.headers_.release();
  return produce(with);
}

ErrorCode Producer::produce(const Record& record) {
  rd_kafka_topic_t* rkt = topic(record.topic);
  rd_kafka_headers_t* headers = record.headers;
  for (;;) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk_.get(), RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(record.partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(record.has_value ? const_cast<char*>(record.value.data()) : nullptr,
                         record.has_value ? record.value.size() : 0),
        RD_KAFKA_V_KEY(record.has_key ? record.key.data() : nullptr,
                       record.has_key ? record.key.size() : 0),
        RD_KAFKA_V_TIMESTAMP(record.timestamp_ms), RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(record.opaque), RD_KAFKA_V_END);
    if (!err) return err;  // headers now owned by librdkafka
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      // Backpressure: serve delivery reports until librdkafka has room.
      rd_kafka_poll(rk_.get(), 10);
      if (fatal()) {
        if (headers) rd_kafka_headers_destroy(headers);
        throw KafkaError("producer: " + fatal_reason_, RD_KAFKA_RESP_ERR__FATAL, Severity::fatal);
      }
      continue;
    }
    if (headers) rd_kafka_headers_destroy(headers);
    Severity severity = classify(err, err == RD_KAFKA_RESP_ERR__FATAL);
    if (severity == Severity::fatal) {
      std::string reason = rd_kafka_err2str(err);
      if (err == RD_KAFKA_RESP_ERR__FATAL) reason = fatal_reason_.empty() ? reason : fatal_reason_;
      throw KafkaError("producing to '" + std::string(record.topic) + "': " + reason, err,
                       severity);
    }
    return err;
  }
}

int Producer::poll(std::chrono::milliseconds timeout) {
  return rd_kafka_poll(rk_.get(), static_cast<int>(timeout.count()));
}

bool Producer::flush(std::chrono::milliseconds timeout) {
  return rd_kafka_flush(rk_.get(), static_cast<int>(timeout.count())) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

int Producer::in_flight() const { return rd_kafka_outq_len(rk_.get()); }

void Producer::purge() {
  rd_kafka_purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
}

int Producer::partition_count(const std::string& topic, std::chrono::milliseconds timeout) const {
  return kafka::partition_count(rk_.get(), topic, timeout);
}

void Producer::on_delivery_cb(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  auto* self = static_cast<Producer*>(opaque);
  if (self->on_delivery_) self->on_delivery_(Message(*message));
}

void Producer::on_error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<Producer*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__FATAL) self->fatal_reason_ = fatal_reason_of(rk);
  // Other errors are transient: librdkafka retries and reports per record; the
  // broker connection state is BrokerHealth's to tell.
  if (self->health_) self->health_->on_error(rd_kafka_name(rk), err, reason ? reason : "");
}

int Producer::on_statistics_cb(rd_kafka_t* rk, char* json, size_t size, void* opaque) {
  auto* self = static_cast<Producer*>(opaque);
  if (self->health_) self->health_->on_statistics(rd_kafka_name(rk), std::string_view(json, size));
  return 0;  // librdkafka frees the JSON
}

}  // namespace neardup::stream::kafka
