#include "stream/pipeline/decode.h"

#include <simdjson.h>

#include "config/values.h"

namespace neardup::stream {

namespace {

// What a JSON value is, in a person's words: "a number", "an object".
const char* kind_of(simdjson::dom::element element) {
  using simdjson::dom::element_type;
  switch (element.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "a value of another kind";
}

void check_pointer(const std::string& pointer, const char* key) {
  if (!config::is_json_pointer(pointer)) {
    throw config::ConfigError(
        std::string(key) + ": expected a JSON pointer like /text (~0 for '~', ~1 for '/'), got '" +
        pointer + "'");
  }
}

// Format auto: whether a value may be a JSON object (its first byte that is not
// JSON white space is '{'); the parse decides.
bool looks_like_object(std::string_view raw) {
  for (const char c : raw) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

}  // namespace

std::string oversize_error(std::size_t bytes, std::size_t max_bytes) {
  return "record of " + std::to_string(bytes) + " bytes exceeds input.max_bytes (" +
         std::to_string(max_bytes) + ")";
}

struct Decoder::Impl {
  config::InputOptions options;
  std::string scope_field;
  simdjson::dom::parser parser;
  std::string text;
};

Decoder::Decoder(const config::InputOptions& options, std::string scope_field)
    : impl_(std::make_unique<Impl>()) {
  if (!scope_field.empty()) check_pointer(scope_field, "dedup.scope");
  impl_->scope_field = std::move(scope_field);
  for (const auto& field : options.text_fields) check_pointer(field, "input.text_fields");
  if (!options.id_field.empty())
    check_pointer(options.id_field, "input.id_field");  // empty: ids are line numbers
  impl_->options = options;
}

Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

Decoded Decoder::decode(std::string_view raw) {
  Decoded out;
  const auto& options = impl_->options;
  if (raw.size() > options.max_bytes) {
    out.error = oversize_error(raw.size(), options.max_bytes);
    return out;
  }
  // The whole record is the text; with a scope field (format auto), the scope is "".
  const auto take_whole = [&] {
    out.ok = true;
    out.text = raw;
    if (!impl_->scope_field.empty()) out.scope = dedup::scope_of("");
  };
  if (options.format == config::InputFormat::text ||
      (options.format == config::InputFormat::automatic && !looks_like_object(raw))) {
    take_whole();
    return out;
  }
  // parse() copies into its padded buffer when the input is not padded.
  simdjson::dom::element root;
  // (a Kafka message with a null value arrives as a null pointer: simdjson must not copy from it)
  static constexpr char kNothing[1] = {};
  const auto parsed = impl_->parser.parse(raw.data() ? raw.data() : kNothing, raw.size()).get(root);
  if (options.format == config::InputFormat::automatic && (parsed || !root.is_object())) {
    take_whole();  // a '{' that does not parse as one object: the value is a text after all
    return out;
  }
  if (parsed) {
    out.error = std::string("malformed JSON: ") + simdjson::error_message(parsed);
    return out;
  }
  if (!root.is_object()) {
    out.error = "malformed JSON: expected an object";
    return out;
  }
  // The id first: a record whose text is missing or unusable is still named by its own id.
  if (!options.id_field.empty()) {
    simdjson::dom::element id;
    if (!root.at_pointer(options.id_field).get(id) && !id.is_null()) out.id = simdjson::minify(id);
  }
  if (!impl_->scope_field.empty()) {
    simdjson::dom::element value;
    std::string_view chars;
    if (root.at_pointer(impl_->scope_field).get(value) || value.is_null()) {
      out.scope = dedup::scope_of("");
    } else if (!value.get_string().get(chars)) {
      out.scope = dedup::scope_of(chars);
    } else {
      out.scope = dedup::scope_of(simdjson::minify(value));
    }
  }
  std::string& text = impl_->text;
  text.clear();
  bool found = false;
  for (const auto& field : options.text_fields) {
    simdjson::dom::element value;
    if (root.at_pointer(field).get(value) || value.is_null()) continue;
    // Only a string is a text: {"title": 42} is not the text "42" (two
    // records with different numbers would be judged near-duplicates).
    std::string_view chars;
    if (value.get_string().get(chars)) {
      out.error = "text field " + field + " is " + kind_of(value) + ", not a string";
      return out;
    }
    if (found) text.push_back(' ');
    text.append(chars);
    found = true;
  }
  if (!found) {
    out.error = options.text_fields.size() == 1 ? "missing text field " + options.text_fields[0]
                                                : "none of the text fields is present";
    return out;
  }
  out.ok = true;
  out.text = text;
  return out;
}

}  // namespace neardup::stream
