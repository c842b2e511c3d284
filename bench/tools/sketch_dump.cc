// Dumps what the engine computes for each text, for the candidate-recall
// evaluation (bench/quality/candidates.py): one line per input line.
//   neardup_sketch_dump [--band-bins N] < texts.hex > analyses.tsv
// Input: one text per line, its UTF-8 bytes as hex (so any text fits a line).
// Output: features, fingerprint, sketch words, band keys (all hex, the default
// DedupOptions, or with dedup.sketch.band_bins N) and the distinct shingle
// hashes, tab-separated; "-" fields for a text with no shingles.

#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <string>

#include "dedup/core/options.h"
#include "dedup/fingerprint/fingerprinter.h"
#include "dedup/fingerprint/sketch.h"
#include "dedup/text/normalize.h"

namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  neardup::dedup::DedupOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--band-bins" && i + 1 < argc) {
      options.sketch.band_bins = std::stoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: neardup_sketch_dump [--band-bins N] < texts.hex\n");
      return 2;
    }
  }
  neardup::dedup::Fingerprinter fingerprinter(options.text, options.sketch);
  neardup::dedup::Normalizer normalizer;
  neardup::dedup::Sketcher sketcher(options.sketch);
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::string text = from_hex(line);
    const auto summary = fingerprinter.analyze(text);
    std::printf("%u\t%016" PRIx64, summary.features, summary.fingerprint.bits);
    const auto& s = summary.sketch;
    if (s.shingles == 0) {
      std::printf("\t-\t-\t-\n");
      continue;
    }
    std::printf("\t%016" PRIx64 "%016" PRIx64 "\t", s.sketch.words[0], s.sketch.words[1]);
    for (int b = 0; b < options.sketch.bands; ++b)
      std::printf("%s%016" PRIx64, b ? "," : "", s.band_keys[static_cast<std::size_t>(b)]);
    const auto normalized = normalizer.run(text);
    const auto hashes = sketcher.shingle_hashes(normalized);
    std::printf("\t");
    for (std::size_t i = 0; i < hashes.size(); ++i)
      std::printf("%s%016" PRIx64, i ? "," : "", hashes[i]);
    std::printf("\n");
  }
  return 0;
}
