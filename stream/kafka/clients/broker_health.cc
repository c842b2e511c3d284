#include "stream/kafka/clients/broker_health.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "base/log.h"

namespace neardup::stream {
namespace {

// Connection errors older than this when an outage begins are not named: they
// were about something else (an idle connection closed an hour ago).
constexpr std::chrono::seconds kErrorMemory{60};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string seconds_text(std::chrono::steady_clock::duration d) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", std::chrono::duration<double>(d).count());
  return buffer;
}

/// "Connect to ipv4#127.0.0.1:9092 failed: Connection refused" from
/// "127.0.0.1:9092/1: Connect to ... refused (after 0ms in state CONNECT)".
std::string plain_reason(std::string_view reason) {
  if (!broker_of_reason(reason).empty()) reason.remove_prefix(reason.find(": ") + 2);
  if (const auto at = reason.rfind(" (after ");
      at != std::string_view::npos && reason.ends_with(")")) {
    reason = reason.substr(0, at);
  }
  return std::string(reason);
}

}  // namespace

std::vector<BrokerObservation> parse_broker_statistics(std::string_view json) {
  std::vector<BrokerObservation> out;
  // A parser per thread: the callbacks of different clients may run at once.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) return out;
  simdjson::dom::object brokers;
  if (root["brokers"].get_object().get(brokers) != simdjson::SUCCESS) return out;
  for (auto [name, value] : brokers) {
    simdjson::dom::object broker;
    if (value.get_object().get(broker) != simdjson::SUCCESS) continue;
    std::string_view source, nodename, state;
    std::int64_t age = 0;
    if (broker["source"].get_string().get(source) != simdjson::SUCCESS) continue;
    if (source != "configured" && source != "learned") continue;  // not "logical" nor "internal"
    if (broker["nodename"].get_string().get(nodename) != simdjson::SUCCESS || nodename.empty())
      continue;
    if (broker["state"].get_string().get(state) != simdjson::SUCCESS) continue;
    if (broker["stateage"].get_int64().get(age) != simdjson::SUCCESS) age = 0;
    std::int64_t waiting = 0, rx_idle = -1;
    if (broker["waitresp_cnt"].get_int64().get(waiting) != simdjson::SUCCESS) waiting = 0;
    if (broker["rxidle"].get_int64().get(rx_idle) != simdjson::SUCCESS) rx_idle = -1;
    out.push_back({std::string(nodename), std::string(state), age, waiting, rx_idle});
  }
  return out;
}

std::string broker_of_reason(std::string_view reason) {
  const auto colon = reason.find(": ");
  if (colon == std::string_view::npos) return "";
  std::string_view name = reason.substr(0, colon);  // "127.0.0.1:9092/1", "ssl://h:9093/bootstrap"
  if (const auto scheme = name.find("://"); scheme != std::string_view::npos)
    name.remove_prefix(scheme + 3);
  const auto slash = name.rfind('/');
  if (slash == std::string_view::npos) return "";
  const std::string_view id = name.substr(slash + 1);
  const bool numeric =
      !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!numeric && id != "bootstrap") return "";
  name = name.substr(0, slash);
  const auto port_at = name.rfind(':');
  if (port_at == std::string_view::npos || port_at == 0 || port_at + 1 == name.size()) return "";
  const std::string_view port = name.substr(port_at + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return "";
  return std::string(name);
}

std::string BrokerHealth::Snapshot::describe(Clock::time_point now) const {
  if (reachable) return "Kafka brokers reachable";
  std::string text = "Kafka brokers unreachable for " + seconds_text(now - since) + " s";
  if (!unreachable.empty()) text += ": " + join(unreachable);
  if (!reason.empty()) text += " (" + reason + ")";
  return text;
}

BrokerHealth::BrokerHealth(bool log_transitions, Clock::time_point now) : log_(log_transitions) {
  state_.since = now;
}

void BrokerHealth::on_error(std::string_view client, kafka::ErrorCode err, std::string_view reason,
                            Clock::time_point now) {
  base::MutexLock lock(mutex_);
  if (err == kafka::errc::transport || err == kafka::errc::resolve) {
    if (std::string broker = broker_of_reason(reason); !broker.empty()) {
      errors_.insert_or_assign(std::move(broker), LastError{plain_reason(reason), now});
    }
  } else if (err == kafka::errc::all_brokers_down) {
    if (state_.reachable) begin_outage(client, reason, now);
  }
}

void BrokerHealth::begin_outage(std::string_view client, std::string_view reason,
                                Clock::time_point now) {
  std::vector<std::string> named;
  std::string why(reason);
  const LastError* latest = nullptr;
  for (const auto& [broker, error] : errors_) {
    if (now - error.at > kErrorMemory) continue;
    named.push_back(broker);
    if (!latest || error.at >= latest->at) latest = &error;
  }
  if (named.empty()) {  // no connection error seen: name what the client knew
    if (auto it = clients_.find(client); it != clients_.end()) {
      for (const auto& [broker, up] : it->second) named.push_back(broker);
    }
  }
  if (latest) why = latest->reason;
  start_outage(client, std::move(named), std::move(why), "Kafka brokers unreachable", now);
}

void BrokerHealth::start_outage(std::string_view client, std::vector<std::string> named,
                                std::string reason, std::string_view headline,
                                Clock::time_point now) {
  state_.reachable = false;
  state_.since = now;
  state_.unreachable = std::move(named);
  state_.reason = std::move(reason);
  ++state_.outages;
  errors_.clear();
  if (log_) {
    const std::string list = join(state_.unreachable);
    base::log(base::LogLevel::warn,
              std::string(headline) + ": " + (list.empty() ? std::string("all") : list) + " (" +
                  state_.reason + "); waiting for them to return",
              {{"brokers", list}, {"client", client}});
  }
}

void BrokerHealth::end_outage(std::string_view client, const std::vector<std::string>& brokers,
                              Clock::time_point at) {
  const auto outage = at - state_.since;
  state_.reachable = true;
  state_.since = at;
  state_.unreachable.clear();
  state_.reason.clear();
  errors_.clear();
  stall_outage_ = false;
  stall_seen_.clear();
  if (log_) {
    base::log(base::LogLevel::info,
              "Kafka brokers reachable again after " + seconds_text(outage) + " s",
              {{"brokers", join(brokers)},
               {"client", client},
               {"outage_seconds", std::chrono::duration<double>(outage).count()}});
  }
}

void BrokerHealth::on_statistics(std::string_view client, std::string_view json,
                                 Clock::time_point now) {
  const std::vector<BrokerObservation> brokers = parse_broker_statistics(json);
  on_brokers(client, brokers, now);
}

void BrokerHealth::on_brokers(std::string_view client,
                              const std::vector<BrokerObservation>& brokers,
                              Clock::time_point now) {
  base::MutexLock lock(mutex_);
  std::map<std::string, bool>& known = clients_[std::string(client)];
  known.clear();
  std::vector<std::string> reconnected;
  Clock::time_point first_up = Clock::time_point::max();
  // Per address (a bootstrap and a learned connection can share one): a
  // connection that received within kStallAfter answers; one UP with requests
  // waiting and nothing received for kStallAfter does not.
  std::map<std::string, std::int64_t> stalled;  // address -> its least receive idleness, us
  std::map<std::string, std::int64_t> answering;
  std::int64_t waiting = 0;
  const std::int64_t stall_us = std::chrono::microseconds(kStallAfter).count();
  for (const auto& b : brokers) {
    if (b.state == "UP" && b.rx_idle_us >= 0 && b.rx_idle_us < stall_us) {
      auto [it, fresh] = answering.emplace(b.address, b.rx_idle_us);
      if (!fresh) it->second = std::min(it->second, b.rx_idle_us);
    } else if (b.state == "UP" && b.waiting > 0 && b.rx_idle_us >= stall_us) {
      auto [it, fresh] = stalled.emplace(b.address, b.rx_idle_us);
      if (!fresh) it->second = std::min(it->second, b.rx_idle_us);
      waiting += b.waiting;
    }
    if (b.state == "INIT") continue;  // never tried (sparse connections): neither up nor down
    const bool up = b.state == "UP";
    auto [it, fresh] = known.emplace(b.address, up);
    if (!fresh) it->second = it->second || up;  // a bootstrap and a learned broker at one address
    if (!up || state_.reachable) continue;
    const Clock::time_point up_at =
        now - std::chrono::microseconds(std::max<std::int64_t>(0, b.state_age_us));
    if (up_at <= state_.since)
      continue;  // connected before the outage: librdkafka has not seen it fail yet
    if (std::find(reconnected.begin(), reconnected.end(), b.address) == reconnected.end()) {
      reconnected.push_back(b.address);
    }
    first_up = std::min(first_up, up_at);
  }
  for (const auto& [address, idle] : answering) stalled.erase(address);
  // A stall, as ALL_BROKERS_DOWN: this client waits on some broker and no broker answers it.
  const bool client_stalled = !stalled.empty() && answering.empty();
  if (!client_stalled) stall_seen_.erase(std::string(client));
  if (state_.reachable) {
    if (!client_stalled) return;
    // Seen in one report, a request may just have gone out on a connection
    // idle for long: the stall counts once a later report still shows it,
    // with nothing received in between (its idleness grew by the time passed).
    std::int64_t least_idle = std::numeric_limits<std::int64_t>::max();
    for (const auto& [address, idle] : stalled) least_idle = std::min(least_idle, idle);
    auto [seen, first] = stall_seen_.emplace(std::string(client), StallSeen{now, least_idle});
    if (first) return;
    const auto elapsed_us =
        std::chrono::duration_cast<std::chrono::microseconds>(now - seen->second.at).count();
    if (elapsed_us < std::chrono::microseconds(kStallConfirm).count()) return;
    if (least_idle < seen->second.least_idle_us + elapsed_us - 100'000) {  // received meanwhile
      seen->second = StallSeen{now, least_idle};
      return;
    }
    std::vector<std::string> named;
    for (const auto& [address, idle] : stalled) named.push_back(address);
    stall_seen_.clear();
    stall_outage_ = true;
    // Since the last answer: the broker stopped answering then, not when it was noticed.
    start_outage(client, std::move(named),
                 std::to_string(waiting) + " request(s) unanswered, nothing received for " +
                     seconds_text(std::chrono::microseconds(least_idle)) + " s",
                 "Kafka brokers not answering", now - std::chrono::microseconds(least_idle));
    return;
  }
  if (!reconnected.empty()) {
    end_outage(client, reconnected, first_up);
    return;
  }
  // After a stall: any client that received from every broker named, since it began.
  if (!stall_outage_ || state_.unreachable.empty()) return;
  for (const std::string& address : state_.unreachable) {
    const auto it = answering.find(address);
    if (it == answering.end() || now - std::chrono::microseconds(it->second) <= state_.since)
      return;
  }
  const std::vector<std::string> named = state_.unreachable;  // (end_outage clears it)
  end_outage(client, named, now);
}

BrokerHealth::Snapshot BrokerHealth::snapshot() const {
  base::MutexLock lock(mutex_);
  Snapshot s = state_;
  s.brokers.clear();
  for (const auto& [client, brokers] : clients_) {
    for (const auto& [address, up] : brokers) {
      bool& merged = s.brokers[address];
      merged = merged || up;
    }
  }
  if (stall_outage_)  // connected, but not answering
    for (const std::string& address : state_.unreachable) s.brokers[address] = false;
  return s;
}

void add_to_metrics(const BrokerHealth::Snapshot& health, metrics::ServiceStats& stats) {
  stats.kafka_brokers_up = health.reachable;
  stats.kafka_broker_outages = health.outages;
  stats.kafka_broker_up = health.brokers;
}

std::string not_ready_reason(const BrokerHealth::Snapshot& health, const Readiness& service,
                             BrokerHealth::Clock::time_point now) {
  if (!health.reachable) return health.describe(now);
  if (!service.assigned) return "no input partitions assigned";
  if (!service.window_ready) return "rebuilding the window from the changelog";
  if (service.judge_waiting_seconds >= kJudgeStalledSeconds) {
    return "no verdict from the group's judge for " +
           std::to_string(static_cast<long long>(service.judge_waiting_seconds)) + " s (" +
           std::to_string(service.judge_awaiting) +
           " messages wait): is an instance of the group judging? (neardup_judge_active)";
  }
  return "";
}

}  // namespace neardup::stream
