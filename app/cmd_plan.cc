// `neardup plan`: the pigeonhole table layouts for a window size and k.
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli.h"
#include "dedup/options.h"
#include "dedup/plan.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup plan [--window N] [--k K] [--blocks M]\n"
    "\n"
    "Prints the pigeonhole index layouts for a window of N fingerprints and max\n"
    "distance K (after Manku, Jain, Das Sarma 2007, section 3): the 64 bits are\n"
    "split into M blocks, and one table is keyed on each combination of M-K blocks.\n"
    "For each M from K+1 to 16: tables = C(M, M-K), key bits, expected candidates\n"
    "per probe for N random fingerprints (sum over tables of N / 2^key bits), the\n"
    "cells a probe actually scans (keys wider than the window are hashed into\n"
    "fewer buckets, so more cells share one), and estimated bytes per entry\n"
    "(24 bytes of entry data plus 7 per table and bucket-slot overhead). '*' marks\n"
    "the layout dedup.blocks: 0 picks.\n"
    "\n"
    "  --window N   window entries (default: window.max_entries, 10000000)\n"
    "  --k K        max Hamming distance, 0..8 (default 3)\n"
    "  --blocks M   show only this block count\n"
    "\n"
    "example:\n"
    "  neardup plan --window 10000000 --k 3\n";

int run_plan(std::span<const std::string> raw) {
  cli::Args args(raw, {"window", "k", "blocks"});
  args.expect_no_positionals();
  const auto window = static_cast<std::size_t>(
      args.get_int("window", 1, 1LL << 30)
          .value_or(static_cast<long long>(dedup::WindowOptions{}.max_entries)));
  const int k = static_cast<int>(args.get_int("k", 0, 8).value_or(3));
  std::vector<dedup::LayoutPlan> plans;
  if (auto blocks = args.get_int("blocks", 1, 16)) {
    try {
      plans.push_back(dedup::plan_layout(window, k, static_cast<int>(*blocks)));
    } catch (const std::invalid_argument& e) {
      throw cli::UsageError(std::string("--blocks: ") + e.what());
    }
  } else {
    plans = dedup::plan_layouts(window, k);
  }

  std::printf("pigeonhole layouts for k=%d over a window of %zu fingerprints\n", k, window);
  std::printf("%7s %8s %9s %12s %12s %12s %12s\n", "blocks", "tables", "key bits", "bucket bits",
              "candidates", "cells/probe", "bytes/entry");
  for (const auto& p : plans) {
    const std::string key_bits =
        p.min_key_bits == p.max_key_bits
            ? std::to_string(p.min_key_bits)
            : std::to_string(p.min_key_bits) + "-" + std::to_string(p.max_key_bits);
    const std::string buckets = std::to_string(p.bucket_bits) + (p.hashed ? " (hash)" : "");
    std::printf("%7d %8llu %9s %12s %12.3g %12.1f %12.1f%s\n", p.blocks,
                static_cast<unsigned long long>(p.tables), key_bits.c_str(), buckets.c_str(),
                p.candidates_per_probe, p.cells_per_probe, p.bytes_per_entry,
                p.is_default ? "  * default" : "");
  }
  return 0;
}

const cli::Registrar kPlan{
    {"plan", "show pigeonhole index layouts: tables, cells per probe, bytes per entry", kHelp,
     run_plan}};

}  // namespace
}  // namespace neardup::app
