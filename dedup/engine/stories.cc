#include "dedup/engine/stories.h"

#include <algorithm>
#include <utility>

namespace neardup::dedup {

const Story& StoryBook::count(const Match& original, RecordRef duplicate, EventTime time,
                              std::optional<double> similarity,
                              std::optional<std::uint64_t> renewed) {
  auto it = stories_.find(original.sequence);
  if (it == stories_.end()) {
    it = stories_.emplace(original.sequence, Node{Story{}, journaling_ ? epoch_ : 0}).first;
    save(original.sequence, std::nullopt);
    Story& story = it->second.story;
    story.original = original.of;
    story.first_seen = story.last_seen = original.time;
  } else {
    touch(it);
  }
  Story& story = it->second.story;
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
    save(*renewed, std::nullopt);  // (a new entry's sequence: no story had it)
  }
  return it->second.story;
}

void StoryBook::rollback() {
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
    if (it->second)
      stories_.insert_or_assign(it->first, Node{*it->second, 0});
    else
      stories_.erase(it->first);
  }
  journal_.clear();
  ++epoch_;
}

}  // namespace neardup::dedup
