#include "app/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>

#include "config/values.h"
#include "stream/kafka/client_properties.h"
#include "stream/kafka/kafka.h"

namespace neardup::app::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace

void register_command(Command command) { registry().push_back(std::move(command)); }

const std::vector<Command>& commands() {
  auto& all = registry();
  std::sort(all.begin(), all.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  return all;
}

Args::Args(std::span<const std::string> args, std::vector<std::string> valued,
           std::vector<std::string> booleans) {
  auto is = [](const std::vector<std::string>& set, const std::string& name) {
    return std::find(set.begin(), set.end(), name) != set.end();
  };
  bool only_positionals = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (only_positionals || arg == "-" || arg.size() < 2 || arg[0] != '-') {
      positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positionals = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError("unknown option '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (is(booleans, name)) {
      if (value) throw UsageError("option '--" + name + "' takes no value");
      values_[name].push_back("true");
    } else if (is(valued, name)) {
      if (!value) {
        if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value");
        value = args[++i];
      }
      values_[name].push_back(*value);
    } else {
      throw UsageError("unknown option '--" + name + "'");
    }
  }
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::all(const std::string& flag) const {
  auto it = values_.find(flag);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<long long> Args::get_int(const std::string& flag, long long min,
                                       long long max) const {
  auto text = get(flag);
  if (!text) return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < min || value > max) {
    throw UsageError("--" + flag + ": expected an integer in " + std::to_string(min) + ".." +
                     std::to_string(max) + ", got '" + *text + "'");
  }
  return value;
}

void Args::expect_no_positionals() const {
  if (!positionals_.empty()) throw UsageError("unexpected argument '" + positionals_[0] + "'");
}

void apply_env(config::Config& config) {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  for (const auto& [typo, near] : config::misspelled_env_variables(names)) {
    std::cerr << "neardup: warning: " << typo
              << " is not a configuration variable and is ignored (did you mean " << near << "?)\n";
  }
  config::apply_env_overrides(config);  // (after: a refused variable keeps the hints above)
}

std::string check_client_property(const std::string& name, const std::string& value) {
  try {
    stream::kafka::make_conf({{name, value}});
  } catch (const stream::kafka::KafkaError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> client_property_errors(const config::Config& config,
                                                const std::string& origin) {
  // The embedded broker's address is known once it runs; any address reads the same.
  const std::string brokers = config.kafka.brokers.value_or("127.0.0.1:9092");
  // What `neardup run` gives its clients (librdkafka refuses, e.g., a
  // message.timeout.ms above the transaction.timeout.ms exactly-once sets).
  const bool exactly_once = config.kafka.delivery == config::Delivery::exactly_once;
  stream::ServiceClientProperties clients = stream::service_client_properties(
      brokers, config.kafka, exactly_once,
      config.kafka.transactional_id.empty() ? "neardup-check" : config.kafka.transactional_id);
  stream::kafka::Properties consumer = std::move(clients.consumer);
  stream::kafka::Properties producer = std::move(clients.producer);
  std::vector<std::string> errors;
  // Every property set (make_conf), then the client created from them, which
  // is where librdkafka checks properties against each other (acks with
  // enable.idempotence, ...). The client gets no bootstrap.servers, so it
  // connects nowhere, and logs nothing; files named by *.location properties
  // belong to the host that runs neardup and are not opened here.
  auto probe = [&](const char* key, stream::kafka::Properties properties, auto create) {
    try {
      stream::kafka::make_conf(properties);
      std::erase_if(properties, [](const auto& property) {
        return property.first == "bootstrap.servers" || property.first == "debug" ||
               property.first.ends_with(".location");
      });
      properties.insert_or_assign(
          "log_level",
          std::string("0"));  // (GCC 12 -Wrestrict: see stream/judge/judge_state.cc)
      create(properties);
    } catch (const stream::kafka::KafkaError& e) {
      errors.push_back(origin + ": " + key + ": " + e.what());
    }
  };
  probe("kafka.consumer", std::move(consumer), [](const stream::kafka::Properties& properties) {
    stream::kafka::Consumer client(properties, {});
  });
  probe("kafka.producer", std::move(producer), [](const stream::kafka::Properties& properties) {
    stream::kafka::Producer client(properties, {});
  });
  return errors;
}

config::Config kafka_command_config(const Args& args) {
  config::Config cfg = args.get("config")
                           ? config::load_config(*args.get("config"), check_client_property)
                           : config::Config{};
  apply_env(cfg);
  if (auto brokers = args.get("brokers")) {
    if (!config::is_broker_list(*brokers))
      throw UsageError("--brokers: expected HOST:PORT[,HOST:PORT...] (ports 1..65535), got '" +
                       *brokers + "'");
    cfg.kafka.brokers = *brokers;
  }
  return cfg;
}

metrics::PageAccess page_access(const config::MetricsOptions& options, bool read_password) {
  metrics::PageAccess access;
  access.mode = options.page == config::PageMode::on    ? metrics::PageMode::on
                : options.page == config::PageMode::off ? metrics::PageMode::off
                                                        : metrics::PageMode::automatic;
  access.user = options.page_user;
  access.redact_texts = options.redact_texts;
  if (!read_password || options.page_password_file.empty()) return access;
  const std::string& path = options.page_password_file;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw config::ConfigError("metrics.page_password_file: cannot read '" + path +
                              "': " + std::strerror(errno));
  }
  std::getline(in, access.password);
  if (!access.password.empty() && access.password.back() == '\r') access.password.pop_back();
  if (access.password.empty())
    throw config::ConfigError("metrics.page_password_file: '" + path +
                              "' holds no password on its first line");
  return access;
}

}  // namespace neardup::app::cli
