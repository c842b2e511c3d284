#include "stream/decode.h"

#include <simdjson.h>

#include <charconv>

#include "config/values.h"

namespace neardup::stream {

namespace {

// Appends a scalar's text; returns false for objects and arrays.
bool append_scalar(simdjson::dom::element element, std::string& out) {
  using simdjson::dom::element_type;
  char number[32];
  switch (element.type()) {
    case element_type::STRING: {
      std::string_view s = element.get_string().value_unsafe();
      out.append(s);
      return true;
    }
    case element_type::INT64: {
      auto r = std::to_chars(number, number + sizeof number, element.get_int64().value_unsafe());
      out.append(number, r.ptr);
      return true;
    }
    case element_type::UINT64: {
      auto r = std::to_chars(number, number + sizeof number, element.get_uint64().value_unsafe());
      out.append(number, r.ptr);
      return true;
    }
    case element_type::DOUBLE: {
      auto r = std::to_chars(number, number + sizeof number, element.get_double().value_unsafe());
      out.append(number, r.ptr);
      return true;
    }
    case element_type::BOOL:
      out.append(element.get_bool().value_unsafe() ? "true" : "false");
      return true;
    default:
      return false;
  }
}

void check_pointer(const std::string& pointer, const char* key) {
  if (!config::is_json_pointer(pointer)) {
    throw config::ConfigError(
        std::string(key) + ": expected a JSON pointer like /text (~0 for '~', ~1 for '/'), got '" +
        pointer + "'");
  }
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
  if (options.format == config::InputFormat::text) {
    out.ok = true;
    out.text = raw;
    return out;
  }
  // parse() copies into its padded buffer when the input is not padded.
  simdjson::dom::element root;
  // (a Kafka message with a null value arrives as a null pointer: simdjson must not copy from it)
  static constexpr char kNothing[1] = {};
  if (auto error = impl_->parser.parse(raw.data() ? raw.data() : kNothing, raw.size()).get(root)) {
    out.error = std::string("malformed JSON: ") + simdjson::error_message(error);
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
    if (found) text.push_back(' ');
    if (!append_scalar(value, text)) {
      out.error = "text field " + field + " is not a string";
      return out;
    }
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
