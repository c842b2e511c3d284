#pragma once
// SHA-256 and base64 for the page's HTTP headers: the Content-Security-Policy
// hashes of its inline style and script, and HTTP basic authentication.
// Pure functions, thread-safe.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace neardup::metrics {

/// SHA-256 (FIPS 180-4) of `data`. O(data).
std::array<std::uint8_t, 32> sha256(std::string_view data);

/// Standard base64 (RFC 4648, "+/", padded).
std::string base64(std::span<const std::uint8_t> bytes);

/// Decodes standard padded base64; nullopt when `text` is not that.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace neardup::metrics
