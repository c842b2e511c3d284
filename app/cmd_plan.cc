// `neardup plan`: the pigeonhole table layouts for a window size and k.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli.h"
#include "config/config.h"
#include "config/values.h"
#include "dedup/core/options.h"
#include "dedup/engine/plan.h"
#include "dedup/index/index.h"
#include "dedup/index/memory.h"
#include "dedup/index/window.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    "usage: neardup plan [--window N] [--k K] [--blocks M]\n"
    "       neardup plan --memory SIZE [--config FILE] [--window N] [--k K] [--blocks M]\n"
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
    "With --memory: how many entries a window.max_memory of SIZE holds with the\n"
    "configured layout, sketch, recent-text cache and repost cache (the file's\n"
    "dedup and window sections, then NEARDUP_* variables, then --k, --blocks and\n"
    "--window as window.max_entries; the tightest bound wins), the most each\n"
    "structure then holds, and that layout's row at that many entries (what a\n"
    "probe then costs).\n"
    "\n"
    "  --window N     window entries (default: window.max_entries, 10000000)\n"
    "  --k K          max Hamming distance, 0..8 (default 3)\n"
    "  --blocks M     show only this block count\n"
    "  --memory SIZE  window.max_memory, a size like 2GiB or 512MiB\n"
    "  --config FILE  with --memory: the configuration whose layout to size\n"
    "\n"
    "examples:\n"
    "  neardup plan --window 10000000 --k 3\n"
    "  neardup plan --memory 2GiB --config neardup.yaml\n";

void print_header(int k, std::size_t window) {
  std::printf("pigeonhole layouts for k=%d over a window of %zu fingerprints\n", k, window);
  std::printf("%7s %8s %9s %12s %12s %12s %12s\n", "blocks", "tables", "key bits", "bucket bits",
              "candidates", "cells/probe", "bytes/entry");
}

void print_row(const dedup::LayoutPlan& p) {
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

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

int run_memory_plan(const cli::Args& args, const std::string& size) {
  const auto bytes = config::parse_size(size);
  if (!bytes || *bytes == 0)
    throw cli::UsageError("--memory: expected a size like 2GiB, 512MiB or 12MiB, got '" + size +
                          "'");
  config::Config config =
      args.get("config") ? config::load_config(*args.get("config")) : config::Config{};
  cli::apply_env(config);
  dedup::DedupOptions options = config.dedup;
  if (auto k = args.get_int("k", 0, 8)) options.index.max_distance = static_cast<int>(*k);
  if (auto blocks = args.get_int("blocks", 1, 16)) options.index.blocks = static_cast<int>(*blocks);
  if (auto window = args.get_int("window", 1, 1LL << 30))
    options.window.max_entries = static_cast<std::size_t>(*window);
  options.window.max_memory = static_cast<std::size_t>(*bytes);
  const int k = options.index.max_distance;
  const int blocks =
      options.index.blocks == 0 ? dedup::PigeonholeLayout::default_blocks(k) : options.index.blocks;
  if (!dedup::PigeonholeLayout::supported(blocks, k))
    throw cli::UsageError("--blocks: unsupported layout: blocks " + std::to_string(blocks) +
                          " with k " + std::to_string(k) +
                          " (need 0 <= k <= 8 and k+1 <= blocks <= 16)");
  const std::size_t entries = dedup::engine_capacity(options);
  const std::size_t least = std::min(options.window.max_entries, dedup::kMinMemoryEntries);
  if (entries < least) {
    const dedup::MemoryFootprint f = dedup::memory_footprint(options, least);
    std::fprintf(stderr,
                 "neardup plan: window.max_memory %s holds fewer than %zu entries: they need "
                 "%zu bytes (%.2f MiB)\n",
                 config::format_size(*bytes).c_str(), least, f.total(), mib(f.total()));
    return 1;
  }
  const dedup::MemoryFootprint f = dedup::memory_footprint(options, entries);
  const bool by_entries = entries == options.window.max_entries;
  std::printf("window.max_memory %s holds %zu entries (%s)\n", config::format_size(*bytes).c_str(),
              entries,
              by_entries ? "all of window.max_entries: that is the tighter bound"
                         : "window.max_memory is the tighter bound");
  std::printf(
      "  at most: pigeonhole index %.2f MiB, sketch index %.2f MiB, recent-text cache "
      "%.2f MiB, repost cache %.2f MiB; %.2f MiB in all, %.1f bytes per entry\n",
      mib(f.window), mib(f.sketch), mib(f.recent), mib(f.reposts), mib(f.total()),
      static_cast<double>(f.total()) / static_cast<double>(entries));
  const std::size_t recent = dedup::recent_capacity(options);
  std::printf(
      "  (dedup.max_distance %d, dedup.blocks %d, dedup.sketch %s, dedup.sketch.recent %zu%s)\n", k,
      blocks, options.sketch.enabled ? "on" : "off",
      options.sketch.enabled ? options.sketch.recent : 0, options.window.scoped ? ", scoped" : "");
  if (options.sketch.enabled && recent < options.sketch.recent)
    std::printf(
        "  the recent-text cache holds %zu texts, not dedup.sketch.recent's %zu: it takes at most "
        "1/%zu of window.max_memory\n",
        recent, options.sketch.recent, dedup::kRecentMemoryShare);
  print_header(k, entries);
  print_row(dedup::plan_layout(entries, k, blocks));
  return 0;
}

int run_plan(std::span<const std::string> raw) {
  cli::Args args(raw, {"window", "k", "blocks", "memory", "config"});
  args.expect_no_positionals();
  if (auto memory = args.get("memory")) return run_memory_plan(args, *memory);
  if (args.has("config")) throw cli::UsageError("--config applies with --memory");
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

  print_header(k, window);
  for (const auto& p : plans) print_row(p);
  return 0;
}

const cli::Registrar kPlan{
    {"plan", "show pigeonhole index layouts: tables, cells per probe, bytes per entry", kHelp,
     run_plan}};

}  // namespace
}  // namespace neardup::app
