#pragma once
// Internal: the fields of /proc/<pid>/stat that specbench reads, for every process of the host.
#include <sys/types.h>

#include <functional>
#include <string>

namespace specbench::detail {
struct ProcStat {
  pid_t pid = 0;
  std::string comm; // the command name, which may hold spaces and parentheses
  char state = 0;   // 'R', 'S', ..., 'Z' (zombie), 'X' (dead)
  pid_t ppid = 0;
  pid_t pgrp = 0;
};
// Calls `visit` with each process's stat line that parses, until it returns false. Processes that
// exit while the scan runs are skipped. False when /proc cannot be read.
bool for_each_process(const std::function<bool(const ProcStat&)>& visit);
} // namespace specbench::detail
