#pragma once
// Three long texts of one story edited in a chain, for the repost cache's
// tests (unit and integration): the second is a duplicate of the story only
// through the first, which is no window entry.

#include <string_view>

namespace neardup::dedup::repost_testing {

// Texts found by bench/quality's ground truth and neardup_sketch_dump (the
// default options): 90 words, 3 words changed at each step.
constexpr std::string_view kStory =
    "meeting south rate growth board street minister river plan bank police rain local private "
    "council library bridge autumn event local train parents power north building library "
    "building national result market building power evening autumn festival money minister "
    "airport mayor train south snow power autumn school rain council street vote spring price "
    "autumn village village west highway national weather morning teachers office news teachers "
    "weather public winter spring garden teachers children autumn power bridge parents station "
    "children report result event flight town museum harbour nurse project local station "
    "parents project village";
// J(story, first) = 0.839, estimated 0.729, a shared sketch-index band.
constexpr std::string_view kFirst =
    "meeting south rate concert board street minister river plan bank police rain local private "
    "council library bridge autumn event local train parents power north building library "
    "building national member market building power evening autumn festival money minister "
    "airport union train south snow power autumn school rain council street vote spring price "
    "autumn village village west highway national weather water teachers office news teachers "
    "money public winter spring garden teachers children autumn power bridge parents station "
    "children report result event flight town museum harbour nurse project local station "
    "parents project village";
// J(first, second) = 0.866, estimated 0.771, 11 bits apart, no sketch-index
// band; J(story, second) = 0.748, estimated 0.5625, 13 bits apart.
constexpr std::string_view kSecond =
    "meeting south rate concert board street minister river plan bank police rain local private "
    "council library bridge autumn event local world parents power north building library "
    "building national member market building power evening autumn festival money minister "
    "airport union train south snow power autumn school rain council street vote spring price "
    "autumn village village west highway national weather water teachers office news teachers "
    "winter patient winter spring garden teachers children autumn power workers parents world "
    "children report result event flight town museum harbour nurse project local station "
    "parents project village";

}  // namespace neardup::dedup::repost_testing
