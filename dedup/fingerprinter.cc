// PROVISIONAL: a plain word SimHash so the tree links; the text helper replaces it.
#include "dedup/fingerprinter.h"

#include <xxhash.h>

#include <array>
#include <cctype>

namespace neardup::dedup {

struct Fingerprinter::Impl {
  TextOptions options;
};

Fingerprinter::Fingerprinter(const TextOptions& options) : impl_(std::make_unique<Impl>(Impl{options})) {}
Fingerprinter::~Fingerprinter() = default;
Fingerprinter::Fingerprinter(Fingerprinter&&) noexcept = default;
Fingerprinter& Fingerprinter::operator=(Fingerprinter&&) noexcept = default;

TextSummary Fingerprinter::analyze(std::string_view text) {
  std::array<int, 64> counters{};
  TextSummary summary;
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    std::uint64_t h = XXH3_64bits_withSeed(word.data(), word.size(), 0);
    for (int i = 0; i < 64; ++i) counters[i] += (h >> i & 1) ? 1 : -1;
    ++summary.features;
    word.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80)) word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else flush();
  }
  flush();
  for (int i = 0; i < 64; ++i) if (counters[i] > 0) summary.fingerprint.bits |= 1ULL << i;
  return summary;
}

}  // namespace neardup::dedup
