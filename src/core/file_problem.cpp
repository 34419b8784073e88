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

const char* file_type_words(fs::file_type t) {
  switch (t) {
  case fs::file_type::directory:
    return "a directory";
  case fs::file_type::regular:
    return "a file";
  case fs::file_type::fifo:
    return "a named pipe (FIFO)";
  case fs::file_type::socket:
    return "a socket";
  case fs::file_type::block:
  case fs::file_type::character:
    return "a device node";
  default:
    return nullptr;
  }
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
  const char* what = file_type_words(st.type());
  const std::string not_a = what ? std::string(what) + ", not a " + noun : "";
  switch (st.type()) {
  case fs::file_type::regular:
    return {};
  case fs::file_type::directory:
    return {FileTrouble::directory, not_a};
  case fs::file_type::fifo:
    return {FileTrouble::fifo, not_a + " (reading it would wait for a writer)"};
  case fs::file_type::socket:
    return {FileTrouble::socket, not_a};
  case fs::file_type::block:
  case fs::file_type::character:
    return {FileTrouble::device, not_a};
  default:
    return {FileTrouble::other, "not a regular file"};
  }
}

std::string file_predicate(const std::string& words) {
  return words.rfind("cannot", 0) == 0 ? words : "is " + words;
}

} // namespace specbench::detail
