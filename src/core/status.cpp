#include "specbench/status.hpp"

namespace specbench {

const char* to_string(StatusCode code) noexcept {
  switch (code) {
  case StatusCode::ok: return "ok";
  case StatusCode::invalid_argument: return "invalid_argument";
  case StatusCode::not_compiled: return "not_compiled";
  case StatusCode::not_found: return "not_found";
  case StatusCode::io_error: return "io_error";
  case StatusCode::cuda_error: return "cuda_error";
  case StatusCode::timeout: return "timeout";
  case StatusCode::unavailable: return "unavailable";
  case StatusCode::internal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string out;
  if (!where_.empty()) out += where_ + ": ";
  out += message_;
  if (!remedy_.empty()) out += " (fix: " + remedy_ + ")";
  return out;
}

} // namespace specbench
