// `neardup config check FILE`: validates a configuration and prints the
// effective one (file + NEARDUP_* environment, every key, defaults included).
// `neardup config keys`: every key with its default, what it accepts and its
// environment variable (config::schema()); --markdown prints config/README.md's table.
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <utility>

#include "app/cli.h"
#include "config/config.h"
#include "metrics/http/http_server.h"

namespace neardup::app {

namespace {

constexpr const char* kHelp =
    "usage: neardup config check [--no-env] [--show-secrets] FILE|-\n"
    "       neardup config check [--no-env] [--show-secrets] --config FILE\n"
    "\n"
    "Validates a neardup configuration file as `neardup run` reads it, the\n"
    "kafka.consumer and kafka.producer properties included (librdkafka checks\n"
    "their names and values). On success prints 'FILE: ok' and then the\n"
    "effective configuration as YAML (every key, defaults included, with the\n"
    "NEARDUP_* environment overrides applied) and exits 0. Otherwise prints every\n"
    "error, one a line ('FILE:LINE:COLUMN: KEY: expected ..., got ...'), to\n"
    "stderr and exits 2.\n"
    "Secret librdkafka properties (sasl.password, ssl.key.password, ...) print as\n"
    "<redacted> unless --show-secrets is given. Warns on stderr (the exit status\n"
    "stays 0) when metrics.page would serve message texts on an address other\n"
    "hosts can reach without metrics.page_user.\n"
    "\n"
    "options:\n"
    "  --no-env         ignore NEARDUP_* environment variables\n"
    "  --show-secrets   print secret property values as they are\n"
    "  -                read the configuration from standard input\n"
    "\n"
    "example:\n"
    "  neardup config check deploy/examples/embedded.yaml\n"
    "  NEARDUP_ACTION=tag neardup config check deploy/examples/cluster.yaml\n";

/// One line on stderr when the page would serve message texts to the network
/// (the same warning `neardup run` logs when it binds).
void warn_if_page_exposed(const config::MetricsOptions& options) {
  if (options.listen.empty()) return;
  bool loopback = false;
  try {
    loopback = metrics::is_loopback_host(metrics::parse_listen_address(options.listen).host);
  } catch (const std::runtime_error&) {
    return;  // not an address the server would bind
  }
  const std::string warning =
      metrics::page_exposure_warning(cli::page_access(options, false), options.listen, loopback);
  if (!warning.empty()) std::cerr << "neardup: warning: " << warning << "\n";
}

int run_config_check(std::span<const std::string> raw) {
  cli::Args args(raw, {"config"}, {"no-env", "show-secrets"});
  // (--config FILE as for run, or the file alone)
  std::vector<std::string> files = args.positionals();
  if (auto config = args.get("config")) files.push_back(*config);
  if (files.size() != 1)
    throw cli::UsageError("expected exactly one FILE (or - for stdin, or --config FILE)");
  const std::string path = files.front();
  try {
    const std::string origin = path == "-" ? "<stdin>" : path;
    config::Config config;
    if (path == "-") {
      std::string text(std::istreambuf_iterator<char>(std::cin), {});
      config = config::parse_config(text, origin, cli::check_client_property);
    } else {
      config = config::load_config(path, cli::check_client_property);
    }
    if (!args.has("no-env")) cli::apply_env(config);
    // Each property passed on its own; the maps `run` builds from them must too.
    if (auto errors = cli::client_property_errors(config, origin); !errors.empty())
      throw config::ConfigError(std::move(errors));
    warn_if_page_exposed(config.metrics);
    std::cout << origin << ": ok\n"
              << config::to_yaml(config, args.has("show-secrets") ? config::Secrets::show
                                                                  : config::Secrets::redact);
    return 0;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;  // a configuration error (app/main.cc)
  }
}

constexpr const char* kKeysHelp =
    "usage: neardup config keys [--markdown]\n"
    "\n"
    "Lists every configuration key in the order of `config check`'s output: its\n"
    "default, the NEARDUP_* environment variable that overrides it, and what it\n"
    "accepts. With --markdown, prints the same as the Markdown table of\n"
    "config/README.md (\"Keys\"), which is generated from it.\n"
    "\n"
    "options:\n"
    "  --markdown   one table row per key: key | default | accepts | environment\n"
    "\n"
    "example:\n"
    "  neardup config keys\n"
    "  neardup config keys --markdown\n";

int run_config_keys(std::span<const std::string> raw) {
  cli::Args args(raw, {}, {"markdown"});
  args.expect_no_positionals();
  if (args.has("markdown")) {
    std::cout << config::schema_markdown();
    return 0;
  }
  for (const config::KeyInfo& key : config::schema()) {
    std::cout << key.path << ": " << key.default_value
              << (key.follows_group_id ? " (follows kafka.group_id)" : "")
              << (key.env.empty() ? "" : "  [" + key.env + "]") << "\n    " << key.doc << "\n";
  }
  return 0;
}

const cli::Registrar kConfigCheck{{"config check",
                                   "validate a configuration file and print the effective one",
                                   kHelp, run_config_check}};
const cli::Registrar kConfigKeys{{"config keys",
                                  "list every configuration key, its default and its variable",
                                  kKeysHelp, run_config_keys}};

}  // namespace

}  // namespace neardup::app
