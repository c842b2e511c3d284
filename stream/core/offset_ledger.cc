#include "stream/core/offset_ledger.h"

#include <stdexcept>

namespace neardup::stream {

OffsetLedger::Partition& OffsetLedger::at(SourceIndex source) {
  if (source.value >= Ticket::kMaxSources)
    throw std::out_of_range("offset ledger: source index over 65534");
  if (source.value >= partitions_.size()) partitions_.resize(source.value + 1);
  return partitions_[source.value];
}

void OffsetLedger::assign(SourceIndex source) {
  Partition& p = at(source);
  p.assigned = true;
  p.entries.clear();
  p.first_seq = p.next_seq;
  p.last_read = p.done_next = p.committed = -1;
}

void OffsetLedger::revoke(SourceIndex source) {
  Partition& p = at(source);
  p.assigned = false;
  p.entries.clear();
  p.first_seq = p.next_seq;
}

bool OffsetLedger::assigned(SourceIndex source) const {
  return source.value < partitions_.size() && partitions_[source.value].assigned;
}

OffsetLedger::Added OffsetLedger::add(SourceIndex source, Offset input_offset,
                                      std::int64_t timestamp_ms) {
  const std::int64_t offset = input_offset.value;
  Partition& p = at(source);
  Added added;
  added.ticket = Ticket{source, p.next_seq++};
  if (p.last_read >= 0 && offset <= p.last_read) {
    added.jumped_back = true;
    added.previous_offset = Offset(p.last_read);
    ++jumps_back_;
  }
  p.last_read = offset;
  p.entries.push_back(Entry{offset, timestamp_ms, 0});
  return added;
}

OffsetLedger::Entry* OffsetLedger::find(Ticket ticket) {
  if (ticket.source.value >= partitions_.size()) return nullptr;
  Partition& p = partitions_[ticket.source.value];
  if (ticket.seq < p.first_seq) return nullptr;  // finished, or of a revoked assignment
  const std::uint64_t i = ticket.seq - p.first_seq;
  return i < p.entries.size() ? &p.entries[i] : nullptr;
}

std::optional<Offset> OffsetLedger::offset_of(Ticket ticket) const {
  const Entry* e = const_cast<OffsetLedger*>(this)->find(ticket);
  return e ? std::optional<Offset>(Offset(e->offset)) : std::nullopt;
}

void OffsetLedger::expect(Ticket ticket) {
  if (Entry* e = find(ticket)) ++e->outstanding;
}

std::optional<std::int64_t> OffsetLedger::acknowledge(Ticket ticket) {
  Entry* e = find(ticket);
  if (!e || e->outstanding == 0) return std::nullopt;
  if (--e->outstanding != 0 || e->timestamp_ms <= 0) return std::nullopt;
  return e->timestamp_ms;
}

void OffsetLedger::pop_finished(Partition& p) {
  while (!p.entries.empty() && p.entries.front().outstanding == 0) {
    p.done_next = p.entries.front().offset + 1;
    p.entries.pop_front();
    ++p.first_seq;
    ++finished_;
  }
}

std::vector<OffsetLedger::Commit> OffsetLedger::take_commits(const std::vector<SourceIndex>* only) {
  std::vector<Commit> out;
  auto consider = [&](SourceIndex source) {
    if (source.value >= partitions_.size()) return;
    Partition& p = partitions_[source.value];
    if (!p.assigned) return;
    pop_finished(p);
    if (p.done_next >= 0 && p.done_next != p.committed) {
      out.push_back(Commit{source, Offset(p.done_next)});
      p.committed = p.done_next;
    }
  };
  if (only) {
    for (SourceIndex source : *only) consider(source);
  } else {
    for (std::uint32_t i = 0; i < partitions_.size(); ++i) consider(SourceIndex(i));
  }
  return out;
}

void OffsetLedger::commit_failed(SourceIndex source) {
  if (source.value < partitions_.size()) partitions_[source.value].committed = -1;
}

Offset OffsetLedger::committed_offset(SourceIndex source) const {
  return Offset(source.value < partitions_.size() ? partitions_[source.value].committed : -1);
}

std::size_t OffsetLedger::pending(SourceIndex source) const {
  return source.value < partitions_.size() ? partitions_[source.value].entries.size() : 0;
}

}  // namespace neardup::stream
