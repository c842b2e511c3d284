// `neardup fingerprint` and `neardup compare`: the engine on one or two texts.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "config/config.h"
#include "dedup/fingerprinter.h"
#include "stream/cli.h"

namespace neardup::stream {
namespace {

constexpr const char* kFingerprintHelp = R"(usage: neardup fingerprint [--config FILE] [TEXT|-]

Prints the 64-bit SimHash of TEXT (or of stdin with '-' or no TEXT) as 16 hex
digits, with the dedup settings of --config (defaults otherwise).

example:
  neardup fingerprint "Breaking: markets rally as rates fall"
  echo "some text" | neardup fingerprint -
)";

constexpr const char* kCompareHelp = R"(usage: neardup compare [--config FILE] A B

Fingerprints texts A and B and prints their Hamming distance, similarity
(1 - distance/64) and the verdict at the configured max distance k (default 3).
SimHash only: the MinHash sketch stage that `scan` and `run` apply is not used
here, so an edited short text that `scan` reports as a duplicate (with its
shingle-Jaccard "similarity") can show "different" here.

example:
  neardup compare "Markets rally as rates fall" "Markets rally as rates fall!!"
)";

config::Config load(const cli::Args& args) {
  config::Config config = args.get("config") ? config::load_config(*args.get("config")) : config::Config{};
  config::apply_env_overrides(config);
  return config;
}

int run_fingerprint(std::span<const std::string> raw_args) {
  cli::Args args(raw_args, {"config"});
  if (args.positionals().size() > 1) throw cli::UsageError("expected one TEXT (quote it) or '-'");
  std::string text;
  if (args.positionals().empty() || args.positionals()[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (!text.empty() && text.back() == '\n') text.pop_back();
  } else {
    text = args.positionals()[0];
  }
  dedup::Fingerprinter fingerprinter(load(args).dedup.text);
  const auto summary = fingerprinter.analyze(text);
  if (summary.features == 0) {
    std::cerr << "neardup fingerprint: the text has no words or characters to fingerprint\n";
    return 1;
  }
  std::cout << summary.fingerprint.hex() << "\n";
  return 0;
}

int run_compare(std::span<const std::string> raw_args) {
  cli::Args args(raw_args, {"config"});
  if (args.positionals().size() != 2) throw cli::UsageError("expected two texts A and B");
  const config::Config config = load(args);
  dedup::Fingerprinter fingerprinter(config.dedup.text);
  const auto a = fingerprinter.analyze(args.positionals()[0]);
  const auto b = fingerprinter.analyze(args.positionals()[1]);
  const int distance = dedup::hamming_distance(a.fingerprint, b.fingerprint);
  const int k = config.dedup.index.max_distance;
  std::printf("a          %s (%u features)\nb          %s (%u features)\n", a.fingerprint.hex().c_str(),
              a.features, b.fingerprint.hex().c_str(), b.features);
  std::printf("distance   %d bits\nsimilarity %.3f\nverdict    %s (k=%d)\n", distance, 1.0 - distance / 64.0,
              distance <= k ? "near-duplicate" : "different", k);
  return 0;
}

const cli::Registrar kFingerprint{{"fingerprint", "print the SimHash of a text", kFingerprintHelp, run_fingerprint}};
const cli::Registrar kCompare{{"compare", "distance and verdict for two texts", kCompareHelp, run_compare}};

}  // namespace
}  // namespace neardup::stream
