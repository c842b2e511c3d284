#include "stream/records/changelog_record.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "base/json.h"
#include "stream/records/binary_record.h"

namespace neardup::stream {

namespace {

constexpr std::int64_t kMaxOffset = (std::int64_t{1} << 48) - 1;  // what a RecordRef can carry
constexpr std::size_t kMaxTopicName = 249;                        // Kafka's own limit
constexpr std::string_view kBatchMagic = "NDC4";                  // format version 4
constexpr std::string_view kBatchMagic3 = "NDC3";                 // format version 3
constexpr std::uint8_t kHasSketch = 1, kHasScope = 2;             // entry flags (versions 3, 4)
constexpr std::uint8_t kOwnSketchOptions = 4;                     // entry flag (version 4)
constexpr std::size_t kMinBinaryEntry3 = 31;                      // flags..offset, no options
constexpr std::size_t kMinBinaryEntry4 = 13;                      // flags..offset, no options

void append_hex64(std::string& out, std::uint64_t value) {
  dedup::Fingerprint{value}.append_hex(out);
}

std::optional<std::uint64_t> parse_hex64(std::string_view text) {
  auto fp = dedup::Fingerprint::from_hex(text);
  if (!fp) return std::nullopt;
  return fp->bits;
}

/// The int64 member `name`, if present and an integer in [lo, hi].
std::optional<std::int64_t> int_member(simdjson::dom::object obj, const char* name, std::int64_t lo,
                                       std::int64_t hi) {
  std::int64_t value = 0;
  if (obj[name].get_int64().get(value) != simdjson::SUCCESS) return std::nullopt;
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

std::optional<std::string_view> string_member(simdjson::dom::object obj, const char* name) {
  std::string_view value;
  if (obj[name].get_string().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

}  // namespace

std::string changelog_key(dedup::Fingerprint fingerprint) { return fingerprint.hex(); }

namespace {

/// The members of a version 1 record, without braces: "fp":...,"t":...,... ("sketch" last, when
/// present).
void append_entry_members(std::string& out, const ChangelogRecord& r) {
  out += "\"fp\":\"";
  append_hex64(out, r.fingerprint.bits);
  out += "\",\"t\":";
  out += std::to_string(r.time.ms);
  out += ",\"topic\":";
  base::append_json_string(out, r.topic);
  out += ",\"partition\":";
  out += std::to_string(r.partition);
  out += ",\"offset\":";
  out += std::to_string(r.offset);
  if (r.scope.value != 0) {
    out += ",\"scope\":";
    out += std::to_string(r.scope.value);
  }
  out += ",\"instance\":\"";
  append_hex64(out, r.instance);
  out += '"';
  if (r.schema != 0) {
    out += ",\"schema\":\"";
    out += dedup::schema_hex(r.schema);
    out += '"';
  }
  if (r.has_sketch) {
    out += ",\"sketch\":{\"bits\":";
    out += std::to_string(r.bits);
    out += ",\"band_bins\":";
    out += std::to_string(r.band_bins);
    out += ",\"scheme\":";
    out += std::to_string(r.scheme);
    out += ",\"minhash\":\"";
    append_hex64(out, r.sketch.sketch.words[0]);
    append_hex64(out, r.sketch.sketch.words[1]);
    out += "\",\"bands\":[";
    const int bands = std::clamp(r.bands, 0, dedup::kMaxSketchBands);
    for (int b = 0; b < bands; ++b) {
      if (b) out += ',';
      out += '"';
      append_hex64(out, r.sketch.band_keys[static_cast<std::size_t>(b)]);
      out += '"';
    }
    out += "]}";
  }
}

/// Parses the members of one entry (everything but "v" and "instance") into `r`.
/// Returns nullptr or the reason it is malformed.
const char* parse_entry(simdjson::dom::object obj, ChangelogRecord& r) {
  auto fp_text = string_member(obj, "fp");
  auto fp = fp_text ? parse_hex64(*fp_text) : std::nullopt;
  if (!fp) return "\"fp\" is not 16 hex digits";
  r.fingerprint.bits = *fp;
  auto t = int_member(obj, "t", std::numeric_limits<std::int64_t>::min(),
                      std::numeric_limits<std::int64_t>::max());
  if (!t) return "\"t\" is not an integer";
  r.time.ms = *t;
  auto topic = string_member(obj, "topic");
  if (!topic || topic->empty() || topic->size() > kMaxTopicName)
    return "\"topic\" is not a topic name";
  r.topic = std::string(*topic);
  auto partition = int_member(obj, "partition", 0, std::numeric_limits<std::int32_t>::max());
  if (!partition) return "\"partition\" is not a partition number";
  r.partition = static_cast<std::int32_t>(*partition);
  auto offset = int_member(obj, "offset", 0, kMaxOffset);
  if (!offset) return "\"offset\" is not an offset below 2^48";
  r.offset = *offset;
  r.scope = {};
  simdjson::dom::element scope_element;
  if (obj["scope"].get(scope_element) == simdjson::SUCCESS) {
    auto scope = int_member(obj, "scope", 0, std::numeric_limits<std::uint32_t>::max());
    if (!scope) return "\"scope\" is not a 32-bit scope";
    r.scope.value = static_cast<std::uint32_t>(*scope);
  }

  simdjson::dom::element sketch_element;
  if (obj["sketch"].get(sketch_element) == simdjson::SUCCESS) {
    simdjson::dom::object sketch;
    if (sketch_element.get_object().get(sketch) != simdjson::SUCCESS)
      return "\"sketch\" is not an object";
    auto bits = int_member(sketch, "bits", 1, 8);
    if (!bits || (*bits != 1 && *bits != 2 && *bits != 4 && *bits != 8))
      return "\"sketch.bits\" is not 1, 2, 4 or 8";
    r.bits = static_cast<int>(*bits);
    auto band_bins = int_member(sketch, "band_bins", 1, dedup::kSketchBits);
    if (!band_bins) return "\"sketch.band_bins\" is out of range";
    r.band_bins = static_cast<int>(*band_bins);
    simdjson::dom::element scheme_element;
    if (sketch["scheme"].get(scheme_element) == simdjson::SUCCESS) {
      auto scheme = int_member(sketch, "scheme", 1, 255);
      if (!scheme) return "\"sketch.scheme\" is out of range";
      r.scheme = static_cast<int>(*scheme);
    } else {
      r.scheme = 1;  // written before the member existed: rotation densification
    }
    auto minhash = string_member(sketch, "minhash");
    if (!minhash || minhash->size() != 32) return "\"sketch.minhash\" is not 32 hex digits";
    auto w0 = parse_hex64(minhash->substr(0, 16)), w1 = parse_hex64(minhash->substr(16));
    if (!w0 || !w1) return "\"sketch.minhash\" is not 32 hex digits";
    r.sketch.sketch.words = {*w0, *w1};
    simdjson::dom::array bands;
    if (sketch["bands"].get_array().get(bands) != simdjson::SUCCESS)
      return "\"sketch.bands\" is not an array";
    int n = 0;
    for (simdjson::dom::element band : bands) {
      if (n >= dedup::kMaxSketchBands) return "\"sketch.bands\" has more than 8 keys";
      std::string_view text;
      auto key =
          band.get_string().get(text) == simdjson::SUCCESS ? parse_hex64(text) : std::nullopt;
      if (!key) return "\"sketch.bands\" holds a key that is not 16 hex digits";
      r.sketch.band_keys[static_cast<std::size_t>(n++)] = *key;
    }
    r.bands = n;
    r.has_sketch = true;
    r.sketch.shingles = 1;
  }
  return nullptr;
}

/// The parsed root object and its version, or the reason it is not one.
const char* parse_root(simdjson::dom::parser& parser, std::string_view value,
                       simdjson::dom::object& obj, std::int64_t& version) {
  simdjson::dom::element root;
  if (parser.parse(value.data(), value.size(), true).get(root) != simdjson::SUCCESS)
    return "not JSON";
  if (root.get_object().get(obj) != simdjson::SUCCESS) return "not a JSON object";
  auto v = int_member(obj, "v", 0, std::numeric_limits<std::int64_t>::max());
  if (!v) return "no format version \"v\"";
  version = *v;
  return nullptr;
}

const char* parse_instance(simdjson::dom::object obj, std::uint64_t& instance) {
  auto instance_text = string_member(obj, "instance");
  auto parsed = instance_text ? parse_hex64(*instance_text) : std::nullopt;
  if (!parsed) return "\"instance\" is not 16 hex digits";
  instance = *parsed;
  return nullptr;
}

/// Why a decoded entry cannot be used, or nullptr.
const char* check_entry(const ChangelogRecord& e, std::size_t topic, std::size_t topics) {
  if (topic >= topics) return "an entry names no topic of the record";
  if (e.partition < 0) return "an entry's partition is negative";
  if (e.offset < 0 || e.offset > kMaxOffset) return "an entry's offset is out of range";
  if (e.has_sketch && (e.bits != 1 && e.bits != 2 && e.bits != 4 && e.bits != 8))
    return "a sketch's bits is not 1, 2, 4 or 8";
  if (e.has_sketch && (e.band_bins < 1 || e.band_bins > dedup::kSketchBits))
    return "a sketch's band_bins is out of range";
  if (e.has_sketch && e.scheme < 1) return "a sketch's scheme is out of range";
  if (e.bands > dedup::kMaxSketchBands) return "a sketch has more than 8 band keys";
  return nullptr;
}

/// A binary batch's header (versions 3 and 4 share it): its topics and entry
/// count and its writer instance, or the reason it is not one. `min_entry`: the version's smallest
/// entry.
const char* read_batch_header(binary::Reader& r, std::string_view value, std::string_view magic,
                              std::size_t min_entry, std::uint64_t& instance,
                              std::vector<std::string>& topics, std::uint32_t& n) {
  std::uint64_t batch = 0;
  std::string error;
  if (!binary::read_header(r, magic, "not a changelog batch", instance, batch, topics, n, &error))
    return "truncated header";
  if (n == 0) return "no entries";
  if (n > value.size() / min_entry + 1) return "entry count larger than the record";
  for (const std::string& topic : topics)
    if (topic.empty() || topic.size() > kMaxTopicName) return "a topic is not a topic name";
  return nullptr;
}

/// A version 4 batch (binary): appends every entry to `out`, or nothing and the reason.
const char* decode_batch4(std::string_view value, std::vector<ChangelogRecord>& out) {
  binary::Reader r(value);
  std::uint64_t instance = 0;
  std::vector<std::string> topics;
  std::uint32_t n = 0;
  if (const char* reason =
          read_batch_header(r, value, kBatchMagic, kMinBinaryEntry4, instance, topics, n))
    return reason;
  const auto schema = r.get<std::uint32_t>();
  const auto description_len = r.get<std::uint8_t>();
  auto description = std::make_shared<const std::string>(r.bytes(description_len));
  const int bits = r.get<std::uint8_t>(), band_bins = r.get<std::uint8_t>(),
            scheme = r.get<std::uint8_t>(), bands = r.get<std::uint8_t>();
  if (!r.ok) return "truncated header";
  if (schema == 0) return "the schema id is 0";
  const std::size_t first = out.size();
  const char* reason = nullptr;
  std::int64_t time = 0, offset = 0;
  for (std::uint32_t i = 0; i < n && !reason; ++i) {
    ChangelogRecord e;
    const auto flags = r.get<std::uint8_t>();
    e.fingerprint.bits = r.get<std::uint64_t>();
    time += binary::unzigzag(r.varint());
    e.time.ms = time;
    const std::uint64_t topic = r.varint();
    const std::uint64_t partition = r.varint();
    e.partition = partition > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())
                      ? -1
                      : static_cast<std::int32_t>(partition);
    offset += binary::unzigzag(r.varint());
    e.offset = offset;
    if (flags & kHasScope) {
      const std::uint64_t scope = r.varint();
      if (scope > std::numeric_limits<std::uint32_t>::max()) r.ok = false;
      e.scope.value = static_cast<std::uint32_t>(scope);
    }
    if (flags & kHasSketch) {
      if (flags & kOwnSketchOptions) {
        e.bits = r.get<std::uint8_t>();
        e.band_bins = r.get<std::uint8_t>();
        e.scheme = r.get<std::uint8_t>();
        e.bands = r.get<std::uint8_t>();
      } else {
        e.bits = bits;
        e.band_bins = band_bins;
        e.scheme = scheme;
        e.bands = bands;
      }
      e.sketch.sketch.words = {r.get<std::uint64_t>(), r.get<std::uint64_t>()};
      if (e.bands > dedup::kMaxSketchBands) {
        reason = "a sketch has more than 8 band keys";
        break;
      }
      for (int b = 0; b < e.bands; ++b)
        e.sketch.band_keys[static_cast<std::size_t>(b)] = r.get<std::uint64_t>();
      e.has_sketch = true;
      e.sketch.shingles = 1;
    }
    if (!r.ok) {
      reason = "truncated entry";
    } else if ((flags & ~(kHasSketch | kHasScope | kOwnSketchOptions)) != 0) {
      reason = "an entry has unknown flags";
    } else if ((reason = check_entry(e, topic, topics.size()))) {
    } else {
      e.topic = topics[topic];
      e.instance = instance;
      e.schema = schema;
      e.schema_description = description;
      out.push_back(std::move(e));
    }
  }
  if (!reason && !r.at_end()) reason = "bytes after the last entry";
  if (reason) out.resize(first);
  return reason;
}

/// A version 3 batch (binary): appends every entry to `out`, or nothing and the reason.
const char* decode_batch3(std::string_view value, std::vector<ChangelogRecord>& out) {
  binary::Reader r(value);
  std::uint64_t instance = 0;
  std::vector<std::string> topics;
  std::uint32_t n = 0;
  if (const char* reason =
          read_batch_header(r, value, kBatchMagic3, kMinBinaryEntry3, instance, topics, n))
    return reason;
  const std::size_t first = out.size();
  const char* reason = nullptr;
  for (std::uint32_t i = 0; i < n && !reason; ++i) {
    ChangelogRecord e;
    const auto flags = r.get<std::uint8_t>();
    e.fingerprint.bits = r.get<std::uint64_t>();
    e.time.ms = r.get<std::int64_t>();
    const auto topic = r.get<std::uint16_t>();
    e.partition = r.get<std::int32_t>();
    e.offset = r.get<std::int64_t>();
    if (flags & kHasScope) e.scope.value = r.get<std::uint32_t>();
    if (flags & kHasSketch) {
      e.bits = r.get<std::uint8_t>();
      e.band_bins = r.get<std::uint8_t>();
      e.scheme = r.get<std::uint8_t>();
      e.bands = r.get<std::uint8_t>();
      e.sketch.sketch.words = {r.get<std::uint64_t>(), r.get<std::uint64_t>()};
      if (e.bands > dedup::kMaxSketchBands) {
        reason = "a sketch has more than 8 band keys";
        break;
      }
      for (int b = 0; b < e.bands; ++b)
        e.sketch.band_keys[static_cast<std::size_t>(b)] = r.get<std::uint64_t>();
      e.has_sketch = true;
      e.sketch.shingles = 1;
    }
    if (!r.ok) {
      reason = "truncated entry";
    } else if ((flags & ~(kHasSketch | kHasScope)) != 0) {
      reason = "an entry has unknown flags";
    } else if (topic >= topics.size()) {
      reason = "an entry names no topic of the record";
    } else if (e.partition < 0) {
      reason = "an entry's partition is negative";
    } else if (e.offset < 0 || e.offset > kMaxOffset) {
      reason = "an entry's offset is out of range";
    } else if (e.has_sketch && (e.bits != 1 && e.bits != 2 && e.bits != 4 && e.bits != 8)) {
      reason = "a sketch's bits is not 1, 2, 4 or 8";
    } else if (e.has_sketch && (e.band_bins < 1 || e.band_bins > dedup::kSketchBits)) {
      reason = "a sketch's band_bins is out of range";
    } else if (e.has_sketch && e.scheme < 1) {
      reason = "a sketch's scheme is out of range";
    } else {
      e.topic = topics[topic];
      e.instance = instance;
      out.push_back(std::move(e));
    }
  }
  if (!reason && !r.at_end()) reason = "bytes after the last entry";
  if (reason) out.resize(first);
  return reason;
}

}  // namespace

std::string encode_changelog_value(const ChangelogRecord& r) {
  std::string out;
  out.reserve(200 + r.topic.size() + 19 * static_cast<std::size_t>(r.bands));
  out += "{\"v\":";
  out += std::to_string(kChangelogVersion1);
  out += ',';
  append_entry_members(out, r);
  out += '}';
  return out;
}

std::optional<ChangelogRecord> decode_changelog_value(std::string_view value, std::string* error) {
  auto fail = [error](const char* reason) -> std::optional<ChangelogRecord> {
    if (error) *error = reason;
    return std::nullopt;
  };
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object obj;
  std::int64_t version = 0;
  if (const char* reason = parse_root(parser, value, obj, version)) return fail(reason);
  if (version != kChangelogVersion1) return fail("unsupported format version");
  ChangelogRecord r;
  if (const char* reason = parse_entry(obj, r)) return fail(reason);
  if (const char* reason = parse_instance(obj, r.instance)) return fail(reason);
  return r;
}

bool decode_changelog(std::string_view value, std::vector<ChangelogRecord>& out,
                      std::string* error) {
  auto fail = [error](const char* reason) {
    if (error) *error = reason;
    return false;
  };
  if (value.substr(0, kBatchMagic.size()) == kBatchMagic) {
    if (const char* reason = decode_batch4(value, out)) return fail(reason);
    return true;
  }
  if (value.substr(0, kBatchMagic3.size()) == kBatchMagic3) {
    if (const char* reason = decode_batch3(value, out)) return fail(reason);
    return true;
  }
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object obj;
  std::int64_t version = 0;
  if (const char* reason = parse_root(parser, value, obj, version)) return fail(reason);
  if (version == kChangelogVersion1) {
    ChangelogRecord r;
    if (const char* reason = parse_entry(obj, r)) return fail(reason);
    if (const char* reason = parse_instance(obj, r.instance)) return fail(reason);
    out.push_back(std::move(r));
    return true;
  }
  if (version != kChangelogVersion2) return fail("unsupported format version");
  std::uint64_t instance = 0;
  if (const char* reason = parse_instance(obj, instance)) return fail(reason);
  simdjson::dom::array entries;
  if (obj["entries"].get_array().get(entries) != simdjson::SUCCESS)
    return fail("\"entries\" is not an array");
  const std::size_t first = out.size();
  for (simdjson::dom::element element : entries) {
    simdjson::dom::object entry;
    ChangelogRecord r;
    const char* reason = element.get_object().get(entry) == simdjson::SUCCESS
                             ? parse_entry(entry, r)
                             : "an entry is not an object";
    if (reason) {
      out.resize(first);
      return fail(reason);
    }
    r.instance = instance;
    out.push_back(std::move(r));
  }
  if (out.size() == first) return fail("\"entries\" is empty");
  return true;
}

// ------------------------------------------------------------------ batch

std::string ChangelogBatch::value_prefix(std::uint64_t instance) {
  std::string out(kBatchMagic);
  binary::put(out, instance);
  return out;
}

ChangelogBatch::ChangelogBatch(std::uint64_t instance, dedup::FingerprintSchema schema)
    : instance_(instance), schema_(std::move(schema)) {
  if (schema_.description.size() > 255) schema_.description.resize(255);
  const dedup::SketchOptions& o = schema_.sketch;
  binary::put(params_, schema_.id);
  binary::put(params_, static_cast<std::uint8_t>(schema_.description.size()));
  params_ += schema_.description;
  binary::put(params_, static_cast<std::uint8_t>(o.enabled ? o.bits : 0));
  binary::put(params_, static_cast<std::uint8_t>(o.enabled ? o.band_bins : 0));
  binary::put(params_, static_cast<std::uint8_t>(dedup::kSketchScheme));
  binary::put(params_, static_cast<std::uint8_t>(o.enabled ? o.bands : 0));
}

void ChangelogBatch::add(const ChangelogRecord& record) {
  if (entries_ == 0) {
    body_.clear();
    topics_.clear();
    newest_ = record.time;
    last_time_ = last_offset_ = 0;
  }
  const bool sketch = record.has_sketch;
  const int bands = sketch ? std::clamp(record.bands, 0, dedup::kMaxSketchBands) : 0;
  const dedup::SketchOptions& o = schema_.sketch;
  const bool own_options =
      sketch && !(o.enabled && record.bits == o.bits && record.band_bins == o.band_bins &&
                  bands == o.bands && record.scheme == dedup::kSketchScheme);
  binary::put<std::uint8_t>(
      body_,
      static_cast<std::uint8_t>((sketch ? kHasSketch : 0) | (record.scope.value ? kHasScope : 0) |
                                (own_options ? kOwnSketchOptions : 0)));
  binary::put(body_, record.fingerprint.bits);
  binary::put_varint(body_, binary::zigzag(record.time.ms - last_time_));
  binary::put_varint(body_, binary::intern(topics_, record.topic));
  binary::put_varint(body_, static_cast<std::uint32_t>(record.partition));
  binary::put_varint(body_, binary::zigzag(record.offset - last_offset_));
  last_time_ = record.time.ms;
  last_offset_ = record.offset;
  if (record.scope.value) binary::put_varint(body_, record.scope.value);
  if (sketch) {
    if (own_options) {
      binary::put(body_, static_cast<std::uint8_t>(record.bits));
      binary::put(body_, static_cast<std::uint8_t>(record.band_bins));
      binary::put(body_, static_cast<std::uint8_t>(record.scheme));
      binary::put(body_, static_cast<std::uint8_t>(bands));
    }
    binary::put(body_, record.sketch.sketch.words[0]);
    binary::put(body_, record.sketch.sketch.words[1]);
    for (int b = 0; b < bands; ++b)
      binary::put(body_, record.sketch.band_keys[static_cast<std::size_t>(b)]);
  }
  newest_ = std::max(newest_, record.time);
  ++entries_;
}

ChangelogBatch::Encoded ChangelogBatch::take() {
  Encoded out;
  if (entries_ == 0) return out;
  const std::uint64_t sequence = sequence_++;
  binary::assemble(value_, kBatchMagic, instance_, sequence, topics_,
                   static_cast<std::uint32_t>(entries_), params_);
  value_ += body_;
  key_.clear();
  append_hex64(key_, instance_);
  key_ += '-';
  append_hex64(key_, sequence);
  out.key = key_;
  out.value = value_;
  out.newest = newest_;
  stamp_ = std::max(stamp_, newest_);
  out.stamp = stamp_;
  out.entries = entries_;
  entries_ = 0;  // the buffers keep their capacity: the next add() starts them over
  return out;
}

}  // namespace neardup::stream
