// PROVISIONAL: defaults only, so the tree links; the config helper replaces it.
#include "config/config.h"

namespace neardup::config {
Config parse_config(const std::string&, const std::string&) { return Config{}; }
Config load_config(const std::string&) { return Config{}; }
void apply_env_overrides(Config&) {}
}  // namespace neardup::config
