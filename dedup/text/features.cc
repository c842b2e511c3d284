#include "dedup/text/features.h"

// Inline xxh3 into the tokenizer loop: most features are a few bytes long, and
// for those the call into libxxhash costs as much as the hash itself.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <array>
#include <stdexcept>
#include <string>

namespace neardup::dedup {
namespace {

// Fixed seeds: changing them changes every fingerprint (and invalidates stored windows).
constexpr XXH64_hash_t kFeatureSeed = 0x6e65617264757031ULL;  // "neardup1"
constexpr XXH64_hash_t kShingleSeed = 0x6e65617264757032ULL;  // "neardup2"

constexpr std::size_t kMaxGram = 8;

}  // namespace

std::uint64_t feature_hash(std::string_view bytes) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), kFeatureSeed);
}

std::uint64_t shingle_hash(std::span<const std::uint64_t> word_hashes) {
  return XXH3_64bits_withSeed(word_hashes.data(), word_hashes.size_bytes(), kShingleSeed);
}

FeatureCounter::FeatureCounter() : slots_(1024), mask_(1023), keys_(257), counts_(257) {}

void FeatureCounter::grow() {
  std::vector<Slot> bigger(slots_.size() * 2);
  const std::size_t mask = bigger.size() - 1;
  for (std::uint32_t index = 0; index < size_; ++index) {
    std::size_t i = static_cast<std::size_t>(keys_[index]) & mask;
    while (bigger[i].stamp == stamp_) i = (i + 1) & mask;
    bigger[i] = Slot{keys_[index], stamp_, index};
  }
  slots_ = std::move(bigger);
  mask_ = mask;
  keys_.resize(slots_.size() / 4 + 1);
  counts_.resize(slots_.size() / 4 + 1);
}

void FeatureCounter::reset_stamps() {
  for (Slot& slot : slots_) slot.stamp = 0;
  stamp_ = 1;
}

FeatureExtractor::FeatureExtractor(std::size_t cjk_ngram, std::size_t word_shingle)
    : cjk_ngram_(cjk_ngram), word_shingle_(word_shingle) {
  if (cjk_ngram < 1 || cjk_ngram > kMaxGram)
    throw std::invalid_argument("text.cjk_ngram must be between 1 and 8, got " +
                                std::to_string(cjk_ngram));
  if (word_shingle < 1 || word_shingle > kMaxGram)
    throw std::invalid_argument("text.word_shingle must be between 1 and 8, got " +
                                std::to_string(word_shingle));
}

void FeatureExtractor::extract(const NormalizedText& text, FeatureCounter& counter) {
  const char* base = text.text.data();
  // The last word hashes, oldest first, for shingles.
  std::array<std::uint64_t, kMaxGram> recent{};
  std::size_t words = 0;
  for (std::size_t t = 0; t < text.token_count; ++t) {
    const Token& token = text.tokens[t];
    const char* bytes = base + token.offset;
    if (token.kind != TokenKind::cjk) {
      const std::uint64_t h = XXH3_64bits_withSeed(bytes, token.size, kFeatureSeed);
      counter.add(h);
      if (word_shingle_ >= 2) {
        if (words < word_shingle_) {
          recent[words++] = h;
        } else {
          for (std::size_t i = 1; i < word_shingle_; ++i) recent[i - 1] = recent[i];
          recent[word_shingle_ - 1] = h;
        }
        if (words == word_shingle_)
          counter.add(shingle_hash(std::span(recent.data(), word_shingle_)));
      }
      continue;
    }
    // CJK run: valid UTF-8 by construction, so lead bytes mark characters.
    char_starts_.clear();
    for (std::uint32_t i = 0; i < token.size; ++i)
      if ((static_cast<unsigned char>(bytes[i]) & 0xC0) != 0x80) char_starts_.push_back(i);
    char_starts_.push_back(token.size);
    const std::size_t chars = char_starts_.size() - 1;
    if (chars <= cjk_ngram_) {
      counter.add(XXH3_64bits_withSeed(bytes, token.size, kFeatureSeed));
      continue;
    }
    for (std::size_t i = 0; i + cjk_ngram_ <= chars; ++i) {
      const std::uint32_t from = char_starts_[i];
      counter.add(
          XXH3_64bits_withSeed(bytes + from, char_starts_[i + cjk_ngram_] - from, kFeatureSeed));
    }
  }
}

}  // namespace neardup::dedup
