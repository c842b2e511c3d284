#include "stream/kafka/clients/transaction.h"

#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "base/log.h"

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

rd_kafka_t* raw(kafka::ClientHandle* client) { return reinterpret_cast<rd_kafka_t*>(client); }

/// The fatal error to throw for `error`, with `fenced_hint` when it is a fencing.
kafka::KafkaError fatal(const char* what, const rd_kafka_error_t* error,
                        const std::string& fenced_hint) {
  const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
  const bool fenced = code == RD_KAFKA_RESP_ERR__FENCED ||
                      code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                      code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
  return kafka::KafkaError(std::string("transaction: ") + what + ": " +
                               rd_kafka_error_string(error) +
                               (fenced && !fenced_hint.empty() ? " (" + fenced_hint + ")" : ""),
                           kafka::ErrorCode(code), kafka::Severity::fatal);
}

/// Runs `call` until it succeeds, retrying retriable errors until `timeout`
/// passed. Returns the error that requires an abort (null when none); throws
/// for fatal ones and for retriable ones past the deadline.
template <typename Call>
ErrorPtr retry(const char* what, std::chrono::milliseconds timeout, const std::string& fenced_hint,
               Call call) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    ErrorPtr error(call());
    if (!error) return nullptr;
    if (rd_kafka_error_is_fatal(error.get())) throw fatal(what, error.get(), fenced_hint);
    if (rd_kafka_error_txn_requires_abort(error.get())) return error;
    if (!rd_kafka_error_is_retriable(error.get()) || std::chrono::steady_clock::now() >= deadline) {
      throw fatal(what, error.get(), fenced_hint);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

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

void TransactionCycle::start() {
  rd_kafka_t* producer = raw(producer_.handle());
  const int ms = static_cast<int>(timeout_.count());
  if (ErrorPtr e = retry("init", timeout_, fenced_hint_,
                         [&] { return rd_kafka_init_transactions(producer, ms); })) {
    throw fatal("init", e.get(), fenced_hint_);
  }
  if (ErrorPtr e{rd_kafka_begin_transaction(producer)}) throw fatal("begin", e.get(), fenced_hint_);
}

TransactionCycle::Outcome TransactionCycle::commit(const kafka::TopicPartitions& offsets) {
  rd_kafka_t* producer = raw(producer_.handle());
  const int ms = static_cast<int>(timeout_.count());
  ErrorPtr abortable;
  if (!offsets.empty()) {
    const auto* list =
        reinterpret_cast<const rd_kafka_topic_partition_list_t*>(offsets.list_.get());
    std::unique_ptr<rd_kafka_consumer_group_metadata_t, GroupMetadataDeleter> group(
        rd_kafka_consumer_group_metadata(raw(consumer_.handle())));
    abortable = retry("send offsets", timeout_, fenced_hint_, [&] {
      return rd_kafka_send_offsets_to_transaction(producer, list, group.get(), ms);
    });
  }
  if (!abortable)
    abortable = retry("commit", timeout_, fenced_hint_,
                      [&] { return rd_kafka_commit_transaction(producer, ms); });
  if (abortable) {
    base::log(base::LogLevel::warn,
              std::string("transaction aborted (its messages are judged again): ") +
                  rd_kafka_error_string(abortable.get()));
    abort();
    return Outcome::aborted;
  }
  ++committed_;
  if (ErrorPtr e{rd_kafka_begin_transaction(producer)}) throw fatal("begin", e.get(), fenced_hint_);
  return Outcome::committed;
}

void TransactionCycle::abort(bool begin_next) {
  rd_kafka_t* producer = raw(producer_.handle());
  const int ms = static_cast<int>(timeout_.count());
  ++aborted_;
  if (ErrorPtr e = retry("abort", timeout_, fenced_hint_,
                         [&] { return rd_kafka_abort_transaction(producer, ms); })) {
    throw fatal("abort", e.get(), fenced_hint_);
  }
  if (!begin_next) return;
  if (ErrorPtr e{rd_kafka_begin_transaction(producer)}) throw fatal("begin", e.get(), fenced_hint_);
}

}  // namespace neardup::stream
