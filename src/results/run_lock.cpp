#include "results/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace specbench::detail {

bool run_lock_held(const std::filesystem::path& dir) {
  const int fd = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false; // no run ever locked it here
  const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd); // lets go of the shared lock too
  return !free;
}

} // namespace specbench::detail
