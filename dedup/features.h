#pragma once
// Features of a normalized text and the per-call table that counts them.
//
// A feature is identified by its 64-bit xxh3 hash (fixed seed, so fingerprints
// are stable across runs, machines and versions of neardup that keep the seed):
//   word / symbol token  -> hash of its normalized UTF-8 bytes
//   CJK run              -> hash of each n-character window (n = cjk_ngram);
//                           a run shorter than n is one feature, the whole run
//   word shingle (n >= 2)-> hash of the n consecutive word hashes (CJK runs
//                           and symbols do not interrupt the word sequence)

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dedup/normalize.h"

namespace neardup::dedup {

/// The feature hash of a word, symbol or CJK n-gram given as its normalized bytes.
std::uint64_t feature_hash(std::string_view normalized_bytes);
/// The feature hash of a shingle of consecutive words, given their feature hashes.
std::uint64_t shingle_hash(std::span<const std::uint64_t> word_hashes);

/// Counts distinct feature hashes. Open addressing with linear probing over a
/// power-of-two table kept at most half full; clear() is O(1) (a generation
/// stamp), so after warm-up a document costs no allocation. Not thread-safe.
class FeatureCounter {
 public:
  FeatureCounter();

  /// Forgets every feature. O(1).
  void clear() {
    keys_.clear();
    counts_.clear();
    if (++stamp_ == 0) reset_stamps();
  }

  /// Counts one occurrence of `hash`. Amortized O(1).
  void add(std::uint64_t hash) {
    std::size_t i = static_cast<std::size_t>(hash) & mask_;
    for (;;) {
      Slot& slot = slots_[i];
      if (slot.stamp != stamp_) {
        if ((keys_.size() + 1) * 2 > slots_.size()) {
          grow();
          return add(hash);
        }
        slot = Slot{hash, stamp_, static_cast<std::uint32_t>(keys_.size())};
        keys_.push_back(hash);
        counts_.push_back(1);
        return;
      }
      if (slot.key == hash) {
        ++counts_[slot.index];
        return;
      }
      i = (i + 1) & mask_;
    }
  }

  std::size_t size() const { return keys_.size(); }
  /// Distinct hashes in first-seen order, and their counts (same index).
  std::span<const std::uint64_t> hashes() const { return keys_; }
  std::span<const std::uint32_t> counts() const { return counts_; }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t stamp = 0;
    std::uint32_t index = 0;
  };
  void grow();
  void reset_stamps();

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::uint32_t stamp_ = 1;
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> counts_;
};

/// Turns tokens into features. Stateless apart from its options and a small
/// scratch buffer; not thread-safe.
class FeatureExtractor {
 public:
  /// Throws std::invalid_argument unless 1 <= cjk_ngram <= 8 and 1 <= word_shingle <= 8.
  FeatureExtractor(std::size_t cjk_ngram, std::size_t word_shingle);

  /// Adds every feature of `text` to `counter` (which the caller clears). O(bytes * word_shingle).
  void extract(const NormalizedText& text, FeatureCounter& counter);

 private:
  std::size_t cjk_ngram_;
  std::size_t word_shingle_;
  std::vector<std::uint32_t> char_starts_;  // byte offsets of the characters of one CJK run
};

}  // namespace neardup::dedup
