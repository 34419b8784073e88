#pragma once
// Why a path that should be a regular file to read is not one, found without opening it. The
// preflight (model files) and the prompt datasets (plan and run) ask the same question; one
// answer keeps dangling links, link loops, permission errors, folders, pipes and devices told
// apart alike for both.
#include <filesystem>
#include <string>
#include <system_error>

namespace specbench::detail {

/// What stands where a regular file should be.
enum class FileTrouble {
  none,          ///< a regular file (or a link to one)
  missing,       ///< nothing there
  dangling_link, ///< a symbolic link whose target is gone
  cannot_stat,   ///< the system refuses to look (permissions, a link loop, a name too long)
  directory,
  fifo,
  socket,
  device,
  other,
};

/// What check_file found: the trouble, and `words` for a check's summary ("" for none).
struct FileCheck {
  FileTrouble trouble = FileTrouble::none;
  std::string words;
};

/// What stands at a path, by its type: "a directory", "a file", "a named pipe (FIFO)", "a
/// socket", "a device node"; nullptr for anything else.
const char* file_type_words(std::filesystem::file_type t);

/// Why a file cannot be opened. Only a permission problem starts with "cannot be read" (which
/// callers diagnose as one): anything else is damage that "download it again" fixes.
std::string open_failure(const std::error_code& ec);

/// Looks at `p` (symbolic links followed) without opening it: a FIFO would block a read for
/// ever, and a device such as /dev/zero never end it. `noun` names what `p` should be ("weight
/// file", "dataset file"). The words: "missing", "a dangling symlink (to T, which is gone)", "a
/// loop of symbolic links", "cannot be read: ...", "cannot be opened: ...", "a directory, not a
/// <noun>", "a named pipe (FIFO), not a <noun> (reading it would wait for a writer)", "a socket,
/// not a <noun>", "a device node, not a <noun>", "not a regular file".
FileCheck check_file(const std::filesystem::path& p, const std::string& noun);

/// The words of check_file as what follows a name in a sentence: "cannot ..." as it is, the rest
/// after "is " ("is missing", "is a directory, not a weight file").
std::string file_predicate(const std::string& words);

} // namespace specbench::detail
