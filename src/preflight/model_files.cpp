#include "preflight/model_files.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace specbench::preflight {
namespace fs = std::filesystem;

RegularFile::RegularFile(const fs::path& p) {
  if (why_ = file_problem(p); !why_.empty())
    return;
  // O_NONBLOCK: should the file have become a FIFO since file_problem looked, open returns at
  // once instead of waiting for a writer, and fstat below refuses it.
  fd_ = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    why_ = open_failure(std::error_code(errno, std::generic_category()));
    return;
  }
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0)
    why_ = open_failure(std::error_code(errno, std::generic_category()));
  else if (!S_ISREG(sb.st_mode))
    why_ = "not a regular file";
  else
    size_ = static_cast<std::uintmax_t>(sb.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::size_t RegularFile::read_at(std::uint64_t offset, char* out, std::size_t len) {
  if (!why_.empty())
    return 0;
  std::size_t got = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd_, out + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why_ = "a read failed: " + std::string(std::strerror(errno));
      break;
    }
    if (n == 0)
      break; // the file ends (or shrank meanwhile)
    got += static_cast<std::size_t>(n);
  }
  return got;
}

std::string read_regular_file(const fs::path& p, std::uintmax_t cap, std::string& out) {
  out.clear();
  RegularFile f(p);
  if (f.why().empty() && f.size() > cap)
    return "too large (" + std::to_string(f.size()) + " bytes, more than the " +
           std::to_string(cap) + " such a file can plausibly hold)";
  if (!f.why().empty())
    return f.why();
  out.resize(static_cast<size_t>(f.size()));
  out.resize(f.read_at(0, out.data(), out.size())); // shrank meanwhile: parse what is there
  if (!f.why().empty())
    out.clear();
  return f.why();
}

std::string file_sentence(const std::string& name, const std::string& why) {
  return name + " " + detail::file_predicate(why);
}

} // namespace specbench::preflight
