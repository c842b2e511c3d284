#pragma once
// Minimal JSON output helpers for the JSON Lines sinks.

#include <string>
#include <string_view>

namespace neardup::stream {

/// Appends `text` as a JSON string literal (quotes included). Invalid UTF-8
/// bytes are written as U+FFFD so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view text);

}  // namespace neardup::stream
