// Test fixture: starts the command after "--", adding "--fault F" when this cell has a fault in
// the map. Lets one sweep inject a different simulated-server fault into chosen cells:
//   e2e_fault_router --cell {cell_id} --faults "tp1-linear-k8=crash-after:3;tp1-ddtree-b8=hang"
//                    -- {specbench} sim-server ...
// It replaces itself with the command (execv), so the runner sees the server's own process.
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv) {
  std::string cell, faults;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cell" && i + 1 < argc)
      cell = argv[++i];
    else if (a == "--faults" && i + 1 < argc)
      faults = argv[++i];
    else if (a == "--") {
      ++i;
      break;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "e2e_fault_router: no command after --\n");
    return 2;
  }
  std::vector<std::string> cmd(argv + i, argv + argc);
  size_t start = 0;
  while (start <= faults.size()) {
    const size_t end = std::min(faults.find(';', start), faults.size());
    const std::string item = faults.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == cell) {
      cmd.push_back("--fault");
      cmd.push_back(item.substr(eq + 1));
    }
    start = end + 1;
  }
  std::vector<char*> args;
  for (auto& a : cmd)
    args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  std::perror("e2e_fault_router: execv");
  return 127;
}
