#include "dedup/core/types.h"

namespace neardup::dedup {

std::string Fingerprint::hex() const {
  std::string out;
  append_hex(out);
  return out;
}

void Fingerprint::append_hex(std::string& out) const {
  static constexpr char kDigits[] = "0123456789abcdef";
  char digits[16];
  std::uint64_t value = bits;
  for (int i = 15; i >= 0; --i, value >>= 4) digits[i] = kDigits[value & 15];
  out.append(digits, 16);
}

ScopeId scope_of(std::string_view value) {
  // FNV-1a over the bytes, then a 64-bit finalizer (splitmix64's) so that
  // values differing in one byte differ in about half of the 32 bits kept.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : value) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return ScopeId{static_cast<std::uint32_t>(mix64(h))};
}

std::optional<Fingerprint> Fingerprint::from_hex(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t bits = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return std::nullopt;
    bits = bits << 4 | static_cast<std::uint64_t>(digit);
  }
  return Fingerprint{bits};
}

}  // namespace neardup::dedup
