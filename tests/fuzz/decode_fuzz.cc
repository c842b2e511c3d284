// Fuzz target for JSON field extraction (stream::Decoder). Properties checked on
// every input: decode() never crashes or throws; a record is either ok with its
// text, or refused with a non-empty reason; decoding the same bytes twice gives
// the same result (the parser's reused buffers leak nothing between records).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "stream/pipeline/decode.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static neardup::stream::Decoder decoder = [] {
    neardup::config::InputOptions options;
    options.format = neardup::config::InputFormat::json;
    options.text_fields = {"/text", "/body/0/t"};
    options.max_bytes = 4096;
    return neardup::stream::Decoder(options);
  }();
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const auto first = decoder.decode(raw);
  const std::string text(first.text), id = first.id, error = first.error;
  require(first.ok == error.empty());
  if (size > 4096) require(!first.ok);
  const auto second = decoder.decode(raw);
  require(second.ok == first.ok && std::string(second.text) == text && second.id == id &&
          second.error == error);
  return 0;
}
