#include "stream/records/json_out.h"

namespace neardup::stream {

void append_similarity(std::string& out, double similarity) {
  const double clamped = similarity < 0 ? 0 : similarity > 1 ? 1 : similarity;
  const auto milli = static_cast<unsigned>(clamped * 1000.0 + 0.5);
  const char digits[5] = {
      static_cast<char>('0' + milli / 1000), '.', static_cast<char>('0' + milli / 100 % 10),
      static_cast<char>('0' + milli / 10 % 10), static_cast<char>('0' + milli % 10)};
  out.append(digits, 5);
}

}  // namespace neardup::stream
