#pragma once
// The binary record layout shared by the judge's records (stream/records/judge_record.h)
// and the window changelog's batches (stream/records/changelog_record.h): little-endian
// fields, a 4-byte magic that names format and version, then
//   instance:u64 batch:u64 topics:u16 {len:u16 bytes}* entries:u32
// and the entries, whose topic fields index that topic table.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace neardup::stream::binary {

template <typename T>
void put(std::string& out, T value) {
  static_assert(std::endian::native == std::endian::little, "the record format is little-endian");
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

/// LEB128: 7 bits a byte, low first, the high bit set on every byte but the last.
inline void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

/// Zigzag: small negative and positive numbers both take few varint bytes.
inline std::uint64_t zigzag(std::int64_t value) {
  return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}
inline std::int64_t unzigzag(std::uint64_t value) {
  return static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1);
}

/// Bounds-checked reading; `ok` turns false at the first read past the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <typename T>
  T get() {
    T value{};
    if (data_.size() - pos_ < sizeof(T)) {
      ok = false;
      pos_ = data_.size();
      return value;
    }
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string_view bytes(std::size_t n) {
    if (data_.size() - pos_ < n) {
      ok = false;
      pos_ = data_.size();
      return {};
    }
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  /// A put_varint value; at most 10 bytes (else `ok` turns false).
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) break;
      const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ok = false;
    pos_ = data_.size();
    return 0;
  }
  bool at_end() const { return pos_ == data_.size(); }
  bool ok = true;

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

/// The index of `topic` in `topics`, appended when new (a record names a few topics).
inline std::uint16_t intern(std::vector<std::string>& topics, std::string_view topic) {
  for (std::size_t i = 0; i < topics.size(); ++i)
    if (topics[i] == topic) return static_cast<std::uint16_t>(i);
  topics.emplace_back(topic);
  return static_cast<std::uint16_t>(topics.size() - 1);
}

/// `value` = the header, then `body` (the entries, encoded as they were added).
inline std::string_view assemble(std::string& value, std::string_view magic, std::uint64_t instance,
                                 std::uint64_t batch, const std::vector<std::string>& topics,
                                 std::uint32_t entries, std::string_view body) {
  value.clear();
  value.append(magic);
  put(value, instance);
  put(value, batch);
  put<std::uint16_t>(value, static_cast<std::uint16_t>(topics.size()));
  for (const std::string& t : topics) {
    put<std::uint16_t>(value, static_cast<std::uint16_t>(t.size()));
    value += t;
  }
  put(value, entries);
  value += body;
  return value;
}

/// Reads the header; false (with `*error`: `not_this` when the magic differs,
/// else "truncated header") when malformed.
inline bool read_header(Reader& r, std::string_view magic, const char* not_this,
                        std::uint64_t& instance, std::uint64_t& batch,
                        std::vector<std::string>& topics, std::uint32_t& entries,
                        std::string* error) {
  if (r.bytes(magic.size()) != magic) {
    *error = not_this;
    return false;
  }
  instance = r.get<std::uint64_t>();
  batch = r.get<std::uint64_t>();
  const auto n = r.get<std::uint16_t>();
  topics.resize(n);  // (the strings kept reuse their buffers)
  for (std::uint16_t i = 0; i < n && r.ok; ++i) {
    const auto len = r.get<std::uint16_t>();
    topics[i].assign(r.bytes(len));
  }
  if (!r.ok) topics.clear();
  entries = r.get<std::uint32_t>();
  if (!r.ok) *error = "truncated header";
  return r.ok;
}

}  // namespace neardup::stream::binary
