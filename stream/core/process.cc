#include "stream/core/process.h"

#include <csignal>

#include "base/log.h"

namespace neardup::stream {

void log(config::LogLevel level, std::string_view message) {
  base::log(static_cast<base::LogLevel>(static_cast<int>(level)), message);
}

void configure_logging(const config::LogOptions& options) {
  base::configure_logging(static_cast<base::LogFormat>(static_cast<int>(options.format)),
                          static_cast<base::LogLevel>(static_cast<int>(options.level)));
}

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int) { g_stop_signal = 1; }
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

bool stop_signalled() { return g_stop_signal != 0; }
}  // namespace neardup::stream
