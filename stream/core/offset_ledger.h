#pragma once
// Delivery bookkeeping of `neardup run`: which input offsets may be committed.
//
// Every input message read from an assigned partition gets an entry, in the
// order it was read, with the number of its output records (output topic,
// duplicates, dead letters, window changelog) not yet acknowledged by the
// broker. A partition's offset may be committed only past the longest prefix
// of entries whose outputs are all acknowledged, so a crash replays (never
// loses) what was in flight.
//
// Entries are found by a per-partition sequence number (a Ticket), not by
// their offset: offsets can go backwards within one assignment (a topic
// deleted and recreated, a truncated log, a broker restarted empty, an offset
// reset), and a late acknowledgement from before a revocation must not touch
// the entries of the next assignment. Commits follow the prefix whichever way
// its offsets move: the offset to commit is "the last finished entry's offset
// + 1", committed whenever it differs from what was committed last.
//
// Knows nothing of Kafka: partitions are the service's interned source indices.
// Not thread-safe: the pipeline thread owns it (delivery reports are served on
// that thread by Producer::poll).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace neardup::stream {

/// An input partition as the service interned it (stream/core/sources.h): a
/// small index, stable for the process. A type of its own, so that it cannot
/// be passed where an offset, a partition number or a count belongs.
struct SourceIndex {
  std::uint32_t value = 0;
  constexpr SourceIndex() = default;
  constexpr explicit SourceIndex(std::uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(SourceIndex, SourceIndex) = default;
};

/// An offset of an input partition (Kafka's). A type of its own, so that it
/// cannot be passed where a timestamp, a sequence number or a count belongs.
struct Offset {
  std::int64_t value = -1;  ///< -1: none
  constexpr Offset() = default;
  constexpr explicit Offset(std::int64_t v) : value(v) {}
  friend constexpr auto operator<=>(Offset, Offset) = default;
};

/// One input message in the ledger: its partition (source index) and its
/// sequence number there. Fits an opaque pointer (Ticket::pack).
struct Ticket {
  SourceIndex source;     ///< < 2^16
  std::uint64_t seq = 0;  ///< < 2^48

  static constexpr std::uint32_t kMaxSources =
      0xffff;  ///< source 0xffff is reserved for the caller
  std::uint64_t pack() const {
    return (static_cast<std::uint64_t>(source.value) << 48) |
           (seq & ((std::uint64_t{1} << 48) - 1));
  }
  static Ticket unpack(std::uint64_t packed) {
    return Ticket{SourceIndex(static_cast<std::uint32_t>(packed >> 48)),
                  packed & ((std::uint64_t{1} << 48) - 1)};
  }
  friend bool operator==(const Ticket&, const Ticket&) = default;
};

class OffsetLedger {
 public:
  /// What add() saw.
  struct Added {
    Ticket ticket;
    /// The offset is not above the previous one read from this partition in
    /// this assignment: the partition's offsets went back. previous_offset says from where.
    bool jumped_back = false;
    Offset previous_offset;
  };
  /// A partition whose committable offset changed since its last commit.
  struct Commit {
    SourceIndex source;
    Offset offset;  ///< the next offset to read (Kafka's committed offset)
  };

  /// The partition is (re)assigned: it starts with no entries and nothing to commit.
  void assign(SourceIndex source);
  /// The partition is revoked: its entries are forgotten; acknowledgements of
  /// them that arrive later are ignored.
  void revoke(SourceIndex source);
  bool assigned(SourceIndex source) const;

  /// An input message read from an assigned partition, with no outputs yet.
  /// `timestamp_ms` (the input's timestamp, <= 0 if unknown) comes back from
  /// acknowledge() for the end-to-end latency. O(1).
  Added add(SourceIndex source, Offset offset, std::int64_t timestamp_ms);
  /// One more output of the entry is in flight. O(1).
  void expect(Ticket ticket);
  /// One output of the entry is acknowledged (or was never produced). Returns
  /// the input's timestamp when that was the entry's last outstanding output
  /// and it is known, else nullopt. A ticket of a revoked assignment or one
  /// with nothing outstanding is ignored. O(1).
  std::optional<std::int64_t> acknowledge(Ticket ticket);

  /// For each assigned partition (of `only`, if given) whose finished prefix
  /// moved since its last commit: the offset to commit. Marks them committed;
  /// call commit_failed() for those the broker refused. Amortized O(finished entries).
  std::vector<Commit> take_commits(const std::vector<SourceIndex>* only = nullptr);
  /// The commit of `source` failed: the next take_commits() offers it again.
  void commit_failed(SourceIndex source);

  /// The input offset of an entry still in the ledger, or nullopt (finished or revoked). O(1).
  std::optional<Offset> offset_of(Ticket ticket) const;

  /// The offset committed last for `source` in this assignment (none: -1).
  Offset committed_offset(SourceIndex source) const;
  /// Entries of `source` not yet finished (in flight or behind one that is).
  std::size_t pending(SourceIndex source) const;
  /// Inputs whose outputs were all acknowledged and that left the ledger in order.
  std::uint64_t finished() const { return finished_; }
  /// Offset jumps back seen (add() with jumped_back).
  std::uint64_t jumps_back() const { return jumps_back_; }

 private:
  struct Entry {
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = -1;
    std::uint32_t outstanding = 0;
  };
  /// A FIFO of entries with indexed access, in one array that doubles when
  /// full and never shrinks: in steady state adding and finishing entries
  /// allocates nothing (a std::deque allocates a block every few entries).
  class EntryRing {
   public:
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Entry& operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const Entry& operator[](std::size_t i) const {
      return slots_[(head_ + i) & (slots_.size() - 1)];
    }
    Entry& front() { return slots_[head_]; }
    void push_back(const Entry& e) {
      if (size_ == slots_.size()) grow();
      slots_[(head_ + size_) & (slots_.size() - 1)] = e;
      ++size_;
    }
    void pop_front() {
      head_ = (head_ + 1) & (slots_.size() - 1);
      --size_;
    }
    void clear() {
      head_ = 0;
      size_ = 0;
    }

   private:
    void grow() {
      std::vector<Entry> next(slots_.empty() ? 64 : 2 * slots_.size());
      for (std::size_t i = 0; i < size_; ++i) next[i] = (*this)[i];
      slots_ = std::move(next);
      head_ = 0;
    }
    std::vector<Entry> slots_;  // a power of two long, or empty
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };
  struct Partition {
    bool assigned = false;
    EntryRing entries;  ///< in read order; entries[i] has seq first_seq + i
    std::uint64_t first_seq = 0;
    std::uint64_t next_seq = 0;   ///< never reset: a revoked assignment's tickets stay invalid
    std::int64_t last_read = -1;  ///< offset of the last add() in this assignment
    std::int64_t done_next = -1;  ///< last finished entry's offset + 1, or -1
    std::int64_t committed = -1;  ///< what take_commits() returned last, or -1
  };

  Partition& at(SourceIndex source);
  Entry* find(Ticket ticket);
  void pop_finished(Partition& p);

  std::vector<Partition> partitions_;
  std::uint64_t finished_ = 0;
  std::uint64_t jumps_back_ = 0;
};

}  // namespace neardup::stream
