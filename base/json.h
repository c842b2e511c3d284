#pragma once
// The one JSON string escaper: logs, the page and its API, scan's JSON Lines,
// output headers and the changelog's JSON records all write strings with it.

#include <cstddef>
#include <string>
#include <string_view>

namespace neardup::base {

enum class JsonEscape {
  plain,      ///< what JSON requires, plus DEL
  html_safe,  ///< also < > & and U+2028/U+2029: safe inside an HTML page or <script>
};

/// Appends `text` as a JSON string literal, quotes included. The result is
/// always valid UTF-8: each byte that does not begin a valid UTF-8 sequence
/// (stray continuation bytes, overlongs, surrogates, past U+10FFFF, cut short)
/// becomes U+FFFD. " and \ are escaped, \n \r \t by name, other control
/// characters and DEL as \u00XX. O(text.size()); thread-safe.
void append_json_string(std::string& out, std::string_view text,
                        JsonEscape mode = JsonEscape::plain);

/// The length (1..4) of the valid UTF-8 sequence that starts at text[i], or 0
/// when none does (i < text.size()).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

}  // namespace neardup::base
