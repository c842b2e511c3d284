#include "stream/records/story_record.h"

#include <simdjson.h>

#include "base/json.h"
#include "stream/records/json_out.h"

namespace neardup::stream {
namespace {

void append_position(std::string& out, const StoryPosition& p) {
  out += "{\"topic\":";
  base::append_json_string(out, p.topic);
  out += ",\"partition\":";
  out += std::to_string(p.partition);
  out += ",\"offset\":";
  out += std::to_string(p.offset);
  out += '}';
}

/// `text` cut to at most kStoryExcerptBytes, at a character boundary.
std::string_view excerpt_of(std::string_view text) {
  if (text.size() <= kStoryExcerptBytes) return text;
  std::size_t end = 0;
  while (end < text.size()) {
    std::size_t n = base::utf8_sequence_length(text, end);
    if (n == 0) n = 1;  // (an invalid byte becomes U+FFFD when escaped)
    if (end + n > kStoryExcerptBytes) break;
    end += n;
  }
  return text.substr(0, end);
}

}  // namespace

void story_key(const StoryPosition& original, std::string& out) {
  out.assign(original.topic);
  out += '/';
  out += std::to_string(original.partition);
  out += '/';
  out += std::to_string(original.offset);
}

void encode_story(const dedup::Story& story, const StoryContext& context, std::string& out) {
  out.clear();
  out += "{\"version\":";
  out += std::to_string(kStoryRecordVersion);
  out += ",\"original\":";
  append_position(out, context.original);
  out += ",\"key\":";
  if (context.key)
    base::append_json_string(out, *context.key);
  else
    out += "null";
  out += ",\"first_seen\":";
  out += std::to_string(story.first_seen.ms);
  out += ",\"last_seen\":";
  out += std::to_string(story.last_seen.ms);
  out += ",\"duplicates\":";
  out += std::to_string(story.duplicates);
  if (story.has_similarity) {
    out += ",\"similarity\":{\"min\":";
    append_similarity(out, story.min_similarity);
    out += ",\"max\":";
    append_similarity(out, story.max_similarity);
    out += '}';
  }
  out += ",\"distance\":{\"min\":";
  out += std::to_string(story.min_distance);
  out += ",\"max\":";
  out += std::to_string(story.max_distance);
  out += "},\"samples\":[";
  for (std::size_t i = 0; i < context.samples.size(); ++i) {
    if (i) out += ',';
    append_position(out, context.samples[i]);
  }
  out += ']';
  if (context.excerpt) {
    out += ",\"excerpt\":";
    base::append_json_string(out, excerpt_of(*context.excerpt));
  }
  out += ",\"final\":";
  out += context.final ? "true" : "false";
  out += '}';
}

namespace {

bool read_position(simdjson::dom::element e, StoryPositionName& out) {
  std::string_view topic;
  std::int64_t partition = 0, offset = 0;
  if (e["topic"].get(topic) || e["partition"].get(partition) || e["offset"].get(offset))
    return false;
  if (partition < 0 || partition > INT32_MAX || offset < 0) return false;
  out.topic.assign(topic);
  out.partition = static_cast<std::int32_t>(partition);
  out.offset = offset;
  return true;
}

}  // namespace

bool decode_story(std::string_view value, DecodedStory& out, std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return false;
  };
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(value);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) return fail("not JSON");
  std::int64_t version = 0;
  if (root["version"].get(version) || version != kStoryRecordVersion)
    return fail("not a version 1 story summary");
  out = DecodedStory{};
  simdjson::dom::element original;
  if (root["original"].get(original) || !read_position(original, out.original))
    return fail("no original position");
  std::uint64_t duplicates = 0;
  if (root["first_seen"].get(out.first_seen) || root["last_seen"].get(out.last_seen) ||
      root["duplicates"].get(duplicates) || root["final"].get(out.final))
    return fail("a count, a time or final is missing");
  out.duplicates = duplicates;
  simdjson::dom::element range;
  if (!root["similarity"].get(range)) {
    double low = 0, high = 0;
    if (range["min"].get(low) || range["max"].get(high)) return fail("bad similarity range");
    out.min_similarity = low;
    out.max_similarity = high;
  }
  std::int64_t low = 0, high = 0;
  if (root["distance"].get(range) || range["min"].get(low) || range["max"].get(high) || low < 0 ||
      high > 64)
    return fail("bad distance range");
  out.min_distance = static_cast<int>(low);
  out.max_distance = static_cast<int>(high);
  simdjson::dom::array samples;
  if (root["samples"].get(samples)) return fail("no samples");
  for (simdjson::dom::element e : samples) {
    if (!read_position(e, out.samples.emplace_back())) return fail("bad sample position");
  }
  std::string_view text;
  if (!root["key"].get(text)) out.key = std::string(text);
  if (!root["excerpt"].get(text)) out.excerpt = std::string(text);
  return true;
}

}  // namespace neardup::stream
