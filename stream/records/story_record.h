#pragma once
// Story summaries (kafka.summary_topic): one JSON record per original that
// got duplicates, written while its story grows (interim) and once when the
// original leaves the window (final). Format version 1 (docs/KAFKA.md
// "Story summaries"):
//   key    "<topic>/<partition>/<offset>" of the original (a compacted topic
//          keeps each story's latest summary)
//   value  {"version":1,"original":{"topic":"..","partition":N,"offset":N},
//           "key":"<the original's message key>" | null,
//           "first_seen":<ms>,"last_seen":<ms>,"duplicates":N,
//           "similarity":{"min":0.812,"max":1.000} (absent when no duplicate
//           was judged by the sketch),"distance":{"min":N,"max":N},
//           "samples":[{"topic":"..","partition":N,"offset":N},...] (the first
//           duplicates, at most 5),
//           "excerpt":"<the original's first 200 bytes>" (absent when
//           metrics.redact_texts is on or the text is not held),
//           "final":true|false}
//   timestamp  last_seen

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/engine/stories.h"

namespace neardup::stream {

inline constexpr int kStoryRecordVersion = 1;
/// The excerpt's bytes at most (cut at a UTF-8 character boundary).
inline constexpr std::size_t kStoryExcerptBytes = 200;

/// A message's position, as a summary names it.
struct StoryPosition {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

/// What a summary says besides the story's counts.
struct StoryContext {
  StoryPosition original;
  std::span<const StoryPosition> samples;   ///< the story's samples, resolved
  std::optional<std::string_view> key;      ///< the original's message key, when known
  std::optional<std::string_view> excerpt;  ///< the original's text (cut here), when shown
  bool final = false;
};

/// The record key: "<topic>/<partition>/<offset>" of the original, written over `out`.
void story_key(const StoryPosition& original, std::string& out);

/// The record value, written over `out` (its capacity reused). O(excerpt + samples).
void encode_story(const dedup::Story& story, const StoryContext& context, std::string& out);

/// A summary read back (a restart's seed): positions by name.
struct StoryPositionName {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};
struct DecodedStory {
  StoryPositionName original;
  std::vector<StoryPositionName> samples;
  std::optional<std::string> key, excerpt;
  std::int64_t first_seen = 0, last_seen = 0;
  std::uint64_t duplicates = 0;
  std::optional<double> min_similarity, max_similarity;
  int min_distance = 64, max_distance = 0;
  bool final = false;
};

/// Parses a version 1 value; false (and `*error` says why) on anything else.
/// Never throws on any input bytes except std::bad_alloc. O(size).
bool decode_story(std::string_view value, DecodedStory& out, std::string* error);

}  // namespace neardup::stream
