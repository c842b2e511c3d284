#pragma once
// The `neardup` command line: a registry of subcommands and a small flag parser
// shared by all of them, so every subcommand reads and errors the same way.

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "metrics/http/page_access.h"

namespace neardup::app::cli {

/// A usage error: printed with the subcommand's usage line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Command {
  std::string name;                                           ///< e.g. "scan" or "config check"
  std::string summary;                                        ///< one line for `neardup --help`
  std::string help;                                           ///< full --help text, with an example
  std::function<int(std::span<const std::string> args)> run;  ///< args after the name
};

/// Subcommands register themselves from their own .cc (see cmd_*.cc):
///   static const cli::Registrar kScan{{"scan", "...", kHelp, run_scan}};
void register_command(Command command);
const std::vector<Command>& commands();
struct Registrar {
  explicit Registrar(Command command) { register_command(std::move(command)); }
};

/// Parses GNU-style flags: "--name value", "--name=value", boolean "--name",
/// repeated flags, and positionals. "--help"/"-h" sets help(). Throws UsageError
/// for unknown flags or a missing value.
class Args {
 public:
  /// `valued`: flags that take a value; `booleans`: flags that do not.
  Args(std::span<const std::string> args, std::vector<std::string> valued,
       std::vector<std::string> booleans = {});

  bool help() const { return help_; }
  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> get(const std::string& flag) const;
  std::vector<std::string> all(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  /// For commands that take none: throws UsageError naming the first positional.
  void expect_no_positionals() const;
  /// An integer flag within [min, max]; throws UsageError naming the flag otherwise.
  std::optional<long long> get_int(const std::string& flag, long long min, long long max) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
  bool help_ = false;
};

/// config::apply_env_overrides, then a warning on stderr for each NEARDUP_*
/// variable that names no configuration key but comes near one (a typo the
/// overrides would silently ignore). Throws config::ConfigError.
void apply_env(config::Config& config);

/// A config::PropertyCheck that asks librdkafka: `name` = `value` set on a
/// fresh client configuration (stream::kafka::make_conf, as `neardup run`
/// builds its clients). Returns "" when accepted, else make_conf's message
/// ("kafka property 'sesion.timeout.ms': No such configuration property: ...").
std::string check_client_property(const std::string& name, const std::string& value);

/// The clients' whole property maps as `neardup run` builds them (neardup's
/// defaults, then kafka.consumer or kafka.producer, then what kafka.delivery
/// exactly-once adds), each set on a fresh client configuration and a client
/// created from it without brokers (it connects nowhere; files named by
/// *.location properties are not opened). One line per map librdkafka refuses,
/// "ORIGIN: kafka.producer: cannot create Kafka producer: ...". Empty when all pass.
std::vector<std::string> client_property_errors(const config::Config& config,
                                                const std::string& origin);

/// The configuration of a command that talks to Kafka: `--config FILE` (else
/// the defaults, its kafka.consumer and kafka.producer properties checked by
/// check_client_property), then the NEARDUP_* variables, then `--brokers`.
/// Throws UsageError for a malformed `--brokers`, config::ConfigError for the rest.
config::Config kafka_command_config(const Args& args);

/// Who may read the page, from the metrics.* keys. The password is read from
/// metrics.page_password_file (its first line) when `read_password`; a file
/// that cannot be read, or holds no password, throws config::ConfigError.
metrics::PageAccess page_access(const config::MetricsOptions& options, bool read_password = true);

}  // namespace neardup::app::cli
