#include "stream/core/process.h"

#include <semaphore.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "base/log.h"

namespace neardup::stream {

void configure_logging(const config::LogOptions& options) {
  base::configure_logging(options.format, options.level);
}

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;
sem_t g_stop_posted;  // posted by the first signal; the watchdog waits on it

void write_stderr(const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

extern "C" void on_stop_signal(int) {
  if (g_stop_signal) {
    // (async-signal-safe: write and _exit only)
    write_stderr(
        "neardup: a second stop signal during the stop: exiting now with status 1, without "
        "finishing the stop; what was not committed is read again at the next start\n");
    ::_exit(1);
  }
  g_stop_signal = 1;
  sem_post(&g_stop_posted);
}

void watch_the_stop(std::chrono::milliseconds budget) {
  while (sem_wait(&g_stop_posted) != 0) {
  }
  std::this_thread::sleep_for(budget);
  base::log(base::LogLevel::error,
            "stop: not finished " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(budget).count()) +
                " s after the stop signal (a Kafka client still waits on its brokers); exiting "
                "now with status 1: what was not committed is read again at the next start");
  std::fflush(nullptr);
  ::_exit(1);
}
}  // namespace

void install_stop_signal_handlers(std::chrono::milliseconds budget) {
  static std::once_flag once;
  std::call_once(once, [budget] {
    sem_init(&g_stop_posted, 0, 0);
    std::thread(watch_the_stop, budget).detach();
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
  });
}

bool stop_signalled() { return g_stop_signal != 0; }
}  // namespace neardup::stream
