#pragma once
// The input topic-partitions `neardup run` has seen, interned once: a small
// index (a "source") names a partition in window refs, ledger tickets and
// delivery opaques. Pipeline thread only (the worker reads only indices).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dedup/core/types.h"
#include "stream/core/offset_ledger.h"
#include "stream/kafka/kafka.h"

namespace neardup::stream {

/// Packs (interned source index, offset) into a dedup::RecordRef: 16 bits of
/// source index (a topic-partition), 48 bits of offset. The same message read
/// twice gets the same ref, so a replay is never its own duplicate.
constexpr dedup::RecordRef pack_ref(SourceIndex source, std::int64_t offset) {
  return dedup::RecordRef{(static_cast<std::uint64_t>(source.value) << 48) |
                          (static_cast<std::uint64_t>(offset) & ((std::uint64_t{1} << 48) - 1))};
}
constexpr SourceIndex ref_source(dedup::RecordRef ref) {
  return SourceIndex(static_cast<std::uint32_t>(ref.value >> 48));
}
constexpr std::int64_t ref_offset(dedup::RecordRef ref) {
  return static_cast<std::int64_t>(ref.value & ((std::uint64_t{1} << 48) - 1));
}

/// An input topic-partition: interned once, index stable for the process.
struct Source {
  std::string topic;
  std::int32_t partition = 0;
  bool assigned = false;
  std::int64_t position = -1;  ///< next offset to read (for lag), -1 unknown
  /// exactly-once: where the last committed transaction resumes this
  /// partition (-1 unknown), and the first offset read in this assignment.
  std::int64_t committed = -1;
  std::int64_t first_read = -1;
  /// "topic/partition/offset", as the neardup-source and neardup-of headers write it.
  std::string locate(std::int64_t offset) const {
    return topic + "/" + std::to_string(partition) + "/" + std::to_string(offset);
  }
};

class Sources {
 public:
  /// The index of (topic, partition), interning it on first sight. Throws
  /// kafka::KafkaError (fatal) past 65534 partitions.
  SourceIndex intern(std::string_view topic, std::int32_t partition) {
    // Looked up by view: a message of a known partition allocates nothing.
    auto it = index_.find(KeyView{topic, partition});
    if (it != index_.end()) return it->second;
    if (sources_.size() >= Ticket::kMaxSources) {
      throw kafka::KafkaError("more than 65534 input partitions", kafka::errc::fail,
                              kafka::Severity::fatal);
    }
    const SourceIndex index(static_cast<std::uint32_t>(sources_.size()));
    Source source;
    source.topic = std::string(topic);
    source.partition = partition;
    sources_.push_back(std::move(source));
    index_.emplace(Key{std::string(topic), partition}, index);
    return index;
  }
  Source& operator[](SourceIndex index) { return sources_[index.value]; }
  const Source& operator[](SourceIndex index) const { return sources_[index.value]; }
  std::size_t size() const { return sources_.size(); }
  /// Whether `index` names an interned source.
  bool contains(SourceIndex index) const { return index.value < sources_.size(); }
  /// Every interned index, in interning order, for a range-for (as many as
  /// there are when it is called). A plain iterator: clang 14 cannot compile
  /// libstdc++ 12's range views (the clang-tsa preset).
  class Indices {
   public:
    struct Iterator {
      std::uint32_t at;
      SourceIndex operator*() const { return SourceIndex(at); }
      Iterator& operator++() {
        ++at;
        return *this;
      }
      bool operator!=(const Iterator& other) const { return at != other.at; }
    };
    explicit Indices(std::uint32_t count) : count_(count) {}
    Iterator begin() const { return Iterator{0}; }
    Iterator end() const { return Iterator{count_}; }

   private:
    std::uint32_t count_;
  };
  Indices indices() const { return Indices(static_cast<std::uint32_t>(sources_.size())); }
  auto begin() { return sources_.begin(); }
  auto end() { return sources_.end(); }
  auto begin() const { return sources_.begin(); }
  auto end() const { return sources_.end(); }

 private:
  struct Key {
    std::string topic;
    std::int32_t partition;
  };
  struct KeyView {
    std::string_view topic;
    std::int32_t partition;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& k) const noexcept {
      return std::hash<std::string_view>{}(k.topic) ^
             (static_cast<std::size_t>(static_cast<std::uint32_t>(k.partition)) *
              0x9e3779b97f4a7c15ULL);
    }
    std::size_t operator()(const Key& k) const noexcept {
      return (*this)(KeyView{k.topic, k.partition});
    }
  };
  struct KeyEqual {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return a.partition == b.partition && std::string_view(a.topic) == std::string_view(b.topic);
    }
  };

  std::vector<Source> sources_;
  std::unordered_map<Key, SourceIndex, KeyHash, KeyEqual> index_;
};

}  // namespace neardup::stream
