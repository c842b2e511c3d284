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

#include "dedup/text/normalize.h"

namespace neardup::dedup {

/// The feature hash of a word, symbol or CJK n-gram given as its normalized bytes.
std::uint64_t feature_hash(std::string_view normalized_bytes);
/// The feature hash of a shingle of consecutive words, given their feature hashes.
std::uint64_t shingle_hash(std::span<const std::uint64_t> word_hashes);

/// Counts distinct feature hashes. Open addressing with linear probing over a
/// power-of-two table kept at most a quarter full (so a probe almost always
/// ends at its first slot); clear() is O(1) (a generation stamp), so after
/// warm-up a document costs no allocation. add() is branch-free apart from the
/// probe loop and the rare growth: whether a feature is new is a coin flip
/// that a branch would mispredict. Not thread-safe.
class FeatureCounter {
 public:
  FeatureCounter();

  /// Forgets every feature. O(1).
  void clear() {
    size_ = 0;
    if (++stamp_ == 0) reset_stamps();
  }

  /// Counts one occurrence of `hash`. Amortized O(1).
  void add(std::uint64_t hash) {
    std::size_t i = static_cast<std::size_t>(hash) & mask_;
    Slot* slot = &slots_[i];
    // One branch, almost never taken (another feature holds the slot). Written
    // as arithmetic: with `&&` (or `&` of two bools) the compiler branches on
    // the stamp or the key first, and whether a feature is new is a coin flip
    // that such a branch mispredicts.
    auto other = [this, hash](const Slot* s) {
      const std::uint64_t live = std::uint64_t{0} - static_cast<std::uint64_t>(s->stamp == stamp_);
      return ((s->key ^ hash) & live) != 0;
    };
    while (other(slot)) {
      i = (i + 1) & mask_;
      slot = &slots_[i];
    }
    const bool fresh = slot->stamp != stamp_;
    // index = fresh ? size_ : slot->index, as a mask (a `?:` here compiles to a branch).
    const std::uint32_t pick_size = std::uint32_t{0} - static_cast<std::uint32_t>(fresh);
    const std::uint32_t index = (size_ & pick_size) | (slot->index & ~pick_size);
    *slot = Slot{hash, stamp_, index};
    // keys_ and counts_ always have room for one more: writing at size_ is
    // harmless when the feature is not new (the slot is beyond size()).
    keys_[size_] = hash;
    counts_[size_] = 0;
    ++counts_[index];
    size_ += fresh;
    if (size_ * 4 > slots_.size()) grow();
  }

  std::size_t size() const { return size_; }
  /// Distinct hashes in first-seen order, and their counts (same index).
  std::span<const std::uint64_t> hashes() const { return {keys_.data(), size_}; }
  std::span<const std::uint32_t> counts() const { return {counts_.data(), size_}; }

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
  std::uint32_t size_ = 0;
  std::vector<std::uint64_t> keys_;    // slots_.size() / 4 + 1 entries, the first size_ in use
  std::vector<std::uint32_t> counts_;  // same
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
