#include "base/random_id.h"

#include <chrono>
#include <random>

namespace neardup::base {

std::uint64_t random_id() {
  std::random_device entropy;
  return (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace neardup::base
