#include "stream/kafka/clients/consumer.h"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "stream/kafka/clients/broker_health.h"

namespace neardup::stream::kafka {

namespace {

rd_kafka_t* raw(ClientHandle* client) { return reinterpret_cast<rd_kafka_t*>(client); }
rd_kafka_topic_partition_list_t* raw(const PartitionListPtr& list) {
  return reinterpret_cast<rd_kafka_topic_partition_list_t*>(list.get());
}
rd_kafka_queue_t* raw(QueueHandle* queue) { return reinterpret_cast<rd_kafka_queue_t*>(queue); }
ErrorCode code(rd_kafka_resp_err_t err) { return ErrorCode(err); }

}  // namespace

/// librdkafka's callbacks, with the consumer as their opaque.
struct Consumer::Callbacks {
  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void on_commit(rd_kafka_t*, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t* offsets, void* opaque);
  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static int on_statistics(rd_kafka_t* rk, char* json, size_t size, void* opaque);
  /// A copy of librdkafka's list.
  static TopicPartitions copy_of(const rd_kafka_topic_partition_list_t& list) {
    return TopicPartitions(PartitionListPtr(
        reinterpret_cast<PartitionListHandle*>(rd_kafka_topic_partition_list_copy(&list))));
  }
};

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
  ConfPtr conf = make_client_conf(properties, this, health_);
  auto* raw_conf = reinterpret_cast<rd_kafka_conf_t*>(conf.get());
  if (health_) rd_kafka_conf_set_stats_cb(raw_conf, &Callbacks::on_statistics);
  rd_kafka_conf_set_rebalance_cb(raw_conf, &Callbacks::on_rebalance);
  rd_kafka_conf_set_error_cb(raw_conf, &Callbacks::on_error);
  rd_kafka_conf_set_offset_commit_cb(raw_conf, &Callbacks::on_commit);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, raw_conf, errstr, sizeof errstr);
  if (!rk)
    throw KafkaError(std::string("cannot create Kafka consumer: ") + errstr, errc::invalid_arg,
                     Severity::fatal);
  conf.release();
  rk_.reset(reinterpret_cast<ClientHandle*>(rk));
  rd_kafka_poll_set_consumer(rk);
  queue_ = reinterpret_cast<QueueHandle*>(rd_kafka_queue_get_consumer(rk));
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
  if (queue_) rd_kafka_queue_destroy(raw(queue_));
  queue_ = nullptr;
  if (rk_) {
    destroy_within(raw(rk_.release()), close_finished_ ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
                   g_abandoned_clients.load() == 0 ? std::chrono::milliseconds(kDestroyBudget)
                                                   : kDestroyBudgetAfterAbandon);
  }
}

void Consumer::subscribe(const std::vector<std::string>& topics) {
  TopicPartitions list(static_cast<int>(topics.size()));
  for (const auto& t : topics) list.add(t, RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(raw(rk_.get()), raw(list.list_))) {
    throw KafkaError(std::string("subscribe: ") + rd_kafka_err2str(err), code(err),
                     Severity::fatal);
  }
  subscribed_ = true;
}

void Consumer::poll_batch(std::vector<MessagePtr>& out, std::size_t max,
                          std::chrono::milliseconds timeout) {
  if (max == 0) return;
  if (timeout.count() > 0) {
    // rd_kafka_consume_batch_queue waits until it has `max` messages or the
    // timeout passed: a lone message would wait the whole timeout.
    rd_kafka_message_t* first =
        rd_kafka_consume_queue(raw(queue_), static_cast<int>(timeout.count()));
    if (first == nullptr) return;
    out.emplace_back(reinterpret_cast<MessageHandle*>(first));
    if (--max == 0) return;
  }
  std::vector<rd_kafka_message_t*> polled(max);
  const ssize_t n = rd_kafka_consume_batch_queue(raw(queue_), 0, polled.data(), max);
  for (ssize_t i = 0; i < n; ++i)
    out.emplace_back(reinterpret_cast<MessageHandle*>(polled[static_cast<std::size_t>(i)]));
}

ErrorCode Consumer::commit(const TopicPartitions& offsets, bool async) {
  rd_kafka_resp_err_t err = rd_kafka_commit(raw(rk_.get()), raw(offsets.list_), async ? 1 : 0);
  if (err && classify(code(err)) == Severity::fatal &&
      code(err) != errc::unknown_topic_or_partition) {
    throw KafkaError(std::string("offset commit: ") + rd_kafka_err2str(err), code(err),
                     Severity::fatal);
  }
  return code(err);
}

void Consumer::Callbacks::on_commit(rd_kafka_t*, rd_kafka_resp_err_t err,
                                    rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (self->on_commit_) {
    if (offsets) {
      const TopicPartitions copy = copy_of(*offsets);
      self->on_commit_(code(err), &copy);
    } else {
      self->on_commit_(code(err), nullptr);
    }
  }
}

ErrorCode Consumer::assign(const TopicPartitions& partitions) {
  return code(rd_kafka_assign(raw(rk_.get()), raw(partitions.list_)));
}

ErrorCode Consumer::assignment(TopicPartitions& out) const {
  rd_kafka_topic_partition_list_t* parts = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_assignment(raw(rk_.get()), &parts);
  out = TopicPartitions();
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && parts)
    out.list_.reset(reinterpret_cast<PartitionListHandle*>(parts));
  return code(err);
}

bool Consumer::assignment_lost() const { return rd_kafka_assignment_lost(raw(rk_.get())) != 0; }

bool Consumer::cooperative() const {
  // (null once the consumer is closed)
  const char* protocol = rd_kafka_rebalance_protocol(raw(rk_.get()));
  return protocol && std::strcmp(protocol, "COOPERATIVE") == 0;
}

ErrorCode Consumer::pause(const TopicPartitions& partitions) {
  return code(rd_kafka_pause_partitions(raw(rk_.get()), raw(partitions.list_)));
}

ErrorCode Consumer::resume(const TopicPartitions& partitions) {
  return code(rd_kafka_resume_partitions(raw(rk_.get()), raw(partitions.list_)));
}

std::string Consumer::seek(const TopicPartitions& partitions, std::chrono::milliseconds timeout) {
  rd_kafka_error_t* error = rd_kafka_seek_partitions(raw(rk_.get()), raw(partitions.list_),
                                                     static_cast<int>(timeout.count()));
  if (error) {
    std::string what = rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
    return what;
  }
  // The call succeeds when a partition refuses (its entry says so).
  for (const TopicPartition e : partitions) {
    if (e.error) return std::to_string(e.partition) + ": " + describe(e.error);
  }
  return {};
}

ErrorCode Consumer::committed(TopicPartitions& partitions, std::chrono::milliseconds timeout) {
  return code(
      rd_kafka_committed(raw(rk_.get()), raw(partitions.list_), static_cast<int>(timeout.count())));
}

Consumer::Watermarks Consumer::query_watermarks(const std::string& topic, std::int32_t partition,
                                                std::chrono::milliseconds timeout) const {
  Watermarks w;
  w.error = code(rd_kafka_query_watermark_offsets(raw(rk_.get()), topic.c_str(), partition, &w.low,
                                                  &w.high, static_cast<int>(timeout.count())));
  return w;
}

Consumer::Watermarks Consumer::cached_watermarks(const std::string& topic,
                                                 std::int32_t partition) const {
  Watermarks w;
  w.error = code(
      rd_kafka_get_watermark_offsets(raw(rk_.get()), topic.c_str(), partition, &w.low, &w.high));
  return w;
}

ErrorCode Consumer::offsets_for_times(TopicPartitions& partitions,
                                      std::chrono::milliseconds timeout) const {
  return code(rd_kafka_offsets_for_times(raw(rk_.get()), raw(partitions.list_),
                                         static_cast<int>(timeout.count())));
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
      if (rd_kafka_message_t* m = rd_kafka_consumer_poll(raw(rk_.get()), 100))
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
    if (queue_) rd_kafka_queue_destroy(raw(queue_));
    queue_ = nullptr;
    (void)rk_.release();
  }
  return close_finished_;
}

bool Consumer::close_within(std::chrono::milliseconds budget) {
  // rd_kafka_consumer_close waits for the group's goodbye without a limit;
  // its queue form lets this thread serve the final revocation (the handler)
  // and stop waiting at the deadline.
  rd_kafka_t* rk = raw(rk_.get());
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  if (rd_kafka_error_t* error = rd_kafka_consumer_close_queue(rk, queue)) {
    // (after a fatal error: destroying it closes what can be closed, at once)
    rd_kafka_error_destroy(error);
    rd_kafka_queue_destroy(queue);
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + budget;
  bool finished = true;
  while (!rd_kafka_consumer_closed(rk)) {
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
              "kafka: " + std::string(rd_kafka_name(rk)) +
                  " did not finish leaving its group within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(budget).count()) +
                  " s (brokers unreachable, or its topics deleted); abandoned: what it had not "
                  "committed is read again, and its partitions move on at the session timeout");
  }
  return finished;
}

void Consumer::Callbacks::on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                       rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  const bool incremental = self->cooperative();
  auto notify = [&](bool assigned) {
    if (self->on_rebalance_ && !self->settling_)
      self->on_rebalance_(assigned, copy_of(*partitions));
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
  return code(rd_kafka_fatal_error(raw(rk_.get()), ignored, sizeof ignored));
}

void Consumer::Callbacks::on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__FATAL)
    self->fatal_reason_ = fatal_reason_of(reinterpret_cast<ClientHandle*>(rk));
  if (self->health_)
    self->health_->on_error(rd_kafka_name(rk), ErrorCode(err), reason ? reason : "");
}

int Consumer::Callbacks::on_statistics(rd_kafka_t* rk, char* json, size_t size, void* opaque) {
  auto* self = static_cast<Consumer*>(opaque);
  if (self->health_) self->health_->on_statistics(rd_kafka_name(rk), std::string_view(json, size));
  return 0;
}

}  // namespace neardup::stream::kafka
