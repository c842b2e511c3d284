#include "dedup/engine/schema.h"

#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dedup/fingerprint/sketch.h"

namespace neardup::dedup {
namespace {

const char* weighting_name(Weighting w) {
  switch (w) {
    case Weighting::unit:
      return "unit";
    case Weighting::tf:
      return "tf";
    case Weighting::tf_idf:
      return "tf_idf";
  }
  return "?";
}

std::uint32_t id_of(std::string_view description) {
  const auto id = static_cast<std::uint32_t>(XXH3_64bits(description.data(), description.size()));
  return id == 0 ? 1 : id;
}

std::vector<std::pair<std::string_view, std::string_view>> pairs_of(std::string_view text) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view item = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      out.emplace_back(item, std::string_view{});
    else
      out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

}  // namespace

std::string schema_hex(std::uint32_t id) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", id);
  return text;
}

std::string FingerprintSchema::hex() const { return schema_hex(id); }

FingerprintSchema fingerprint_schema(const DedupOptions& options) {
  const TextOptions& t = options.text;
  std::string d = "normalize=" + std::to_string(t.normalize ? 1 : 0) +
                  " cjk_ngram=" + std::to_string(t.cjk_ngram) +
                  " word_shingle=" + std::to_string(t.word_shingle) +
                  " weighting=" + weighting_name(t.weighting);
  // (only when on, so that the default's id is the one it was before the option)
  if (t.strip_boilerplate) d += " strip_boilerplate=1";
  if (t.weighting == Weighting::tf_idf) {
    if (t.idf_source == IdfSource::file) {
      std::ifstream in(t.idf_file, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      if (!in) throw std::runtime_error("cannot read dedup.idf_file '" + t.idf_file + "'");
      const std::string content = std::move(bytes).str();
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(XXH3_64bits(content.data(), content.size())));
      d += " idf=file:";
      d += hash;
    } else {
      d += " idf=stream";
    }
  }
  FingerprintSchema s;
  if (options.sketch.enabled) {
    d += " sketch.bits=" + std::to_string(options.sketch.bits) +
         " sketch.bands=" + std::to_string(options.sketch.bands) +
         " sketch.band_bins=" + std::to_string(options.sketch.band_bins) +
         " sketch.scheme=" + std::to_string(kSketchScheme);
    s.sketch = options.sketch;
  } else {
    d += " sketch=off";
    s.sketch.enabled = false;
  }
  s.id = id_of(d);
  s.description = std::move(d);
  return s;
}

std::string schema_differences(std::string_view theirs, std::string_view ours) {
  const auto a = pairs_of(theirs), b = pairs_of(ours);
  auto find = [](const auto& pairs, std::string_view key) -> std::string_view {
    for (const auto& [k, v] : pairs)
      if (k == key) return v.empty() ? std::string_view("-") : v;
    return "-";
  };
  std::string out;
  auto add = [&](std::string_view key, std::string_view x, std::string_view y) {
    if (x == y) return;
    if (!out.empty()) out += ", ";
    out += key;
    out += ' ';
    out += x;
    out += " -> ";
    out += y;
  };
  for (const auto& [k, v] : a) add(k, find(a, k), find(b, k));
  for (const auto& [k, v] : b)
    if (find(a, k) == "-" && find(b, k) != "-") add(k, "-", find(b, k));
  return out;
}

}  // namespace neardup::dedup
