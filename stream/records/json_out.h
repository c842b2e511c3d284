#pragma once
// The similarity figure as the JSON Lines sinks and the output headers write it
// (strings: base/json.h).

#include <string>
#include <string_view>

namespace neardup::stream {

/// Appends an estimated similarity in [0, 1] with three decimals, rounded half
/// up ("0.813" for 0.8125): the one form of `neardup scan`'s "similarity" and
/// the neardup-similarity header.
void append_similarity(std::string& out, double similarity);

}  // namespace neardup::stream
