#pragma once
// Internal: a results directory's sorting lock (".sorting").
//
// A run sorts the directory when it starts: it removes temp files and the old report, moves stale
// results aside and rewrites the manifest. A report read in the middle would list a cell and
// then find it gone, or pair the old manifest with half-moved cells. The run's own lock (.lock)
// cannot keep a report out, since it is held for the hours of measuring; this one is held only
// while sorting (exclusively) and while a report reads (shared).
#include "specbench/status.hpp"

#include <filesystem>
#include <string>

namespace specbench::detail {

class SortingLock {
public:
  /// A run's lock, taken before sorting: creates the file. Waits up to `wait_s` for readers;
  /// past that it is not held, and note() says so (the run goes on: only that report's view is
  /// at stake, not a result). Fails only when the file cannot be created.
  static Expected<SortingLock> for_sorting(const std::filesystem::path& dir, double wait_s);
  /// A reader's lock: never creates the file (a directory no run has sorted needs none), waits
  /// up to `wait_s` for a run's sorting; past that it is not held, and note() says so.
  static SortingLock for_reading(const std::filesystem::path& dir, double wait_s);

  SortingLock(SortingLock&& o) noexcept;
  SortingLock& operator=(SortingLock&&) = delete;
  ~SortingLock();

  /// Lets go early (the run, once its manifest is rewritten).
  void release() noexcept;
  bool held() const noexcept { return fd_ >= 0 && locked_; }
  /// Empty, or why the lock is not held although it should be.
  const std::string& note() const noexcept { return note_; }

private:
  SortingLock() = default;
  int fd_ = -1;
  bool locked_ = false;
  std::string note_;
};

} // namespace specbench::detail
