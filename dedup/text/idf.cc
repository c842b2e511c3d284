#include "dedup/text/idf.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace neardup::dedup {
namespace {

// Each row indexes with its own 16 bits of the (xxh3, well mixed) feature hash:
// four independent hash functions for free.
std::size_t column(std::uint64_t hash, std::size_t row) {
  return static_cast<std::size_t>(hash >> (16 * row)) & (StreamIdf::kColumns - 1);
}

}  // namespace

StreamIdf::StreamIdf() : counts_(std::make_unique<std::array<std::uint32_t, kRows * kColumns>>()) {
  counts_->fill(0);
  for (std::size_t i = 0; i < log_table_.size(); ++i)
    log_table_[i] = std::log(static_cast<double>(i) + 1.0);
}

std::uint32_t StreamIdf::document_frequency(std::uint64_t hash) const {
  std::uint32_t df = UINT32_MAX;
  for (std::size_t r = 0; r < kRows; ++r)
    df = std::min(df, (*counts_)[r * kColumns + column(hash, r)]);
  return df;
}

void StreamIdf::weigh_and_learn(std::span<const std::uint64_t> hashes, std::span<double> out) {
  const double log_n = std::log(static_cast<double>(documents_) + 1.0);
  auto& counts = *counts_;
  for (std::size_t i = 0; i < hashes.size() && i < out.size(); ++i) {
    const std::uint64_t h = hashes[i];
    std::uint32_t* cells[kRows];
    std::uint32_t df = UINT32_MAX;
    for (std::size_t r = 0; r < kRows; ++r) {
      cells[r] = &counts[r * kColumns + column(h, r)];
      df = std::min(df, *cells[r]);
    }
    const double log_df =
        df < log_table_.size() ? log_table_[df] : std::log(static_cast<double>(df) + 1.0);
    out[i] = log_n - log_df + 1.0;
    // Conservative update: raise only the cells below the new estimate.
    if (df != UINT32_MAX) {
      const std::uint32_t next = df + 1;
      for (std::uint32_t* cell : cells) *cell = std::max(*cell, next);
    }
  }
  ++documents_;
}

FileIdf::FileIdf(const std::string& path, const TermKeyFunction& key_of) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read idf file '" + path + "': " + std::strerror(errno));
  std::string line;
  std::size_t number = 0;
  bool any = false;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(number) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) fail("expected 'term<TAB>idf', found no tab");
    if (tab == 0) fail("empty term before the tab");
    const std::string_view value(line.data() + tab + 1, line.size() - tab - 1);
    double idf = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), idf);
    if (ec != std::errc() || end != value.data() + value.size())
      fail("expected a number after the tab, got '" + std::string(value) + "'");
    if (!std::isfinite(idf) || idf < 0)
      fail("idf must be a finite number >= 0, got '" + std::string(value) + "'");
    std::uint64_t key = 0;
    any = true;
    max_idf_ = std::max(max_idf_, idf);
    // A term with no feature in it (only punctuation, say) can never match.
    if (key_of(std::string_view(line.data(), tab), key)) idf_[key] = idf;
  }
  if (in.bad()) fail("read error");
  if (!any) throw std::runtime_error("idf file '" + path + "' has no 'term<TAB>idf' entries");
}

}  // namespace neardup::dedup
