#include "stream/kafka/clients/transaction.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "stream/core/process.h"

namespace neardup::stream {
namespace {

struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using ErrorPtr = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

struct GroupMetadataDeleter {
  void operator()(rd_kafka_consumer_group_metadata_t* m) const {
    rd_kafka_consumer_group_metadata_destroy(m);
  }
};

}  // namespace

kafka::KafkaError TransactionCycle::fatal(const char* what, const rd_kafka_error_t* error) const {
  const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
  const bool fenced = code == RD_KAFKA_RESP_ERR__FENCED ||
                      code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                      code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
  return kafka::KafkaError(std::string("transaction: ") + what + ": " +
                               rd_kafka_error_string(error) +
                               (fenced && !fenced_hint_.empty() ? " (" + fenced_hint_ + ")" : ""),
                           code, kafka::Severity::fatal);
}

std::string default_transactional_id(const config::KafkaOptions& kafka) {
  const std::string& group = kafka.group_id;
  if (!kafka.instance_id.empty()) return "neardup-" + group + "-" + kafka.instance_id;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof host, "localhost");
  return "neardup-" + group + "-" + host;
}

TransactionCycle::TransactionCycle(kafka::Producer& producer, kafka::Consumer& consumer,
                                   std::chrono::milliseconds timeout, std::string fenced_hint)
    : producer_(producer),
      consumer_(consumer),
      timeout_(timeout),
      fenced_hint_(std::move(fenced_hint)) {}

template <typename Call>
rd_kafka_error_t* TransactionCycle::retry(const char* what, Call call) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    ErrorPtr error(call());
    if (!error) return nullptr;
    if (rd_kafka_error_is_fatal(error.get())) throw fatal(what, error.get());
    if (rd_kafka_error_txn_requires_abort(error.get())) return error.release();
    if (!rd_kafka_error_is_retriable(error.get()) || std::chrono::steady_clock::now() >= deadline) {
      throw fatal(what, error.get());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void TransactionCycle::start() {
  const int ms = static_cast<int>(timeout_.count());
  if (ErrorPtr e{
          retry("init", [&] { return rd_kafka_init_transactions(producer_.handle(), ms); })}) {
    throw fatal("init", e.get());
  }
  if (ErrorPtr e{rd_kafka_begin_transaction(producer_.handle())}) throw fatal("begin", e.get());
}

TransactionCycle::Outcome TransactionCycle::commit(const kafka::TopicPartitions& offsets) {
  return commit(*offsets.list_);
}

TransactionCycle::Outcome TransactionCycle::commit(const rd_kafka_topic_partition_list_t& offsets) {
  const int ms = static_cast<int>(timeout_.count());
  ErrorPtr abortable;
  if (offsets.cnt > 0) {
    std::unique_ptr<rd_kafka_consumer_group_metadata_t, GroupMetadataDeleter> group(
        rd_kafka_consumer_group_metadata(consumer_.handle()));
    abortable.reset(retry("send offsets", [&] {
      return rd_kafka_send_offsets_to_transaction(producer_.handle(), &offsets, group.get(), ms);
    }));
  }
  if (!abortable)
    abortable.reset(
        retry("commit", [&] { return rd_kafka_commit_transaction(producer_.handle(), ms); }));
  if (abortable) {
    log(config::LogLevel::warn,
        std::string("transaction aborted (its messages are judged again): ") +
            rd_kafka_error_string(abortable.get()));
    abort();
    return Outcome::aborted;
  }
  ++committed_;
  if (ErrorPtr e{rd_kafka_begin_transaction(producer_.handle())}) throw fatal("begin", e.get());
  return Outcome::committed;
}

void TransactionCycle::abort(bool begin_next) {
  const int ms = static_cast<int>(timeout_.count());
  ++aborted_;
  if (ErrorPtr e{
          retry("abort", [&] { return rd_kafka_abort_transaction(producer_.handle(), ms); })}) {
    throw fatal("abort", e.get());
  }
  if (!begin_next) return;
  if (ErrorPtr e{rd_kafka_begin_transaction(producer_.handle())}) throw fatal("begin", e.get());
}

}  // namespace neardup::stream
