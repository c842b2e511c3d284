#pragma once
// Inverse document frequency: how much a feature tells documents apart.
//   idf(term) = ln((N + 1) / (df(term) + 1)) + 1
// N documents, df(term) of them contain the term. Two sources:
//   StreamIdf learns N and df online with a count-min sketch of fixed size;
//   FileIdf loads "term<TAB>idf" lines.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace neardup::dedup {

/// Document frequencies learned from the stream. Memory is fixed
/// (kRows x kColumns uint32 = 1 MiB) however many distinct features go by; a
/// count-min sketch with conservative update only ever over-estimates df, so a
/// rare term may look a little more common, never rarer. Not thread-safe.
///
/// Note: a learned idf drifts as the stream goes on, so the same text seen at
/// two different times may get a slightly different fingerprint; that is the
/// price of weights that follow the stream.
class StreamIdf {
 public:
  static constexpr std::size_t kRows = 4;
  static constexpr std::size_t kColumns = 65536;

  StreamIdf();

  /// Writes idf(hashes[i]) into out[i] (out.size() >= hashes.size()) from the
  /// documents seen before this one, then counts this document, whose distinct
  /// feature hashes are `hashes`. O(hashes * kRows).
  void weigh_and_learn(std::span<const std::uint64_t> hashes, std::span<double> out);

  std::uint64_t documents() const { return documents_; }
  /// The sketch's (over-)estimate of how many documents contained `hash`.
  std::uint32_t document_frequency(std::uint64_t hash) const;

 private:
  std::unique_ptr<std::array<std::uint32_t, kRows * kColumns>> counts_;
  std::uint64_t documents_ = 0;
  std::array<double, 4096> log_table_;  // ln(df + 1) for small df
};

/// Maps a term from an idf file to the feature hash it stands for (into `key`);
/// returns false when the term holds no feature (only punctuation, say).
using TermKeyFunction = std::function<bool(std::string_view term, std::uint64_t& key)>;

/// IDF values read from a file. Immutable after construction: thread-safe to read.
class FileIdf {
 public:
  /// Reads `path`: one "term<TAB>idf" per line (empty lines and lines starting
  /// with '#' are skipped; idf a finite number >= 0). Throws std::runtime_error
  /// naming the file (and the line, for a bad line) when the file cannot be
  /// read, a line is malformed, or it has no entries.
  FileIdf(const std::string& path, const TermKeyFunction& key_of);

  /// The idf of a feature; features missing from the file get the largest idf
  /// in the file (an unseen term is treated as the rarest kind). O(1).
  double idf(std::uint64_t hash) const {
    const auto it = idf_.find(hash);
    return it == idf_.end() ? max_idf_ : it->second;
  }
  std::size_t size() const { return idf_.size(); }
  double max_idf() const { return max_idf_; }

 private:
  std::unordered_map<std::uint64_t, double> idf_;
  double max_idf_ = 0;
};

}  // namespace neardup::dedup
