// `neardup`: dispatches to the subcommands registered in stream/cmd_*.cc.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "stream/cli.h"

namespace cli = neardup::stream::cli;

namespace {

void print_overview() {
  std::cout << "neardup " << NEARDUP_VERSION
            << " - streaming near-duplicate filter for Apache Kafka (SimHash + pigeonhole window)\n\n"
               "usage: neardup <command> [options]   (neardup <command> --help for details)\n\n"
               "commands:\n";
  for (const auto& command : cli::commands()) {
    std::string name = command.name;
    name.resize(std::max<std::size_t>(name.size() + 2, 18), ' ');
    std::cout << "  " << name << command.summary << "\n";
  }
  std::cout << "\nexample:\n  printf 'the cat sat\\nthe cat sat!\\n' | neardup scan --format lines -\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview();
    return args.empty() ? 2 : 0;
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
      std::string word = command.name.substr(pos, space == std::string::npos ? std::string::npos : space - pos);
      if (n >= args.size() || args[n] != word) { match = false; break; }
      ++n;
      if (space == std::string::npos) break;
      pos = space + 1;
    }
    if (match && n > words) { chosen = &command; words = n; }
  }
  if (!chosen) {
    // A group word alone ("neardup config"): list the commands it starts.
    std::vector<const cli::Command*> group;
    for (const auto& command : cli::commands()) {
      if (command.name.rfind(args[0] + " ", 0) == 0) group.push_back(&command);
    }
    if (!group.empty()) {
      std::cout << "neardup " << args[0] << " commands:\n";
      for (const auto* command : group) std::cout << "  neardup " << command->name << "   " << command->summary << "\n";
      const bool asked = args.size() > 1 && (args[1] == "--help" || args[1] == "-h");
      return asked ? 0 : 2;
    }
    std::cerr << "neardup: unknown command '" << args[0] << "' (see neardup --help)\n";
    return 2;
  }
  std::vector<std::string> rest(args.begin() + static_cast<long>(words), args.end());
  try {
    for (const auto& arg : rest) {
      if (arg == "--") break;  // what follows is operands (a file named -h)
      if (arg == "--help" || arg == "-h") {
        std::cout << chosen->help;
        return 0;
      }
    }
    return chosen->run(rest);
  } catch (const cli::UsageError& e) {
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n(see neardup " << chosen->name << " --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "neardup " << chosen->name << ": " << e.what() << "\n";
    return 1;
  }
}
