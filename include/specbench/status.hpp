#pragma once
/// \file status.hpp
/// Errors as values: `Status` and `Expected<T>`, used near kernels, preflight and I/O.
/// Only `main` turns them into exit codes; library code never throws across its API or exits.

#include <string>
#include <utility>
#include <variant>

namespace specbench {

/// What kind of failure a Status describes. Stable names appear in JSON (`to_string`).
enum class StatusCode {
  ok,
  invalid_argument, ///< The caller passed something impossible (shape, value, option).
  not_compiled,     ///< The feature was not built into this binary (e.g. CUDA kernels).
  not_found,        ///< A file, library, device or endpoint does not exist.
  io_error,         ///< Reading or writing a file or socket failed.
  cuda_error,       ///< A CUDA driver/runtime call failed.
  timeout,          ///< Something did not answer in time.
  unavailable,      ///< A dependency is present but not usable right now.
  internal,         ///< A bug in specbench.
};

/// Stable lower-case name of a code, e.g. "not_compiled".
const char* to_string(StatusCode code) noexcept;

/// The result of an operation that returns nothing: ok, or what failed, where, and what to do.
class [[nodiscard]] Status {
public:
  /// A successful status.
  Status() = default;
  /// A failure: `message` says what is wrong, `remedy` how to fix it, `where` the call/place.
  Status(StatusCode code, std::string message, std::string remedy = {}, std::string where = {})
      : code_(code), message_(std::move(message)), remedy_(std::move(remedy)),
        where_(std::move(where)) {}

  /// Shorthand for a successful status.
  static Status ok() { return {}; }

  /// True when the operation succeeded.
  bool is_ok() const noexcept { return code_ == StatusCode::ok; }
  explicit operator bool() const noexcept { return is_ok(); }
  /// The failure kind.
  StatusCode code() const noexcept { return code_; }
  /// What is wrong (empty on success).
  const std::string& message() const noexcept { return message_; }
  /// How to fix it (may be empty).
  const std::string& remedy() const noexcept { return remedy_; }
  /// The call or place that failed (may be empty).
  const std::string& where() const noexcept { return where_; }
  /// One line for humans: "where: message (fix: remedy)".
  std::string to_string() const;

private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
  std::string remedy_;
  std::string where_;
};

/// A value or the Status that explains why there is none (a small C++20 stand-in for
/// std::expected, which needs C++23).
template <class T> class [[nodiscard]] Expected {
public:
  /// Holds a value.
  Expected(T value) : v_(std::move(value)) {}
  /// Holds an error; `status` must not be ok.
  Expected(Status status) : v_(std::move(status)) {}

  /// True when a value is present.
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  /// The value; only call when has_value().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The error; ok when a value is present.
  Status status() const { return has_value() ? Status{} : std::get<1>(v_); }

private:
  std::variant<T, Status> v_;
};

} // namespace specbench
