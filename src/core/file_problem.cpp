#include "core/file_problem.hpp"

namespace specbench::detail {
namespace fs = std::filesystem;

std::string open_failure(const std::error_code& ec) {
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted)
    return "cannot be read: " + ec.message();
  if (ec == std::errc::too_many_symbolic_link_levels)
    return "a loop of symbolic links";
  return "cannot be opened: " + ec.message();
}

FileCheck check_file(const fs::path& p, const std::string& noun) {
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return {FileTrouble::cannot_stat, open_failure(ec)};
  if (!fs::exists(st)) {
    std::error_code lec;
    if (fs::is_symlink(fs::symlink_status(p, lec)))
      return {FileTrouble::dangling_link,
              "a dangling symlink (to " + fs::read_symlink(p, lec).string() + ", which is gone)"};
    return {FileTrouble::missing, "missing"};
  }
  switch (st.type()) {
  case fs::file_type::regular:
    return {};
  case fs::file_type::directory:
    return {FileTrouble::directory, "a directory, not a " + noun};
  case fs::file_type::fifo:
    return {FileTrouble::fifo,
            "a named pipe (FIFO), not a " + noun + " (reading it would wait for a writer)"};
  case fs::file_type::socket:
    return {FileTrouble::socket, "a socket, not a " + noun};
  case fs::file_type::block:
  case fs::file_type::character:
    return {FileTrouble::device, "a device node, not a " + noun};
  default:
    return {FileTrouble::other, "not a regular file"};
  }
}

std::string file_predicate(const std::string& words) {
  return words.rfind("cannot", 0) == 0 ? words : "is " + words;
}

} // namespace specbench::detail
