#include "server/proc_stat.hpp"

#include <dirent.h>

#include <fstream>
#include <sstream>

namespace specbench::detail {

bool for_each_process(const std::function<bool(const ProcStat&)>& visit) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr)
    return false;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line))
      continue;
    // "pid (comm) state ppid pgrp ...": the name may hold spaces and parentheses, so it runs
    // from the first '(' to the last ')'.
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
      continue;
    ProcStat s;
    s.comm = line.substr(open + 1, close - open - 1);
    std::istringstream head(line.substr(0, open)), rest(line.substr(close + 1));
    long pid = 0, ppid = 0, pgrp = 0;
    if (!(head >> pid) || !(rest >> s.state >> ppid >> pgrp))
      continue;
    s.pid = static_cast<pid_t>(pid);
    s.ppid = static_cast<pid_t>(ppid);
    s.pgrp = static_cast<pid_t>(pgrp);
    if (!visit(s))
      break;
  }
  ::closedir(proc);
  return true;
}

} // namespace specbench::detail
