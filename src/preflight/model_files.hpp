#pragma once
// Reading the files of a model folder safely: only regular files are opened (a FIFO named
// config.json would block the preflight forever), and every failure is a sentence for a check's
// summary instead of an exception.
#include "core/file_problem.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace specbench::preflight {

/// Why a file cannot be opened (detail::open_failure, shared with the prompt datasets).
using detail::open_failure;

/// Why `p` is not a regular file one could read ("" = it is; symbolic links followed):
/// "missing", "a dangling symlink (to T, which is gone)", "a loop of symbolic links",
/// "a directory, not a <what>", "a named pipe (FIFO), not a <what>", ... Never opens `p`.
/// The words of detail::check_file, which the prompt datasets share.
inline std::string file_problem(const std::filesystem::path& p, const std::string& what = "file") {
  return detail::check_file(p, what).words;
}

/// A regular file open for reading. It is opened non-blocking and checked after opening, so a
/// FIFO or device put in its place after file_problem looked is refused rather than waited on.
class RegularFile {
public:
  explicit RegularFile(const std::filesystem::path& p);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  /// "" when open; else why not (file_problem's answers, "cannot be read: ..." for permissions,
  /// "not a regular file").
  const std::string& why() const { return why_; }
  std::uintmax_t size() const { return size_; }
  /// Reads up to `len` bytes at `offset` into `out`; returns how many (fewer when the file ends
  /// first). A failed read sets why() and returns what was read before it.
  std::size_t read_at(std::uint64_t offset, char* out, std::size_t len);

private:
  int fd_ = -1;
  std::uintmax_t size_ = 0;
  std::string why_;
};

/// Reads the regular file `p` whole into `out` when it holds at most `cap` bytes. Returns "" or
/// why not (file_problem's answers, "cannot be read: ..." for permissions, "too large ...").
/// The file is opened non-blocking and checked again after opening, so a FIFO put in its place
/// meanwhile is refused rather than waited on.
std::string read_regular_file(const std::filesystem::path& p, std::uintmax_t cap, std::string& out);

/// "<name> is <why>" or "<name> cannot be read: ..." for a check's summary.
std::string file_sentence(const std::string& name, const std::string& why);

} // namespace specbench::preflight
