#include "stream/kafka/kafka.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "stream/kafka/broker_health.h"

namespace neardup::stream::kafka {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::fatal:
      return "fatal";
    case Severity::retriable:
      return "retriable";
    case Severity::message:
      return "message";
  }
  return "unknown";
}

std::string error_name(ErrorCode code) { return rd_kafka_err2name(code); }

std::string describe(ErrorCode code) { return rd_kafka_err2str(code); }

Severity classify(ErrorCode err, bool fatal_flag) {
  if (fatal_flag || err == RD_KAFKA_RESP_ERR__FATAL) return Severity::fatal;
  switch (err) {
    // The record itself cannot be written; the client and the rest of the stream are fine.
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR__BAD_MSG:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return Severity::message;
    // Configuration, authorization and missing topics: retrying cannot help.
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED:
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
    case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR__FENCED:
      return Severity::fatal;
    default:
      return Severity::retriable;
  }
}

base::LogLevel log_level_of(int syslog_level) {
  if (syslog_level <= 3) return base::LogLevel::error;  // emerg, alert, crit, err
  if (syslog_level == 4) return base::LogLevel::warn;
  if (syslog_level <= 6) return base::LogLevel::info;  // notice, info
  return base::LogLevel::debug;
}

namespace {

// Called on librdkafka's own threads (log.queue is false): base::log is thread-safe.
void on_log(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
  base::LogLevel ours = log_level_of(level);
  // A connection that failed (facility FAIL) is retried by librdkafka and an
  // outage of every broker is told in neardup's own words (BrokerHealth):
  // a warning, not an error that pages someone.
  if (ours == base::LogLevel::error && facility && std::strcmp(facility, "FAIL") == 0)
    ours = base::LogLevel::warn;
  if (!base::log_enabled(ours)) return;
  base::log(
      ours, text ? text : "",
      {{"client", rk ? rd_kafka_name(rk) : "rdkafka"}, {"facility", facility ? facility : ""}});
}

/// make_conf() plus the callbacks that feed `health`, if any.
ConfPtr make_client_conf(const Properties& properties, void* opaque, BrokerHealth* health,
                         int (*on_statistics)(rd_kafka_t*, char*, size_t, void*)) {
  ConfPtr conf;
  if (health && !properties.contains("statistics.interval.ms")) {
    Properties with_statistics = properties;
    with_statistics.emplace("statistics.interval.ms", kHealthStatisticsMs);
    conf = make_conf(with_statistics);
  } else {
    conf = make_conf(properties);
  }
  rd_kafka_conf_set_opaque(conf.get(), opaque);
  if (health) rd_kafka_conf_set_stats_cb(conf.get(), on_statistics);
  return conf;
}

/// The fatal error's reason as "ERR_NAME: text", for fatal_reason().
std::string fatal_reason_of(rd_kafka_t* rk) {
  char buf[512];
  rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof buf);
  return std::string(rd_kafka_err2name(orig)) + ": " + buf;
}

}  // namespace

ConfPtr make_conf(const Properties& properties) {
  ConfPtr conf(rd_kafka_conf_new());
  rd_kafka_conf_set_log_cb(conf.get(), &on_log);
  char errstr[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw KafkaError("kafka property '" + name + "': " + errstr, RD_KAFKA_RESP_ERR__INVALID_ARG,
                       Severity::fatal);
    }
  }
  return conf;
}

// ---------------------------------------------------------------- Message, TopicPartitions,
// Headers

std::string Message::error_message() const { return rd_kafka_message_errstr(m_); }

std::optional<std::string_view> Message::header(const char* name) const {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m_, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  return kafka::header(headers, name);
}

namespace {

void visit_headers(const rd_kafka_headers_t* headers,
                   const std::function<void(std::string_view, std::string_view)>& visit) {
  if (!headers) return;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
    visit(name, std::string_view(static_cast<const char*>(value), value ? size : 0));
}

}  // namespace

void Message::for_each_header(
    const std::function<void(std::string_view name, std::string_view value)>& visit) const {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m_, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  visit_headers(headers, visit);
}

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

Headers Headers::copy_of(Message message) {
  Headers copy;
  rd_kafka_headers_t* headers = nullptr;
  // (a delivery report's headers are reached through the same call)
  if (rd_kafka_message_headers(message.m_, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR && headers)
    copy.headers_.reset(rd_kafka_headers_copy(headers));
  return copy;
}

std::optional<std::string_view> Headers::find(const char* name) const {
  return kafka::header(headers_.get(), name);
}

void Headers::for_each(
    const std::function<void(std::string_view name, std::string_view value)>& visit) const {
  visit_headers(headers_.get(), visit);
}

void Headers::add(std::string_view name, std::string_view value) {
  if (!headers_) headers_.reset(rd_kafka_headers_new(4));
  rd_kafka_header_add(headers_.get(), name.data(), static_cast<ssize_t>(name.size()), value.data(),
                      static_cast<ssize_t>(value.size()));
}

// ---------------------------------------------------------------- metadata

int partition_count(rd_kafka_t* rk, const std::string& topic, std::chrono::milliseconds timeout) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk, 0, rkt, &metadata, static_cast<int>(timeout.count()));
  rd_kafka_topic_destroy(rkt);
  if (err) {
    throw KafkaError("metadata for topic '" + topic + "': " + rd_kafka_err2str(err), err,
                     classify(err));
  }
  int count = 0;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const auto& t = metadata->topics[i];
    if (topic == t.topic && t.err == RD_KAFKA_RESP_ERR_NO_ERROR) count = t.partition_cnt;
  }
  rd_kafka_metadata_destroy(metadata);
  return count;
}

// ---------------------------------------------------------------- Producer

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

// ---------------------------------------------------------------- Consumer

Consumer::Consumer(const Properties& properties, RebalanceHandler on_rebalance,
                   BrokerHealth* health)
    : on_rebalance_(std::move(on_rebalance)), health_(health) {
  create(properties);
}

Consumer::Consumer(const Properties& properties, std::nullptr_t, BrokerHealth* health)
    : health_(health) {
  create(properties);
}

void Consumer::create(const Properties& properties) {
  if (const auto it = properties.find("partition.assignment.strategy"); it != properties.end())
    cooperative_configured_ = it->second.find("cooperative-sticky") != std::string::npos;
  BrokerHealth* health = health_;
  ConfPtr conf = make_client_conf(properties, this, health, &Consumer::on_statistics_cb);
  rd_kafka_conf_set_rebalance_cb(conf.get(), &Consumer::on_rebalance_cb);
  rd_kafka_conf_set_error_cb(conf.get(), &Consumer::on_error_cb);
  rd_kafka_conf_set_offset_commit_cb(conf.get(), &Consumer::on_commit_cb);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka consumer: ") + errstr,
                     RD_KAFKA_RESP_ERR__INVALID_ARG, Severity::fatal);
  conf.release();
  rk_.reset(rk);
  rd_kafka_poll_set_consumer(rk);
  queue_ = rd_kafka_queue_get_consumer(rk);
}

namespace {

std::atomic<int> g_abandoned_clients{0};
std::atomic<int> g_unfinished_closes{0};

/// rd_kafka_destroy_flags on a thread of its own, waited for at most
/// `budget`. Its callbacks cannot run: the consumer is closed (or destroyed
/// with RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE), and nothing polls it again.
void destroy_within(rd_kafka_t* rk, int flags, std::chrono::milliseconds budget) {
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  const std::string name = rd_kafka_name(rk);
  std::thread([rk, flags, done] {
    rd_kafka_destroy_flags(rk, flags);
    const std::lock_guard lock(done->mutex);
    done->done = true;
    done->cv.notify_all();
  }).detach();
  std::unique_lock lock(done->mutex);
  if (done->cv.wait_for(lock, budget, [&] { return done->done; })) return;
  g_abandoned_clients.fetch_add(1);
  base::log(base::LogLevel::warn,
            "kafka: " + name + " not destroyed within " + std::to_string(budget.count()) +
                " ms (librdkafka waits on a broker connection: brokers gone, or topics deleted "
                "under it); its threads are abandoned to the process's exit");
}

}  // namespace

int abandoned_clients() { return g_abandoned_clients.load(); }
int unfinished_closes() { return g_unfinished_closes.load(); }

Consumer::~Consumer() {
  close();
  if (queue_) rd_kafka_queue_destroy(queue_);
  queue_ = nullptr;
  if (rk_) {
    destroy_within(rk_.release(), close_finished_ ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
                   g_abandoned_clients.load() == 0 ? std::chrono::milliseconds(kDestroyBudget)
                                                   : kDestroyBudgetAfterAbandon);
  }
}

void Consumer::subscribe(const std::vector<std::string>& topics) {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(topics.size())));
  for (const auto& t : topics)
    rd_kafka_topic_partition_list_add(list.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_.get(), list.get())) {
    throw KafkaError(std::string("subscribe: ") + rd_kafka_err2str(err), err, Severity::fatal);
  }
  subscribed_ = true;
}

void Consumer::poll_batch(std::vector<MessagePtr>& out, std::size_t max,
                          std::chrono::milliseconds timeout) {
  if (max == 0) return;
  if (timeout.count() > 0) {
    // rd_kafka_consume_batch_queue waits until it has `max` messages or the
    // timeout passed: a lone message would wait the whole timeout.
    rd_kafka_message_t* first = rd_kafka_consume_queue(queue_, static_cast<int>(timeout.count()));
    if (first == nullptr) return;
    out.emplace_back(first);
    if (--max == 0) return;
  }
  std::vector<rd_kafka_message_t*> raw(max);
  const ssize_t n = rd_kafka_consume_batch_queue(queue_, 0, raw.data(), max);
  for (ssize_t i = 0; i < n; ++i) out.emplace_back(raw[static_cast<std::size_t>(i)]);
}

ErrorCode Consumer::commit(const TopicPartitions& offsets, bool async) {
  rd_kafka_resp_err_t err = rd_kafka_commit(rk_.get(), offsets.list_.get(), async ? 1 : 0);
  if (err && classify(err) == Severity::fatal && err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    throw KafkaError(std::string("offset commit: ") + rd_kafka_err2str(err), err, Severity::fatal);
  }
  return err;
}

void Consumer::on_commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (self->on_commit_) {
    if (offsets) {
      const TopicPartitions copy(*offsets);
      self->on_commit_(err, &copy);
    } else {
      self->on_commit_(err, nullptr);
    }
  }
}

ErrorCode Consumer::assign(const TopicPartitions& partitions) {
  return rd_kafka_assign(rk_.get(), partitions.list_.get());
}

ErrorCode Consumer::assignment(TopicPartitions& out) const {
  rd_kafka_topic_partition_list_t* parts = nullptr;
  const ErrorCode err = rd_kafka_assignment(rk_.get(), &parts);
  out = TopicPartitions();
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && parts) out.list_.reset(parts);
  return err;
}

bool Consumer::assignment_lost() const { return rd_kafka_assignment_lost(rk_.get()) != 0; }

bool Consumer::cooperative() const {
  // (null once the consumer is closed)
  const char* protocol = rd_kafka_rebalance_protocol(rk_.get());
  return protocol && std::strcmp(protocol, "COOPERATIVE") == 0;
}

ErrorCode Consumer::pause(const TopicPartitions& partitions) {
  return rd_kafka_pause_partitions(rk_.get(), partitions.list_.get());
}

ErrorCode Consumer::resume(const TopicPartitions& partitions) {
  return rd_kafka_resume_partitions(rk_.get(), partitions.list_.get());
}

std::string Consumer::seek(const TopicPartitions& partitions, std::chrono::milliseconds timeout) {
  rd_kafka_error_t* error = rd_kafka_seek_partitions(rk_.get(), partitions.list_.get(),
                                                     static_cast<int>(timeout.count()));
  if (error) {
    std::string what = rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
    return what;
  }
  // The call succeeds when a partition refuses (its entry says so).
  for (int i = 0; i < partitions.list_->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = partitions.list_->elems[i];
    if (e.err) return std::to_string(e.partition) + ": " + rd_kafka_err2str(e.err);
  }
  return {};
}

ErrorCode Consumer::committed(TopicPartitions& partitions, std::chrono::milliseconds timeout) {
  return rd_kafka_committed(rk_.get(), partitions.list_.get(), static_cast<int>(timeout.count()));
}

Consumer::Watermarks Consumer::query_watermarks(const std::string& topic, std::int32_t partition,
                                                std::chrono::milliseconds timeout) const {
  Watermarks w;
  w.error = rd_kafka_query_watermark_offsets(rk_.get(), topic.c_str(), partition, &w.low, &w.high,
                                             static_cast<int>(timeout.count()));
  return w;
}

Consumer::Watermarks Consumer::cached_watermarks(const std::string& topic,
                                                 std::int32_t partition) const {
  Watermarks w;
  w.error = rd_kafka_get_watermark_offsets(rk_.get(), topic.c_str(), partition, &w.low, &w.high);
  return w;
}

ErrorCode Consumer::offsets_for_times(TopicPartitions& partitions,
                                      std::chrono::milliseconds timeout) const {
  return rd_kafka_offsets_for_times(rk_.get(), partitions.list_.get(),
                                    static_cast<int>(timeout.count()));
}

int Consumer::partition_count(const std::string& topic, std::chrono::milliseconds timeout) const {
  return kafka::partition_count(rk_.get(), topic, timeout);
}

bool Consumer::close() {
  if (closed_) return close_finished_;
  closed_ = true;
  // librdkafka before 2.3.0 keeps the cooperative-sticky assignor's state
  // from the first assignment on, and asserts in rd_kafka_destroy that it
  // exists: a consumer destroyed between joining its group and its first
  // assignment aborts the process (confluentinc/librdkafka#4312, fixed in 2.3.0).
  // Such a consumer is polled until that assignment comes; librdkafka
  // ignores assignments once it is closing.
  const bool exposed = rd_kafka_version() < 0x020300ff && subscribed_ && cooperative_configured_;
  if (exposed && !assigned_once_ && cooperative()) {
    settling_ = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!assigned_once_ && std::chrono::steady_clock::now() < deadline) {
      // Messages of partitions the handler never heard of: never processed,
      // never committed, read again by their next owner.
      if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), 100))
        rd_kafka_message_destroy(m);
    }
  }
  close_finished_ = close_within(kCloseBudget);
  if (exposed && !assigned_once_) {
    // It may have joined since (or never, if no broker answered): destroying
    // it could abort. It has left its group, and none of its callbacks runs
    // without a poll.
    base::log(base::LogLevel::warn,
              "kafka: a consumer closed before its group assigned it anything is left "
              "undestroyed until the process exits (librdkafka " +
                  std::string(rd_kafka_version_str()) +
                  " can abort when destroying it: confluentinc/librdkafka#4312)");
    if (queue_) rd_kafka_queue_destroy(queue_);
    queue_ = nullptr;
    (void)rk_.release();
  }
  return close_finished_;
}

bool Consumer::close_within(std::chrono::milliseconds budget) {
  // rd_kafka_consumer_close waits for the group's goodbye without a limit;
  // its queue form lets this thread serve the final revocation (the handler)
  // and stop waiting at the deadline.
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk_.get());
  if (rd_kafka_error_t* error = rd_kafka_consumer_close_queue(rk_.get(), queue)) {
    // (after a fatal error: destroying it closes what can be closed, at once)
    rd_kafka_error_destroy(error);
    rd_kafka_queue_destroy(queue);
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + budget;
  bool finished = true;
  while (!rd_kafka_consumer_closed(rk_.get())) {
    if (std::chrono::steady_clock::now() >= deadline) {
      finished = false;
      break;
    }
    // Messages still fetched: never processed or committed, read again by
    // their partitions' next owner.
    if (rd_kafka_message_t* m = rd_kafka_consume_queue(queue, 100)) rd_kafka_message_destroy(m);
  }
  rd_kafka_queue_destroy(queue);
  if (!finished) {
    g_abandoned_clients.fetch_add(1);
    g_unfinished_closes.fetch_add(1);
    base::log(base::LogLevel::warn,
              "kafka: " + std::string(rd_kafka_name(rk_.get())) +
                  " did not finish leaving its group within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(budget).count()) +
                  " s (brokers unreachable, or its topics deleted); abandoned: what it had not "
                  "committed is read again, and its partitions move on at the session timeout");
  }
  return finished;
}

void Consumer::on_rebalance_cb(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  const bool incremental = self->cooperative();
  auto notify = [&](bool assigned) {
    if (self->on_rebalance_ && !self->settling_)
      self->on_rebalance_(assigned, TopicPartitions(*partitions));
  };
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    notify(true);
    self->assigned_once_ = true;
    if (incremental) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, partitions))
        rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk, partitions);
    }
  } else {
    // Revoked (or lost): the handler flushes and commits before we let go.
    notify(false);
    if (incremental) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, partitions))
        rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk, nullptr);
    }
  }
}

std::string Consumer::fatal_reason() const {
  if (!fatal_reason_.empty() || fatal_code() == errc::no_error) return fatal_reason_;
  return fatal_reason_of(rk_.get());
}

ErrorCode Consumer::fatal_code() const {
  if (!rk_) return errc::no_error;
  char ignored[8];
  return rd_kafka_fatal_error(rk_.get(), ignored, sizeof ignored);
}

void Consumer::on_error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__FATAL) self->fatal_reason_ = fatal_reason_of(rk);
  if (self->health_) self->health_->on_error(rd_kafka_name(rk), err, reason ? reason : "");
}

int Consumer::on_statistics_cb(rd_kafka_t* rk, char* json, size_t size, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (self->health_) self->health_->on_statistics(rd_kafka_name(rk), std::string_view(json, size));
  return 0;
}

std::optional<std::string_view> header(const rd_kafka_headers_t* headers, const char* name) {
  if (!headers) return std::nullopt;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return std::nullopt;
  return std::string_view(static_cast<const char*>(value), value ? size : 0);
}

}  // namespace neardup::stream::kafka

// ---------------------------------------------------------------- admin

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
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka admin client: ") + errstr,
                     RD_KAFKA_RESP_ERR__INVALID_ARG, Severity::fatal);
  conf.release();
  return HandlePtr(rk);
}

/// Sends one admin request (`send` enqueues it on the queue it is given) and
/// returns the outcome of each topic in its result event.
template <typename Send, typename Results>
std::vector<TopicOutcome> admin_request(const Properties& properties, rd_kafka_admin_op_t op,
                                        std::chrono::milliseconds timeout, const char* what,
                                        Send send, Results results_of) {
  HandlePtr rk = admin_client(properties);
  std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter> options(
      rd_kafka_AdminOptions_new(rk.get(), op));
  char errstr[512];
  const int ms = static_cast<int>(timeout.count());
  rd_kafka_AdminOptions_set_request_timeout(options.get(), ms, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), ms, errstr, sizeof errstr);
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue(rd_kafka_queue_new(rk.get()));
  send(rk.get(), options.get(), queue.get());
  // (the request timeout bounds the wait; the margin covers the connection)
  std::unique_ptr<rd_kafka_event_t, EventDeleter> event(
      rd_kafka_queue_poll(queue.get(), ms + 5000));
  if (!event)
    throw KafkaError(std::string(what) + ": no answer from " + properties.at("bootstrap.servers") +
                         " within " + std::to_string(timeout.count() / 1000) + " s",
                     RD_KAFKA_RESP_ERR__TIMED_OUT, Severity::retriable);
  if (const rd_kafka_resp_err_t err = rd_kafka_event_error(event.get())) {
    throw KafkaError(std::string(what) + " (" + properties.at("bootstrap.servers") +
                         "): " + rd_kafka_event_error_string(event.get()),
                     err, classify(err));
  }
  std::size_t n = 0;
  const rd_kafka_topic_result_t** results = results_of(event.get(), &n);
  std::vector<TopicOutcome> outcomes;
  for (std::size_t i = 0; i < n; ++i) {
    TopicOutcome& o = outcomes.emplace_back();
    o.name = rd_kafka_topic_result_name(results[i]);
    o.err = rd_kafka_topic_result_error(results[i]);
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
      throw KafkaError("topic '" + t.name + "': " + errstr, RD_KAFKA_RESP_ERR__INVALID_ARG,
                       Severity::fatal);
    }
    requests.push_back(request);
    for (const auto& [name, value] : t.configs) {
      if (rd_kafka_resp_err_t err =
              rd_kafka_NewTopic_set_config(request, name.c_str(), value.c_str())) {
        release();
        throw KafkaError("topic '" + t.name + "': config " + name + ": " + rd_kafka_err2str(err),
                         err, Severity::fatal);
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
