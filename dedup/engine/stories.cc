#include "dedup/engine/stories.h"

#include <algorithm>
#include <utility>

namespace neardup::dedup {

const Story& StoryBook::count(const Match& original, RecordRef duplicate, EventTime time,
                              std::optional<double> similarity,
                              std::optional<std::uint64_t> renewed) {
  auto it = stories_.find(original.sequence);
  if (it == stories_.end()) {
    it = stories_.emplace(original.sequence, Story{}).first;
    Story& story = it->second;
    story.original = original.of;
    story.first_seen = story.last_seen = original.time;
  }
  Story& story = it->second;
  ++story.duplicates;
  story.last_seen = std::max(story.last_seen, time);
  story.min_distance = std::min(story.min_distance, original.distance);
  story.max_distance = std::max(story.max_distance, original.distance);
  if (similarity) {
    story.has_similarity = true;
    story.min_similarity = std::min(story.min_similarity, *similarity);
    story.max_similarity = std::max(story.max_similarity, *similarity);
  }
  if (story.sampled < Story::kSamples) story.samples[story.sampled++] = duplicate;
  story.changed = true;
  if (renewed && *renewed != original.sequence) {
    auto node = stories_.extract(it);
    node.key() = *renewed;
    it = stories_.insert(std::move(node)).position;
  }
  return it->second;
}

}  // namespace neardup::dedup
