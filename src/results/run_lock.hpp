#pragma once
// Internal: whether a live run holds a results directory's run lock (".lock").
//
// The runner takes .lock exclusively for as long as it runs, and the kernel lets go of it when
// the process dies, SIGKILL included. A manifest that still says "running" with nobody holding
// the lock was left by a run that was killed: a report must not describe it as live.
#include <filesystem>

namespace specbench::detail {

/// True when some process holds `dir`/.lock exclusively (a run in progress). Takes nothing: a
/// shared lock, when it can be had, is let go at once.
bool run_lock_held(const std::filesystem::path& dir);

} // namespace specbench::detail
