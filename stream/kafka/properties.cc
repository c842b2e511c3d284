#include "stream/kafka/properties.h"

#include <librdkafka/rdkafka.h>

#include <cstring>

#include "stream/kafka/errors.h"

namespace neardup::stream::kafka {

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

}  // namespace

base::LogLevel log_level_of(int syslog_level) {
  if (syslog_level <= 3) return base::LogLevel::error;  // emerg, alert, crit, err
  if (syslog_level == 4) return base::LogLevel::warn;
  if (syslog_level <= 6) return base::LogLevel::info;  // notice, info
  return base::LogLevel::debug;
}

void ConfDeleter::operator()(ConfHandle* conf) const {
  rd_kafka_conf_destroy(reinterpret_cast<rd_kafka_conf_t*>(conf));
}

ConfPtr make_conf(const Properties& properties) {
  rd_kafka_conf_t* raw = rd_kafka_conf_new();
  ConfPtr conf(reinterpret_cast<ConfHandle*>(raw));
  rd_kafka_conf_set_log_cb(raw, &on_log);
  char errstr[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(raw, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw KafkaError("kafka property '" + name + "': " + errstr, errc::invalid_arg,
                       Severity::fatal);
    }
  }
  return conf;
}

}  // namespace neardup::stream::kafka
