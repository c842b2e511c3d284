#pragma once
// Decoding a raw record (a Kafka message value, a line of a file) into the text
// to fingerprint and an optional id. Shared by `neardup scan` and `neardup run`.

#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dedup/core/types.h"

namespace neardup::stream {

struct Decoded {
  bool ok = false;
  std::string_view text;  ///< valid until the next decode() on the same Decoder
  std::string id;         ///< the id field as JSON text, e.g. "a1" (quoted) or 42 ("" when absent)
  std::string error;      ///< set when !ok: what is wrong, for the dead-letter header
  /// With a scope field: dedup::scope_of its value (a string's characters, any
  /// other value as JSON text); a record without the field (or with null) has
  /// the scope of "".
  dedup::ScopeId scope;
};

/// The error of a record of `bytes` over `max_bytes` (input.max_bytes), for
/// callers that refuse such a record before decoding it.
std::string oversize_error(std::size_t bytes, std::size_t max_bytes);

/// Not thread-safe (reuses its parser and buffers): one per pipeline thread.
/// Never throws on any input; malformed input gives ok == false with a reason.
class Decoder {
 public:
  /// Throws config::ConfigError for an invalid JSON pointer in the options.
  /// `scope_field`: a JSON pointer (dedup.scope) whose value scopes the record, or "".
  explicit Decoder(const config::InputOptions& options, std::string scope_field = {});
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;

  /// O(bytes). Format text: the whole record is the text. Format json: one JSON
  /// object; the text fields (JSON pointers) are joined with a space; each must
  /// be a string: any other value (a number, a boolean, an array, an object)
  /// makes the record invalid ("text field /title is a number, not a string");
  /// a missing or null field is skipped, but at least one must be present.
  /// Format automatic: a record whose first byte after JSON white space is '{'
  /// and that parses as one JSON object is read as format json reads it (so an
  /// object without any text field is invalid, as there); any other record
  /// (plain text, a JSON array or string, a '{' that does not parse) is the
  /// text, whole, as format text reads it.
  Decoded decode(std::string_view raw);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::stream
