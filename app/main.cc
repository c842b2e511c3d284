// `neardup`: dispatches to the subcommands registered in app/cmd_*.cc.
#include <sys/resource.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "config/config.h"
#include "stream/kafka.h"

namespace cli = neardup::app::cli;

namespace {

// The exit-status contract of every subcommand (app/README.md, each --help,
// deploy/systemd/neardup.service's RestartPreventExitStatus=2):
//   0 success;
//   1 a runtime failure that a restart may cure (fatal Kafka error, an input or
//     output that cannot be read or written, a port in use);
//   2 a usage or configuration error: restarting cannot fix it.
constexpr int kRuntimeFailure = 1;
constexpr int kUsageOrConfigError = 2;
constexpr const char* kExitStatusHelp =
    "\nexit status: 0 success; 1 runtime failure that a restart may cure (fatal Kafka\n"
    "error, input unreadable, output unwritable, port in use); 2 usage or configuration\n"
    "error (bad option, invalid config file or NEARDUP_* variable, Kafka property\n"
    "rejected, a judge or verdict topic of more than one partition): restarting will\n"
    "not help.\n";

void print_overview() {
  std::cout
      << "neardup " << NEARDUP_VERSION
      << " - streaming near-duplicate filter for Apache Kafka (SimHash + pigeonhole window)\n\n"
         "usage: neardup <command> [options]   (neardup <command> --help for details)\n\n"
         "commands:\n";
  for (const auto& command : cli::commands()) {
    std::string name = command.name;
    name.resize(std::max<std::size_t>(name.size() + 2, 18), ' ');
    std::cout << "  " << name << command.summary << "\n";
  }
  std::cout
      << kExitStatusHelp
      << "\nexample:\n  printf 'the cat sat\\nthe cat sat!\\n' | neardup scan --format lines -\n";
}

}  // namespace

// Like Go's runtime: the soft open-file limit goes up to the hard one, so that
// the metrics server's workers (sized from it: metrics/http_server.h) and the
// Kafka clients' sockets both fit. A plain shell's soft limit is often 1024.
static void raise_open_file_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);  // (best effort: the old limit still works)
  }
}

int main(int argc, char** argv) {
  raise_open_file_limit();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview();
    return args.empty() ? kUsageOrConfigError : 0;
  }
  if (args[0] == "--version") {
    std::cout << "neardup " << NEARDUP_VERSION << "\n";
    return 0;
  }
  // Longest match first, so "config check" wins over a hypothetical "config".
  const cli::Command* chosen = nullptr;
  std::size_t words = 0;
  for (const auto& command : cli::commands()) {
    std::size_t n = 0, pos = 0;
    bool match = true;
    while (pos <= command.name.size()) {
      auto space = command.name.find(' ', pos);
      std::string word =
          command.name.substr(pos, space == std::string::npos ? std::string::npos : space - pos);
      if (n >= args.size() || args[n] != word) {
        match = false;
        break;
      }
      ++n;
      if (space == std::string::npos) break;
      pos = space + 1;
    }
    if (match && n > words) {
      chosen = &command;
      words = n;
    }
  }
  if (!chosen) {
    // A group word alone ("neardup config"): list the commands it starts.
    std::vector<const cli::Command*> group;
    for (const auto& command : cli::commands()) {
      if (command.name.rfind(args[0] + " ", 0) == 0) group.push_back(&command);
    }
    if (!group.empty()) {
      std::cout << "neardup " << args[0] << " commands:\n";
      for (const auto* command : group)
        std::cout << "  neardup " << command->name << "   " << command->summary << "\n";
      const bool asked = args.size() > 1 && (args[1] == "--help" || args[1] == "-h");
      return asked ? 0 : kUsageOrConfigError;
    }
    std::cerr << "neardup: unknown command '" << args[0] << "' (see neardup --help)\n";
    return kUsageOrConfigError;
  }
  std::vector<std::string> rest(args.begin() + static_cast<long>(words), args.end());
  try {
    for (const auto& arg : rest) {
      if (arg == "--") break;  // what follows is operands (a file named -h)
      if (arg == "--help" || arg == "-h") {
        std::cout << chosen->help << kExitStatusHelp;
        return 0;
      }
    }
    return chosen->run(rest);
  } catch (const cli::UsageError& e) {
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n(see neardup " << chosen->name
              << " --help)\n";
    return kUsageOrConfigError;
  } catch (const neardup::config::ConfigError& e) {
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n";
    return kUsageOrConfigError;
  } catch (const std::invalid_argument& e) {
    // The libraries' "unusable options" (dedup layouts, sketch settings, NEARDUP_CPU).
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n";
    return kUsageOrConfigError;
  } catch (const neardup::stream::kafka::KafkaError& e) {
    // A property librdkafka rejects, or a client it cannot create from them,
    // is a configuration error; every other Kafka failure may pass.
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n";
    return e.code() == RD_KAFKA_RESP_ERR__INVALID_ARG ? kUsageOrConfigError : kRuntimeFailure;
  } catch (const std::exception& e) {
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n";
    return kRuntimeFailure;
  }
}
