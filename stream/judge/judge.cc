#include "stream/judge/judge.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "stream/core/process.h"
#include "stream/judge/judge_state.h"
#include "stream/kafka/client_properties.h"

namespace neardup::stream {

using judge_detail::SimulatedJudgeCrash;
using kafka::KafkaError;

Judge::Judge(JudgeOptions options) : options_(std::move(options)), thread_([this] { run(); }) {}

Judge::~Judge() { stop(); }

void Judge::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

JudgeStats Judge::stats() const {
  base::MutexLock lock(mutex_);
  return stats_;
}

std::string Judge::fatal_error() const {
  base::MutexLock lock(mutex_);
  return fatal_;
}

kafka::ErrorCode Judge::fatal_code() const {
  base::MutexLock lock(mutex_);
  return fatal_code_;
}

void Judge::run() {
  pthread_setname_np(pthread_self(), "neardup-judge");
  State state(*this, options_.config);
  auto fail = [&](const std::string& what, kafka::ErrorCode code) {
    log(config::LogLevel::error, what);
    base::MutexLock lock(mutex_);
    fatal_ = what;
    fatal_code_ = code;
    stats_.active = false;
  };
  try {
    kafka::Properties props = options_.consumer_properties;
    props["group.id"] = options_.config.kafka.group_id + ".judge";
    // Static membership: a judge that restarts with its instance takes the
    // judging back at once, without waiting out a rebalance.
    if (auto it = props.find("group.instance.id"); it != props.end())
      it->second = judge_instance_id(it->second);
    props.insert_or_assign(
        "fetch.wait.max.ms",
        awaited_fetch_wait_ms(options_.broker_holds_empty_fetches));  // (GCC 12: State::take_over)
    // Every request since the group's committed offset, or all of them: a
    // request is never skipped (auto.offset.reset: latest would skip those
    // sent before the first judge started).
    props["auto.offset.reset"] = "earliest";
    // A dead judge's partition moves on at the session timeout: seconds, not
    // librdkafka's default 45 (6 s is brokers' default group.min.session.timeout.ms).
    if (!options_.config.kafka.consumer.count("session.timeout.ms"))
      props["session.timeout.ms"] = "6000";
    if (!options_.config.kafka.consumer.count("heartbeat.interval.ms"))
      props["heartbeat.interval.ms"] = "1500";
    // One member holds the judge topic's one partition. An eager rebalance
    // (librdkafka's default assignors) takes it from the judge whenever any
    // instance joins or leaves and gives it to whichever member sorts first:
    // a hand-over and a rebuild of the window each time. The cooperative
    // sticky assignor leaves it where it is.
    if (!options_.config.kafka.consumer.count("partition.assignment.strategy"))
      props["partition.assignment.strategy"] = "cooperative-sticky";
    // The rebalance timeout (max.poll.interval.ms, librdkafka's default 300 s)
    // bounds how long a coordinator may wait for a member that died during a
    // rebalance: while it waits, nobody judges. The judge polls every 50 ms at
    // most; a takeover's rebuild runs inside the poll, which librdkafka does
    // not count against this interval.
    // (librdkafka requires it to be at least the session timeout)
    if (!options_.config.kafka.consumer.count("max.poll.interval.ms")) {
      props.insert_or_assign(
          "max.poll.interval.ms",
          std::to_string(
              std::max(20000LL, std::strtoll(props["session.timeout.ms"].c_str(), nullptr, 10))));
    }
    state.consumer = std::make_unique<kafka::Consumer>(
        props,
        [&state](bool assigned, const kafka::TopicPartitions& parts) {
          state.on_rebalance(assigned, parts);
        },
        options_.health);
    state.consumer->subscribe({options_.config.kafka.judge_topic});
    state.loop();
    state.consumer->close();  // the revoke commits what was judged
  } catch (const SimulatedJudgeCrash&) {
    log(config::LogLevel::warn, "judge: simulated crash (nothing flushed or committed)");
    crashed_.store(true);
    if (state.producer) state.producer->purge();
    state.active = false;  // the revoke inside close() does nothing
    try {
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
    base::MutexLock lock(mutex_);
    stats_.active = false;
  } catch (const KafkaError& e) {
    fail(e.what(), e.code());
    state.active = false;
    try {
      if (state.txn) state.txn->abort(false);
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
  } catch (const std::exception& e) {
    fail(std::string("judge: ") + e.what(), kafka::errc::fail);
    state.active = false;
    try {
      if (state.consumer) state.consumer->close();
    } catch (...) {
    }
  }
}

}  // namespace neardup::stream
