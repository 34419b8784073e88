// Host layer: container kind, NVIDIA device nodes (incl. /dev/nvidia-uvm and its dynamic major),
// kernel modules and the visibility variables. Everything is read under `plan.root`, so tests can
// fake /dev, /proc and /sys. This layer is evidence, not a gate: the driver and CUDA layers run
// whatever it finds, and the diagnosis combines the answers.
#include "core/ascii_lower.hpp"
#include "preflight/layers.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace specbench::preflight {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::optional<std::string> Run::env(const std::string& name) const {
  if (auto it = plan.environment.find(name); it != plan.environment.end())
    return it->second;
  if (const char* v = std::getenv(name.c_str()))
    return std::string(v);
  return std::nullopt;
}

std::string Run::path(const std::string& abs) const {
  if (plan.root.empty() || plan.root == "/")
    return abs;
  std::string r = plan.root;
  while (!r.empty() && r.back() == '/')
    r.pop_back();
  return r + abs;
}

CheckResult make_check(std::string id, PreflightLayer layer, int gpu) {
  CheckResult c;
  c.id = std::move(id);
  c.layer = layer;
  c.gpu = gpu;
  return c;
}

void add_check(Run& run, CheckResult c, Clock::time_point t0) {
  c.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  run.report.checks.push_back(std::move(c));
}

CheckResult unexpected_check(PreflightLayer layer, const std::exception& e) {
  auto c = make_check(std::string(to_string(layer)) + ".unexpected", layer);
  c.status = CheckStatus::fail;
  c.summary = std::string("the check stopped on an unexpected error: ") + e.what();
  c.remedy = "report this as a specbench bug, with the preflight's --json output";
  return c;
}

namespace {

std::string read_file(const std::string& p, size_t limit = 1 << 16) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return {};
  std::string s(limit, '\0');
  in.read(s.data(), static_cast<std::streamsize>(limit));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// "/proc/devices" character-device majors by name.
std::map<std::string, int> char_majors(const std::string& text) {
  std::map<std::string, int> out;
  std::istringstream in(text);
  std::string line;
  bool chars = false;
  while (std::getline(in, line)) {
    if (line.rfind("Character devices", 0) == 0) {
      chars = true;
      continue;
    }
    if (line.rfind("Block devices", 0) == 0)
      chars = false;
    if (!chars)
      continue;
    std::istringstream ls(line);
    int major = 0;
    std::string name;
    if (ls >> major >> name)
      out[name] = major;
  }
  return out;
}

struct NodeState {
  bool present = false, is_char = false, opens = false;
  int major = -1, minor = -1;
  std::string open_error;
};

NodeState inspect_node(const std::string& p) {
  NodeState n;
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0)
    return n;
  n.present = true;
  n.is_char = S_ISCHR(st.st_mode);
  if (n.is_char) {
    n.major = static_cast<int>(major(st.st_rdev));
    n.minor = static_cast<int>(minor(st.st_rdev));
  }
  // Opening the node is what CUDA does first; it changes nothing. EPERM/EACCES point at a cgroup
  // device rule or permissions, ENXIO/ENODEV at a node whose major no longer belongs to a driver.
  const int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    n.opens = true;
    ::close(fd);
  } else {
    n.open_error = std::strerror(errno);
  }
  return n;
}

std::string detect_container(Run& run, std::vector<std::pair<std::string, std::string>>& facts) {
  // systemd writes the container manager's name here; LXC and podman set it too.
  std::string kind = read_file(run.path("/run/systemd/container"), 256);
  while (!kind.empty() && std::isspace(static_cast<unsigned char>(kind.back())))
    kind.pop_back();
  if (!kind.empty()) {
    facts.emplace_back("evidence", "/run/systemd/container");
    return kind == "lxc-libvirt" ? "lxc" : kind;
  }
  if (exists(run.path("/.dockerenv"))) {
    facts.emplace_back("evidence", "/.dockerenv");
    return "docker";
  }
  if (exists(run.path("/run/.containerenv"))) {
    facts.emplace_back("evidence", "/run/.containerenv");
    return "podman";
  }
  if (run.env("KUBERNETES_SERVICE_HOST")) {
    facts.emplace_back("evidence", "KUBERNETES_SERVICE_HOST");
    return "kubernetes";
  }
  // /proc/1/environ is readable by root only; container=lxc is set by LXC for init.
  const std::string environ1 = read_file(run.path("/proc/1/environ"));
  for (size_t pos = 0; pos < environ1.size();) {
    const size_t end = environ1.find('\0', pos);
    const std::string kv = environ1.substr(pos, end == std::string::npos ? end : end - pos);
    if (kv.rfind("container=", 0) == 0) {
      facts.emplace_back("evidence", "/proc/1/environ container=");
      return kv.substr(10);
    }
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  const std::string cgroup = read_file(run.path("/proc/1/cgroup"));
  for (const auto& [needle, name] :
       std::vector<std::pair<std::string, std::string>>{{"kubepods", "kubernetes"},
                                                        {"docker", "docker"},
                                                        {"lxc.payload", "lxc"},
                                                        {"/lxc/", "lxc"},
                                                        {"libpod", "podman"}}) {
    if (cgroup.find(needle) != std::string::npos) {
      facts.emplace_back("evidence", "/proc/1/cgroup mentions " + needle);
      return name;
    }
  }
  if (exists(run.path("/dev/.lxc-boot-id")) || exists(run.path("/dev/.lxc"))) {
    facts.emplace_back("evidence", "/dev/.lxc*");
    return "lxc";
  }
  return "none";
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
    ++i;
  return s.substr(i);
}

} // namespace

void run_host_layer(Run& run) {
  auto& host = run.host;
  auto& facts_out = run.report.host;
  {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0)
      facts_out.hostname = name;
    struct utsname u {};
    if (::uname(&u) == 0)
      facts_out.kernel = u.release;
  }

  { // container
    const auto t0 = Clock::now();
    auto c = make_check("host.container", PreflightLayer::host);
    host.container_kind = detect_container(run, c.facts);
    host.in_container = host.container_kind != "none";
    c.facts.emplace(c.facts.begin(), "container", host.container_kind);
    facts_out.container = host.container_kind;
    c.summary = host.in_container ? "running in a " + host.container_kind + " container"
                                  : "not in a container";
    add_check(run, std::move(c), t0);
  }

  const auto majors = char_majors(read_file(run.path("/proc/devices")));
  { // kernel module
    const auto t0 = Clock::now();
    auto c = make_check("host.kernel_module", PreflightLayer::host);
    const std::string version = read_file(run.path("/proc/driver/nvidia/version"));
    if (!version.empty()) {
      host.module_loaded = true;
      // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  595.71.05  Tue ..." (or "Open Kernel
      // Module for x86_64  595.71.05  Release Build ...").
      std::istringstream in(version.substr(0, version.find('\n')));
      std::string word;
      while (in >> word)
        if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
            word.find('.') != std::string::npos) {
          host.module_version = word;
          break;
        }
      facts_out.kernel_module_version = host.module_version;
      c.facts.emplace_back("module_version", host.module_version);
      c.summary = "NVIDIA kernel module " + host.module_version + " loaded";
    } else {
      c.status = CheckStatus::fail;
      c.summary =
          "no NVIDIA kernel module: " + run.path("/proc/driver/nvidia/version") + " is missing";
      c.diagnosis = host.in_container
                        ? "the host has no NVIDIA driver loaded, or the container does not see "
                          "the host's /proc/driver/nvidia"
                        : "the NVIDIA driver is not installed or not loaded on this machine";
      c.remedy = "install the NVIDIA driver and load it (modprobe nvidia); nvidia-smi on the "
                 "host must work first";
    }
    host.uvm_module_loaded = exists(run.path("/sys/module/nvidia_uvm"));
    c.facts.emplace_back("nvidia_uvm_module", host.uvm_module_loaded ? "loaded" : "not loaded");
    add_check(run, std::move(c), t0);
  }

  { // device nodes
    const auto t0 = Clock::now();
    auto c = make_check("host.device_nodes", PreflightLayer::host);
    const int nv_major = majors.count("nvidia-frontend") ? majors.at("nvidia-frontend")
                         : majors.count("nvidia")        ? majors.at("nvidia")
                                                         : 195;
    c.facts.emplace_back("expected_major", std::to_string(nv_major));
    const auto ctl = inspect_node(run.path("/dev/nvidiactl"));
    if (!ctl.present)
      host.nvidiactl_problem = "/dev/nvidiactl is missing";
    else if (!ctl.is_char)
      host.nvidiactl_problem = "/dev/nvidiactl is not a character device";
    else if (ctl.major != nv_major)
      host.nvidiactl_problem = "/dev/nvidiactl has major " + std::to_string(ctl.major) +
                               ", the nvidia driver has " + std::to_string(nv_major);
    else if (!ctl.opens)
      host.nvidiactl_problem = "/dev/nvidiactl cannot be opened: " + ctl.open_error;
    host.nvidiactl_ok = host.nvidiactl_problem.empty();
    c.facts.emplace_back("nvidiactl", host.nvidiactl_ok ? "ok" : host.nvidiactl_problem);
    std::string listed, bad_nodes;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(run.path("/dev"), ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() <= 6 || name.rfind("nvidia", 0) != 0)
        continue;
      const std::string digits = name.substr(6);
      if (digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (digits.size() > 3 || std::stoi(digits) > 254) { // 255 is nvidiactl's minor
        bad_nodes += (bad_nodes.empty() ? "" : "; ") + ("/dev/" + name) +
                     " is not a GPU node the driver creates (/dev/nvidia0 to /dev/nvidia254)";
        continue;
      }
      const auto st = inspect_node(e.path().string());
      if (!st.is_char) {
        bad_nodes +=
            (bad_nodes.empty() ? "" : "; ") + ("/dev/" + name) + " is not a character device";
        continue;
      }
      if (st.major != nv_major)
        bad_nodes += (bad_nodes.empty() ? "" : "; ") + ("/dev/" + name) + " has major " +
                     std::to_string(st.major) + ", the nvidia driver has " +
                     std::to_string(nv_major);
      else if (!st.opens)
        bad_nodes += (bad_nodes.empty() ? "" : "; ") + ("/dev/" + name) +
                     " cannot be opened: " + st.open_error;
      else
        host.gpu_node_minors.push_back(std::stoi(digits));
    }
    std::sort(host.gpu_node_minors.begin(), host.gpu_node_minors.end());
    for (int m : host.gpu_node_minors)
      listed += (listed.empty() ? "" : ",") + std::to_string(m);
    c.facts.emplace_back("gpu_nodes", listed.empty() ? "none" : "/dev/nvidia{" + listed + "}");
    if (!host.nvidiactl_ok || host.gpu_node_minors.empty()) {
      c.status = CheckStatus::fail;
      c.summary = !host.nvidiactl_ok ? host.nvidiactl_problem : "no /dev/nvidiaN device nodes";
      c.diagnosis = host.in_container
                        ? "the container was started without the NVIDIA device nodes (or the "
                          "host has no driver loaded)"
                        : "the NVIDIA driver is not loaded, so its device nodes do not exist";
      c.remedy = host.in_container
                     ? "pass /dev/nvidiactl and /dev/nvidia0..N into the container (LXC: "
                       "lxc.mount.entry + lxc.cgroup2.devices.allow c 195:* rwm; Docker: --gpus)"
                     : "load the driver (modprobe nvidia, or nvidia-smi as root creates the "
                       "nodes)";
    } else if (!bad_nodes.empty()) {
      c.status = CheckStatus::fail;
      c.facts.emplace_back("bad_nodes", bad_nodes);
      c.summary = bad_nodes;
      c.diagnosis = "a GPU device node is stale or blocked: NVML and CUDA cannot use that GPU "
                    "(EPERM/EACCES: a cgroup device rule; another major: a node left from "
                    "another driver or a bind mount of the wrong file)";
      c.remedy = host.in_container ? "restart the container with the host's current /dev/nvidia* "
                                     "nodes and allow c 195:* rwm in its device rules"
                                   : "recreate the nodes (nvidia-modprobe -c N) as root";
    } else {
      c.summary = "/dev/nvidiactl and " + std::to_string(host.gpu_node_minors.size()) +
                  " GPU node(s) present, right major, open";
    }
    add_check(run, std::move(c), t0);
  }

  { // the unified-memory node CUDA needs and NVML does not
    const auto t0 = Clock::now();
    auto c = make_check("host.uvm", PreflightLayer::host);
    const int uvm_major = majors.count("nvidia-uvm") ? majors.at("nvidia-uvm") : -1;
    c.facts.emplace_back("proc_devices_major",
                         uvm_major < 0 ? "absent" : std::to_string(uvm_major));
    const auto uvm = inspect_node(run.path("/dev/nvidia-uvm"));
    c.facts.emplace_back("node", !uvm.present   ? "missing"
                                 : !uvm.is_char ? "not a character device"
                                                : "char " + std::to_string(uvm.major) + ":" +
                                                      std::to_string(uvm.minor));
    if (uvm.present && uvm.is_char)
      c.facts.emplace_back("opens", uvm.opens ? "yes" : "no: " + uvm.open_error);
    c.facts.emplace_back("module", host.uvm_module_loaded ? "loaded" : "not loaded");
    if (!host.uvm_module_loaded && uvm_major < 0)
      host.uvm_problem = "the nvidia_uvm kernel module is not loaded (no /sys/module/nvidia_uvm, "
                         "no nvidia-uvm in /proc/devices)";
    else if (!uvm.present)
      host.uvm_problem = "/dev/nvidia-uvm is missing";
    else if (!uvm.is_char)
      host.uvm_problem = "/dev/nvidia-uvm is not a character device";
    else if (uvm_major >= 0 && uvm.major != uvm_major)
      host.uvm_problem = "/dev/nvidia-uvm has major " + std::to_string(uvm.major) +
                         " but the loaded nvidia-uvm driver has major " +
                         std::to_string(uvm_major) +
                         " (a stale node from before a reboot or "
                         "driver reload)";
    else if (!uvm.opens)
      host.uvm_problem = "/dev/nvidia-uvm cannot be opened: " + uvm.open_error;
    host.uvm_ok = host.uvm_problem.empty();
    if (host.uvm_ok) {
      c.summary = "/dev/nvidia-uvm present, major matches, opens";
    } else {
      c.status = host.module_loaded ? CheckStatus::fail : CheckStatus::warn;
      c.summary = host.uvm_problem;
      c.diagnosis = "CUDA needs nvidia_uvm and a working /dev/nvidia-uvm (NVML and nvidia-smi "
                    "do not); without them cuInit fails, typically with CUDA_ERROR_UNKNOWN (999)";
      c.remedy = host.in_container
                     ? "on the host: modprobe nvidia-uvm (or nvidia-modprobe -u -c 0) and make it "
                       "load at boot; then restart the container so /dev/nvidia-uvm* are "
                       "recreated with the current major (do not hard-code it in the LXC config)"
                     : "modprobe nvidia-uvm (or nvidia-modprobe -u -c 0) as root, and load it at "
                       "boot";
    }
    add_check(run, std::move(c), t0);
  }

  { // visibility variables
    const auto t0 = Clock::now();
    auto c = make_check("host.visibility", PreflightLayer::host);
    const auto cvd = run.env("CUDA_VISIBLE_DEVICES");
    const auto nvd = run.env("NVIDIA_VISIBLE_DEVICES");
    facts_out.cuda_visible_devices = cvd;
    facts_out.nvidia_visible_devices = nvd;
    c.facts.emplace_back("CUDA_VISIBLE_DEVICES", cvd ? "\"" + *cvd + "\"" : "(unset)");
    c.facts.emplace_back("NVIDIA_VISIBLE_DEVICES", nvd ? "\"" + *nvd + "\"" : "(unset)");
    c.summary = "no visibility restriction";
    int needed = run.plan.tp;
    for (int g : run.plan.gpus)
      needed = std::max(needed, g + 1);
    if (cvd) {
      // CUDA takes entries up to the first invalid one: integers, GPU-<uuid>, MIG-<uuid>.
      int valid = 0;
      std::string bad;
      std::istringstream in(*cvd);
      std::string tok;
      while (std::getline(in, tok, ',')) {
        tok = trim(tok);
        const bool number =
            !tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos;
        if (number || tok.rfind("GPU-", 0) == 0 || tok.rfind("MIG-", 0) == 0) {
          ++valid;
        } else {
          bad = tok.empty() ? "(empty entry)" : tok;
          break;
        }
      }
      host.visible_limit = valid;
      host.visible_empty = valid == 0;
      c.facts.emplace_back("cuda_visible_count", std::to_string(valid));
      if (valid == 0) {
        c.status = CheckStatus::fail;
        c.summary = "CUDA_VISIBLE_DEVICES=\"" + *cvd + "\" hides every GPU" +
                    (bad.empty() ? "" : " (CUDA stops at its first entry, \"" + bad + "\")");
        c.diagnosis = "CUDA will report no device (CUDA_ERROR_NO_DEVICE, 100)";
        c.remedy = "unset CUDA_VISIBLE_DEVICES or list the GPUs to use, e.g. 0,1,2,3";
      } else if (valid < needed) {
        c.status = CheckStatus::fail;
        c.summary = "CUDA_VISIBLE_DEVICES allows " + std::to_string(valid) +
                    " GPU(s), the plan needs " + std::to_string(needed) +
                    (bad.empty() ? "" : ": it stops at invalid entry \"" + bad + "\"");
        c.diagnosis = "the plan's TP group cannot be formed from the visible GPUs "
                      "(CUDA_ERROR_INVALID_DEVICE, 101)" +
                      std::string(bad.empty() ? ""
                                              : "; CUDA ignores every entry from the first "
                                                "invalid one on");
        c.remedy = bad.empty()
                       ? "list enough GPUs in CUDA_VISIBLE_DEVICES, or lower --tp"
                       : "remove the invalid entry \"" + bad + "\" from CUDA_VISIBLE_DEVICES";
      } else if (!bad.empty()) {
        c.status = CheckStatus::warn;
        c.summary = "CUDA_VISIBLE_DEVICES stops at invalid entry \"" + bad + "\"";
        c.diagnosis = "CUDA ignores every entry from the first invalid one on";
        c.remedy = "remove the invalid entry";
      } else {
        c.summary = "CUDA_VISIBLE_DEVICES allows " + std::to_string(valid) + " GPU(s)";
      }
    }
    if (nvd && c.status == CheckStatus::pass &&
        (*nvd == "void" || *nvd == "none" || nvd->empty())) {
      c.status = CheckStatus::warn;
      c.summary = "NVIDIA_VISIBLE_DEVICES=\"" + *nvd + "\": the container runtime injected no GPU";
      c.diagnosis = "the NVIDIA container runtime was told to expose no GPU to this container";
      c.remedy = "start the container with NVIDIA_VISIBLE_DEVICES=all (or --gpus all)";
    }
    add_check(run, std::move(c), t0);
  }

  { // variables that change how CUDA behaves (the same list DCGM's level 1 warns about)
    const auto t0 = Clock::now();
    auto c = make_check("host.cuda_env", PreflightLayer::host);
    std::string set;
    for (const char* v : {"NSIGHT_CUDA_DEBUGGER", "CUDA_INJECTION32_PATH", "CUDA_INJECTION64_PATH",
                          "CUDA_AUTO_BOOST", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                          "CUDA_COREDUMP_FILE", "CUDA_DEVICE_WAITS_ON_EXCEPTION", "CUDA_PROFILE",
                          "COMPUTE_PROFILE", "OPENCL_PROFILE", "CUDA_LAUNCH_BLOCKING"})
      if (auto val = run.env(v)) {
        set += (set.empty() ? "" : " ") + std::string(v);
        c.facts.emplace_back(v, *val);
      }
    if (set.empty()) {
      c.summary = "no debugging/profiling CUDA variables set";
    } else {
      c.status = CheckStatus::warn;
      c.summary = "set: " + set;
      c.diagnosis = "these variables slow CUDA down or change its behaviour; benchmark numbers "
                    "taken with them are not comparable";
      c.remedy = "unset them before benchmarking";
    }
    add_check(run, std::move(c), t0);
  }
}

std::string normalise_bus_id(const std::string& id) {
  std::string s = detail::ascii_lower(id);
  const auto colon = s.find(':');
  if (colon == std::string::npos)
    return s;
  std::string domain = s.substr(0, colon);
  if (s.find(':', colon + 1) == std::string::npos)
    return "0000:" + s; // "18:00.0"
  while (domain.size() > 4 && domain[0] == '0')
    domain.erase(0, 1);
  while (domain.size() < 4)
    domain = "0" + domain;
  return domain + s.substr(colon);
}

} // namespace specbench::preflight
