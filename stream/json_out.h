#pragma once
// Minimal JSON output helpers for the JSON Lines sinks.

#include <string>
#include <string_view>

namespace neardup::stream {

/// Appends `text` as a JSON string literal (quotes included). Invalid UTF-8
/// bytes are written as U+FFFD so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view text);

/// Appends an estimated similarity in [0, 1] with three decimals, rounded half
/// up ("0.813" for 0.8125): the one form of `neardup scan`'s "similarity" and
/// the neardup-similarity header.
void append_similarity(std::string& out, double similarity);

}  // namespace neardup::stream
