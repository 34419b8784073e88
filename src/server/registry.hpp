#pragma once
// Internal: the registry of live server process groups (see install_server_cleanup_handlers).
#include <sys/types.h>

namespace specbench::detail {
// Records a live group; false when the registry is full (256 groups).
bool register_server_group(pid_t pgid) noexcept;
// Forgets a group once it is gone.
void unregister_server_group(pid_t pgid) noexcept;
} // namespace specbench::detail
