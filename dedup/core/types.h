#pragma once
// Small strong types shared by everything in neardup::dedup.

#include <bit>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neardup::dedup {

/// A 64-bit SimHash fingerprint (Charikar 2002).
struct Fingerprint {
  std::uint64_t bits = 0;
  friend constexpr bool operator==(Fingerprint, Fingerprint) = default;

  /// 16 lower-case hex digits, most significant first.
  std::string hex() const;
  /// The same digits appended to `out` (no temporary string).
  void append_hex(std::string& out) const;
  /// Parses exactly 16 hex digits; nullopt otherwise.
  static std::optional<Fingerprint> from_hex(std::string_view text);
};

/// splitmix64's finalizer: every input bit reaches every output bit (shingle
/// hashes, scope values and scope buckets). The pigeonhole index's bucket hash
/// (CellTables mix in index.h) is murmur3's finalizer; it stays as it is, since
/// its constants place every stored key and the window tests count cells.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Number of differing bits, 0..64.
constexpr int hamming_distance(Fingerprint a, Fingerprint b) {
  return std::popcount(a.bits ^ b.bits);
}

/// Event time in milliseconds since the Unix epoch (a Kafka message timestamp).
struct EventTime {
  std::int64_t ms = 0;
  friend constexpr auto operator<=>(EventTime, EventTime) = default;
};

/// The caller's opaque handle on a source record: a line number for `scan`,
/// a packed (source, offset) for Kafka. The window stores it and gives it back
/// in a Match; equal refs mean "the same message" (a replay is never its own duplicate).
struct RecordRef {
  std::uint64_t value = 0;
  friend constexpr bool operator==(RecordRef, RecordRef) = default;
};

/// Which messages may be near-duplicates of each other (dedup.scope): a probe
/// only finds entries of its own scope. Every message has the zero scope when
/// the scope is global.
struct ScopeId {
  std::uint32_t value = 0;
  friend constexpr bool operator==(ScopeId, ScopeId) = default;
};

/// The scope of a value (a message key, the text of a JSON field): a 32-bit
/// hash of its bytes, the same on every machine and build (instances and the
/// window changelog share it). Two different values share a scope with
/// probability 2^-32. O(bytes).
ScopeId scope_of(std::string_view value);

/// An earlier window entry that a probe found.
struct Match {
  RecordRef of;
  int distance = 0;
  EventTime time;
  Fingerprint fingerprint;
  std::uint64_t sequence = 0;  ///< the entry's window insertion sequence (Window::entry)
  ScopeId scope;
  std::uint32_t duplicates =
      0;  ///< duplicates of this entry counted so far (Window::count_duplicate)
};

}  // namespace neardup::dedup
