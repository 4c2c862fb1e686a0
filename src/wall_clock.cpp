#include "wall_clock.hpp"

#include <chrono>

namespace treeguard {

std::int64_t unix_time_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace treeguard
