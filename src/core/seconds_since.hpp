#pragma once
// Elapsed time for deadlines and records, on the steady clock: wall-clock jumps (NTP, a user
// changing the date) must not shorten a timeout or give a negative duration.

#include <chrono>

namespace specbench::detail {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace specbench::detail
