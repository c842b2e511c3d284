#include "stream/records/story_record.h"

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

}  // namespace neardup::stream
