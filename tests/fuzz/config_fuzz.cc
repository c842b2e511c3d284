// Fuzz target for config parsing. Properties checked on every input:
// - parse_config either succeeds or throws ConfigError whose message starts
//   with the origin (any other exception or a crash is a bug);
// - a parsed config dumps with to_yaml and parses back to the same dump;
// - the same bytes as an environment variable value are validated, not trusted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "config/config.h"

namespace {

using neardup::config::Config;
using neardup::config::ConfigError;

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Config config;
  try {
    config = neardup::config::parse_config(text, "fuzz.yaml");
  } catch (const ConfigError& e) {
    require(std::string(e.what()).rfind("fuzz.yaml", 0) == 0);
    return 0;
  }
  const std::string dumped = neardup::config::to_yaml(config);
  const Config again = neardup::config::parse_config(dumped, "dump.yaml");  // throws = bug
  require(neardup::config::to_yaml(again) == dumped);

  // The input's first line as the value of one variable picked by its length.
  static const char* const kVariables[] = {
      "NEARDUP_KAFKA_BROKERS",      "NEARDUP_ACTION",
      "NEARDUP_WINDOW_DURATION",    "NEARDUP_WINDOW_MAX_ENTRIES",
      "NEARDUP_DEDUP_MAX_DISTANCE", "NEARDUP_KAFKA_INPUT_TOPICS",
      "NEARDUP_INPUT_MAX_BYTES",    "NEARDUP_METRICS_LISTEN"};
  const std::string value = text.substr(0, text.find('\n'));
  const std::string variable =
      kVariables[value.size() % (sizeof kVariables / sizeof kVariables[0])];
  try {
    neardup::config::apply_env_overrides(
        config, [&](const std::string& name) -> std::optional<std::string> {
          if (name == variable) return value;
          return std::nullopt;
        });
  } catch (const ConfigError& e) {
    require(std::string(e.what()).rfind("environment " + variable, 0) == 0 ||
            std::string(e.what()).rfind("environment NEARDUP_", 0) == 0);
  }
  return 0;
}
