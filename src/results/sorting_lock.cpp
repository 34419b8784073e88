// The sorting lock of a results directory: see sorting_lock.hpp.
#include "results/sorting_lock.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace specbench::detail {
namespace {

// flock has no timeout: try without blocking every few milliseconds until `wait_s` has passed.
bool lock_within(int fd, int operation, double wait_s) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s > 0 ? wait_s : 0);
  for (;;) {
    if (::flock(fd, operation | LOCK_NB) == 0)
      return true;
    if (errno != EWOULDBLOCK && errno != EINTR)
      return false;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string seconds(double s) {
  return std::to_string(static_cast<long>(s + 0.5)) + " s";
}

} // namespace

Expected<SortingLock> SortingLock::for_sorting(const std::filesystem::path& dir, double wait_s) {
  const auto path = dir / ".sorting";
  SortingLock lock;
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0)
    return Status(StatusCode::io_error,
                  "cannot open " + path.string() + ": " + std::strerror(errno),
                  "choose a writable --results directory", "SortingLock::for_sorting");
  lock.locked_ = lock_within(lock.fd_, LOCK_EX, wait_s);
  if (!lock.locked_)
    lock.note_ = "a `specbench report` has been reading " + dir.string() + " for over " +
                 seconds(wait_s) + "; sorting it anyway (that report may show a result that is " +
                 "moved aside now as missing)";
  return lock;
}

SortingLock SortingLock::for_reading(const std::filesystem::path& dir, double wait_s) {
  SortingLock lock;
  lock.fd_ = ::open((dir / ".sorting").c_str(), O_RDONLY | O_CLOEXEC);
  if (lock.fd_ < 0)
    return lock; // no run has sorted this directory (or it cannot be opened: nothing to wait on)
  lock.locked_ = lock_within(lock.fd_, LOCK_SH, wait_s);
  if (!lock.locked_)
    lock.note_ = "a run has been sorting " + dir.string() + " for over " + seconds(wait_s) +
                 " (moving stale results aside); this report was read anyway and may show a "
                 "result being moved as missing: take it again once the run has started its "
                 "first cell";
  return lock;
}

SortingLock::SortingLock(SortingLock&& o) noexcept
    : fd_(o.fd_), locked_(o.locked_), note_(std::move(o.note_)) {
  o.fd_ = -1;
  o.locked_ = false;
}

SortingLock::~SortingLock() {
  release();
}

void SortingLock::release() noexcept {
  if (fd_ >= 0)
    ::close(fd_); // closing the only descriptor drops the flock
  fd_ = -1;
  locked_ = false;
}

} // namespace specbench::detail
