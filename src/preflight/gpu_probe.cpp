// The GPU probe: runs in a child process (specbench-gpu-probe, or a fork of the caller) because a
// failed cuInit poisons its process and a hung driver must not hang the caller. It loads libcuda
// with dlopen and walks the cuda-driver, compute and interconnect layers, writing one JSON event
// per line to stdout as it goes, so that the parent knows which step hung if it has to kill it.
#include "core/json_text.hpp"
#include "preflight/cuda_api.hpp"
#include "preflight/probe.hpp"
#include "preflight/probe_fatbin.hpp"
#include "specbench/build_info.hpp"
#include "specbench/cuda_errors.hpp"
#include "specbench/preflight.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace specbench::preflight {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void emit(int fd, const json& event) {
  std::string line = detail::json_text(event);
  line += '\n';
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0)
      return; // the parent went away; nothing useful left to do
    p += n;
    left -= static_cast<size_t>(n);
  }
}

class Probe {
public:
  Probe(const json& request, int fd) : req_(request), fd_(fd) {}
  int run();

private:
  struct Step {
    Probe* probe;
    json ev;
    Clock::time_point t0 = Clock::now();
    Step(Probe* p, std::string id, int gpu) : probe(p) {
      ev = {{"ev", "check"},    {"id", std::move(id)},     {"gpu", gpu},
            {"status", "pass"}, {"facts", json::object()}, {"rc", 0}};
      emit(probe->fd_, {{"ev", "begin"}, {"id", ev["id"]}, {"gpu", gpu}});
    }
    Step& fact(const std::string& k, const json& v) {
      ev["facts"][k] = v.is_string() ? v : json(v.dump());
      return *this;
    }
    // Records a failed CUDA call; returns false so callers can `return step.cuda(...)`.
    bool cuda(const char* call, int rc, const std::string& summary, const char* status = "fail") {
      ev["status"] = status;
      ev["rc"] = rc;
      ev["call"] = call;
      ev["rc_name"] = probe->error_name(rc);
      ev["summary"] = summary + ": " + call + " returned " + probe->error_name(rc) + " (" +
                      std::to_string(rc) + ")";
      return false;
    }
    void set(const char* status, std::string summary) {
      ev["status"] = status;
      ev["summary"] = std::move(summary);
    }
    void finish() {
      ev["ms"] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      emit(probe->fd_, ev);
    }
    bool ok() const { return ev["status"] == "pass" || ev["status"] == "warn"; }
  };

  void skipped(const std::string& id, int gpu, const std::string& why) {
    emit(fd_, {{"ev", "check"},
               {"id", id},
               {"gpu", gpu},
               {"status", "skipped"},
               {"summary", why},
               {"facts", json::object()},
               {"rc", 0},
               {"ms", 0.0}});
  }
  std::string error_name(int rc) const {
    const char* name = nullptr;
    if (api_.cuGetErrorName && api_.cuGetErrorName(rc, &name) == 0 && name)
      return name;
    return cuda_error_name(rc);
  }
  bool load_driver();
  bool init_driver();
  void enumerate();
  void compute(int ordinal);
  bool kernel_step(int ordinal, cu::CUdeviceptr buf, unsigned n);
  void gemm_step(int ordinal);
  void interconnect();

  const json& req_;
  int fd_;
  DynLib lib_;
  cu::DriverApi api_;
  int count_ = 0;
  std::vector<int> planned_;
  std::vector<cu::CUcontext> ctx_; // by ordinal, nullptr = no context
  std::vector<bool> healthy_;      // by ordinal: every compute step passed
  DynLib cublas_lib_;
  cu::CublasApi cublas_;
  bool cublas_tried_ = false;
};

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& v : j)
      out.push_back(v.get<std::string>());
  return out;
}
std::string library_override(const json& req, const char* key) {
  if (req.contains("libraries") && req["libraries"].contains(key))
    return req["libraries"][key].get<std::string>();
  return {};
}

bool Probe::load_driver() {
  Step s(this, "cuda.load", -1);
  lib_ = DynLib::open({"libcuda.so.1"}, string_list(req_.value("library_path", json::array())),
                      library_override(req_, "cuda"));
  if (!lib_.loaded()) {
    s.set("fail", "libcuda.so.1 could not be loaded: " + lib_.error());
    s.fact("error", lib_.error());
    s.finish();
    return false;
  }
  s.fact("path", lib_.path());
  if (lib_.opened_as() != lib_.path())
    s.fact("opened_as", lib_.opened_as());
  const auto has = [&](const char* part) {
    return lib_.path().find(part) != std::string::npos ||
           lib_.opened_as().find(part) != std::string::npos;
  };
  const bool stub = has("/stubs/");
  const bool compat = has("/compat/");
  s.fact("stub", stub ? "yes" : "no");
  s.fact("compat", compat ? "yes" : "no");
  const std::string missing = api_.resolve(lib_);
  if (!missing.empty()) {
    s.set("fail", "libcuda at " + lib_.path() + " lacks " + missing);
    s.fact("missing_symbol", missing);
    s.finish();
    return false;
  }
  s.set("pass", "libcuda loaded from " + lib_.path());
  s.finish();
  return true;
}

bool Probe::init_driver() {
  {
    Step s(this, "cuda.init", -1);
    const int rc = api_.cuInit(0);
    if (rc != 0) {
      s.cuda("cuInit", rc, "CUDA driver initialisation failed");
      s.finish();
      return false;
    }
    s.set("pass", "cuInit(0) succeeded");
    s.finish();
  }
  {
    Step s(this, "cuda.version", -1);
    int v = 0;
    const int rc = api_.cuDriverGetVersion(&v);
    if (rc != 0) {
      s.cuda("cuDriverGetVersion", rc, "driver version unknown");
    } else {
      s.fact("driver_version", std::to_string(v));
      s.set("pass", "driver supports CUDA " + std::to_string(v / 1000) + "." +
                        std::to_string((v % 1000) / 10));
    }
    s.finish();
  }
  {
    Step s(this, "cuda.count", -1);
    const int rc = api_.cuDeviceGetCount(&count_);
    if (rc != 0) {
      s.cuda("cuDeviceGetCount", rc, "device count unknown");
      s.finish();
      return false;
    }
    s.fact("count", std::to_string(count_));
    if (count_ <= 0) { // cuInit normally says so itself (100); a count of 0 after it is no pass
      s.cuda("cuDeviceGetCount", 100, ""); // diagnosed as CUDA_ERROR_NO_DEVICE
      s.set("fail", "cuInit succeeded but cuDeviceGetCount reports 0 devices");
      s.finish();
      return false;
    }
    s.set("pass", std::to_string(count_) + " CUDA device(s) visible");
    s.finish();
  }
  return true;
}

void Probe::enumerate() {
  for (int i = 0; i < count_; ++i) {
    json d = {{"ev", "device"}, {"ordinal", i}};
    cu::CUdevice dev = 0;
    int rc = api_.cuDeviceGet(&dev, i);
    if (rc != 0) {
      d["rc"] = rc;
      d["call"] = "cuDeviceGet";
      emit(fd_, d);
      continue;
    }
    char buf[256] = {};
    if (api_.cuDeviceGetName(buf, sizeof buf, dev) == 0)
      d["name"] = buf;
    char bus[64] = {};
    if (api_.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == 0)
      d["pci_bus_id"] = bus;
    cu::CUuuid uuid{};
    if (api_.cuDeviceGetUuid && api_.cuDeviceGetUuid(&uuid, dev) == 0) {
      static const char* hex = "0123456789abcdef";
      std::string s = "GPU-";
      for (int b = 0; b < 16; ++b) {
        if (b == 4 || b == 6 || b == 8 || b == 10)
          s += '-';
        s += hex[uuid.bytes[b] >> 4];
        s += hex[uuid.bytes[b] & 15];
      }
      d["uuid"] = s;
    }
    int major = 0, minor = 0;
    if (api_.cuDeviceGetAttribute(&major, cu::attr_cc_major, dev) == 0 &&
        api_.cuDeviceGetAttribute(&minor, cu::attr_cc_minor, dev) == 0)
      d["cc"] = major * 10 + minor;
    size_t total = 0;
    if (api_.cuDeviceTotalMem(&total, dev) == 0)
      d["total"] = total;
    emit(fd_, d);
  }
}

bool Probe::kernel_step(int ordinal, cu::CUdeviceptr buf, unsigned n) {
  const std::string id = "compute.gpu" + std::to_string(ordinal) + ".kernel";
  Step s(this, id, ordinal);
  s.fact("compiled_architectures", std::string(build_info::cuda_architectures));
  const void* image = probe_fatbin();
  if (image == nullptr) {
    s.set("warn", "no kernel compiled into this specbench (built without CUDA)");
    s.fact("cuda_compiled", "no");
    s.finish();
    return true;
  }
  s.fact("image_bytes", std::to_string(probe_fatbin_size()));
  cu::CUmodule mod = nullptr;
  int rc = api_.cuModuleLoadData(&mod, image);
  if (rc != 0) {
    s.cuda("cuModuleLoadData", rc, "the kernel image could not be loaded");
    s.finish();
    return false;
  }
  cu::CUfunction fn = nullptr;
  rc = api_.cuModuleGetFunction(&fn, mod, probe_fill_kernel);
  if (rc != 0) {
    s.cuda("cuModuleGetFunction", rc, "probe kernel missing from the image");
    s.finish();
    return false;
  }
  unsigned seed = 0x5eed0000u + static_cast<unsigned>(ordinal);
  void* args[] = {&buf, &n, &seed};
  const char* call = "cuLaunchKernel";
  rc = api_.cuLaunchKernel(fn, 264, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
  if (rc == 0) {
    call = "cuCtxSynchronize";
    rc = api_.cuCtxSynchronize();
  }
  if (rc != 0) {
    s.cuda(call, rc, "the probe kernel did not run");
    s.finish();
    return false;
  }
  std::vector<unsigned> host(n);
  rc = api_.cuMemcpyDtoH(host.data(), buf, size_t{n} * sizeof(unsigned));
  if (rc != 0) {
    s.cuda("cuMemcpyDtoH", rc, "reading the kernel's output failed");
    s.finish();
    return false;
  }
  size_t bad = 0, first_bad = 0;
  for (unsigned i = 0; i < n; ++i)
    if (host[i] != probe_fill_value(i, seed) && bad++ == 0)
      first_bad = i;
  s.fact("elements", std::to_string(n));
  s.fact("mismatches", std::to_string(bad));
  if (bad != 0) {
    s.set("fail", "the probe kernel wrote wrong values (" + std::to_string(bad) +
                      " mismatches, first at " + std::to_string(first_bad) + ")");
  } else {
    s.set("pass", "probe kernel ran and its " + std::to_string(n) + " outputs are correct");
  }
  if (api_.cuModuleUnload)
    (void)api_.cuModuleUnload(mod);
  s.finish();
  return bad == 0;
}

void Probe::gemm_step(int ordinal) {
  Step s(this, "compute.gpu" + std::to_string(ordinal) + ".gemm", ordinal);
  if (!req_.value("gemm", true)) {
    s.set("skipped", "GEMM not requested");
    s.finish();
    return;
  }
  if (!cublas_tried_) {
    cublas_tried_ = true;
    cublas_lib_ = DynLib::open({"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                               string_list(req_.value("library_path", json::array())),
                               library_override(req_, "cublas"));
    if (cublas_lib_.loaded()) {
      cublas_.create = cublas_lib_.fn<decltype(cublas_.create)>("cublasCreate_v2");
      cublas_.destroy = cublas_lib_.fn<decltype(cublas_.destroy)>("cublasDestroy_v2");
      cublas_.sgemm = cublas_lib_.fn<decltype(cublas_.sgemm)>("cublasSgemm_v2");
    }
  }
  if (!cublas_lib_.loaded() || !cublas_.create || !cublas_.sgemm) {
    s.set("warn",
          "cuBLAS not available, GEMM not checked: " +
              (cublas_lib_.loaded() ? std::string("symbols missing") : cublas_lib_.error()));
    s.finish();
    return;
  }
  s.fact("library", cublas_lib_.path());
  constexpr int n = 256;
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.f), ref(n * n, 0.f);
  // Small integers: every product and sum is exact in FP32 and in TF32, so any difference is an
  // error, not rounding.
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7 + 3) % 5 - 2);
    b[i] = static_cast<float>((i * 11 + 1) % 5 - 2);
  }
  for (int col = 0; col < n; ++col)
    for (int k = 0; k < n; ++k) {
      const float bk = b[col * n + k];
      for (int row = 0; row < n; ++row)
        ref[col * n + row] += a[k * n + row] * bk;
    }
  const size_t bytes = sizeof(float) * n * n;
  cu::CUdeviceptr da = 0, db = 0, dc = 0;
  int rc = api_.cuMemAlloc(&da, bytes);
  if (rc == 0)
    rc = api_.cuMemAlloc(&db, bytes);
  if (rc == 0)
    rc = api_.cuMemAlloc(&dc, bytes);
  if (rc == 0)
    rc = api_.cuMemcpyHtoD(da, a.data(), bytes);
  if (rc == 0)
    rc = api_.cuMemcpyHtoD(db, b.data(), bytes);
  if (rc != 0) {
    s.cuda("cuMemAlloc/cuMemcpyHtoD", rc, "GEMM buffers");
  } else {
    cu::cublasHandle_t h = nullptr;
    int st = cublas_.create(&h);
    if (st != 0) {
      s.set("fail", "cublasCreate failed with cuBLAS status " + std::to_string(st));
    } else {
      const float alpha = 1.f, beta = 0.f;
      st = cublas_.sgemm(h, 0, 0, n, n, n, &alpha, reinterpret_cast<const float*>(da), n,
                         reinterpret_cast<const float*>(db), n, &beta, reinterpret_cast<float*>(dc),
                         n);
      rc = api_.cuCtxSynchronize();
      if (st != 0) {
        s.set("fail", "cublasSgemm failed with cuBLAS status " + std::to_string(st));
      } else if (rc != 0) {
        s.cuda("cuCtxSynchronize", rc, "GEMM did not complete");
      } else if ((rc = api_.cuMemcpyDtoH(c.data(), dc, bytes)) != 0) {
        s.cuda("cuMemcpyDtoH", rc, "GEMM result copy");
      } else {
        double max_err = 0;
        for (int i = 0; i < n * n; ++i)
          max_err = std::max(max_err, static_cast<double>(std::fabs(c[i] - ref[i])));
        s.fact("shape", "256x256x256 fp32");
        s.fact("max_abs_error", std::to_string(max_err));
        if (max_err > 1e-3)
          s.set("fail", "cuBLAS SGEMM result differs from the CPU reference (max error " +
                            std::to_string(max_err) + ")");
        else
          s.set("pass", "cuBLAS SGEMM 256^3 matches the CPU reference");
      }
      if (cublas_.destroy)
        cublas_.destroy(h);
    }
  }
  for (auto p : {da, db, dc})
    if (p)
      (void)api_.cuMemFree(p);
  s.finish();
}

void Probe::compute(int ordinal) {
  const std::string pre = "compute.gpu" + std::to_string(ordinal) + ".";
  const char* later[] = {"alloc", "kernel", "memcpy", "gemm", "bandwidth"};
  auto skip_rest = [&](int from, const std::string& why) {
    for (int i = from; i < 5; ++i)
      skipped(pre + later[i], ordinal, why);
  };
  cu::CUcontext ctx = nullptr;
  {
    Step s(this, pre + "context", ordinal);
    cu::CUdevice dev = 0;
    int rc = api_.cuDeviceGet(&dev, ordinal);
    if (rc == 0)
      rc = api_.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (rc == 0)
      rc = api_.cuCtxSetCurrent(ctx);
    if (rc != 0) {
      s.cuda("cuDevicePrimaryCtxRetain", rc, "no context on GPU " + std::to_string(ordinal));
      s.finish();
      skip_rest(0, "blocked by " + pre + "context");
      return;
    }
    size_t free_b = 0, total_b = 0;
    if (api_.cuMemGetInfo(&free_b, &total_b) == 0) {
      s.fact("free_bytes", std::to_string(free_b));
      s.fact("total_bytes", std::to_string(total_b));
    }
    s.set("pass", "context created");
    s.finish();
  }
  ctx_[ordinal] = ctx;
  const size_t alloc = std::max<size_t>(req_.value("alloc_bytes", size_t{64} << 20), 1 << 20);
  const size_t half = alloc / 2 / sizeof(unsigned) * sizeof(unsigned);
  cu::CUdeviceptr a = 0, b = 0;
  {
    Step s(this, pre + "alloc", ordinal);
    s.fact("bytes", std::to_string(alloc));
    int rc = api_.cuMemAlloc(&a, half);
    if (rc == 0)
      rc = api_.cuMemAlloc(&b, half);
    if (rc != 0) {
      s.cuda("cuMemAlloc", rc, "could not allocate " + std::to_string(alloc >> 20) + " MiB");
      s.finish();
      skip_rest(1, "blocked by " + pre + "alloc");
      return;
    }
    s.set("pass", "allocated " + std::to_string(alloc >> 20) + " MiB");
    s.finish();
  }
  const unsigned n = static_cast<unsigned>(half / sizeof(unsigned));
  bool fine = kernel_step(ordinal, a, n);
  {
    Step s(this, pre + "memcpy", ordinal);
    std::vector<unsigned> pattern(n), back(n, 0);
    for (unsigned i = 0; i < n; ++i)
      pattern[i] = ~(i * 40503u) ^ 0xA5A5A5A5u;
    int rc = api_.cuMemcpyHtoD(a, pattern.data(), half);
    if (rc == 0)
      rc = api_.cuMemcpyDtoD(b, a, half);
    if (rc == 0)
      rc = api_.cuMemcpyDtoH(back.data(), b, half);
    if (rc != 0) {
      s.cuda("cuMemcpy", rc, "host->device->device->host round trip failed");
      fine = false;
    } else if (pattern != back) {
      size_t bad = 0;
      for (unsigned i = 0; i < n; ++i)
        bad += pattern[i] != back[i];
      s.fact("mismatches", std::to_string(bad));
      s.set("fail",
            "memcpy round trip returned different data (" + std::to_string(bad) + " words differ)");
      fine = false;
    } else {
      s.fact("bytes", std::to_string(half));
      s.set("pass", "host->device->device->host round trip of " + std::to_string(half >> 20) +
                        " MiB is identical");
    }
    s.finish();
  }
  gemm_step(ordinal);
  {
    Step s(this, pre + "bandwidth", ordinal);
    if (!req_.value("bandwidth", true)) {
      s.set("skipped", "bandwidth not requested");
    } else if (!api_.cuEventCreate || !api_.cuEventRecord || !api_.cuEventElapsedTime) {
      s.set("warn", "CUDA events not supported by this libcuda; bandwidth not measured");
    } else {
      cu::CUevent e0 = nullptr, e1 = nullptr;
      int rc = api_.cuEventCreate(&e0, 0);
      if (rc == 0)
        rc = api_.cuEventCreate(&e1, 0);
      (void)api_.cuMemcpyDtoD(b, a, half); // warm-up
      constexpr int reps = 5;
      if (rc == 0)
        rc = api_.cuEventRecord(e0, nullptr);
      for (int r = 0; r < reps && rc == 0; ++r)
        rc = api_.cuMemcpyDtoD(b, a, half);
      if (rc == 0)
        rc = api_.cuEventRecord(e1, nullptr);
      if (rc == 0)
        rc = api_.cuEventSynchronize(e1);
      float ms = 0.f;
      if (rc == 0)
        rc = api_.cuEventElapsedTime(&ms, e0, e1);
      if (rc != 0) {
        s.cuda("cuMemcpyDtoD/cuEvent*", rc, "bandwidth measurement failed", "warn");
      } else {
        // A device-to-device copy reads and writes every byte.
        const double gbps = ms > 0 ? 2.0 * reps * static_cast<double>(half) / (ms * 1e6) : 0.0;
        char text[64];
        std::snprintf(text, sizeof text, "%.1f", gbps);
        s.fact("gbps", text);
        s.fact("bytes_per_copy", std::to_string(half));
        s.set("pass", std::string("device memory copy bandwidth ") + text + " GB/s");
      }
      if (api_.cuEventDestroy) {
        if (e0)
          (void)api_.cuEventDestroy(e0);
        if (e1)
          (void)api_.cuEventDestroy(e1);
      }
    }
    s.finish();
  }
  (void)api_.cuMemFree(a);
  (void)api_.cuMemFree(b);
  healthy_[ordinal] = fine;
}

void Probe::interconnect() {
  const int tp = req_.value("tp", 1);
  const int n = static_cast<int>(planned_.size());
  if (tp <= 1 || n <= 1) {
    const std::string why = "TP group of 1 GPU: no interconnect to check";
    for (const char* id :
         {"interconnect.peer_access", "interconnect.p2p_copy", "interconnect.nccl"})
      skipped(id, -1, why);
    return;
  }
  for (int d : planned_)
    if (!ctx_[d] || !healthy_[d]) {
      const std::string why = "blocked by compute on GPU " + std::to_string(d);
      for (const char* id :
           {"interconnect.peer_access", "interconnect.p2p_copy", "interconnect.nccl"})
        skipped(id, -1, why);
      return;
    }
  bool all_peer = true;
  {
    Step s(this, "interconnect.peer_access", -1);
    std::string no_pairs;
    if (!api_.cuDeviceCanAccessPeer || !api_.cuCtxEnablePeerAccess) {
      s.set("warn", "this libcuda lacks peer-access calls");
      all_peer = false;
    } else {
      for (int i : planned_)
        for (int j : planned_) {
          if (i == j)
            continue;
          int can = 0;
          int rc = api_.cuDeviceCanAccessPeer(&can, i, j);
          if (rc == 0 && can) {
            (void)api_.cuCtxSetCurrent(ctx_[i]);
            rc = api_.cuCtxEnablePeerAccess(ctx_[j], 0);
            if (rc == 704)
              rc = 0; // already enabled
          }
          if (rc != 0 || !can) {
            all_peer = false;
            no_pairs += (no_pairs.empty() ? "" : " ") + std::to_string(i) + "->" +
                        std::to_string(j) + (rc ? "(" + error_name(rc) + ")" : "");
          }
        }
      s.fact("pairs", std::to_string(n * (n - 1)));
      if (all_peer) {
        s.set("pass",
              "peer access enabled between every pair of the " + std::to_string(n) + " GPUs");
      } else {
        s.fact("without_peer_access", no_pairs);
        s.set("warn", "no peer access for " + no_pairs);
      }
    }
    s.finish();
  }
  {
    Step s(this, "interconnect.p2p_copy", -1);
    const size_t bytes = size_t{1} << 20;
    const unsigned words = static_cast<unsigned>(bytes / sizeof(unsigned));
    std::vector<cu::CUdeviceptr> bufs(static_cast<size_t>(count_), 0);
    int rc = 0;
    for (int d : planned_) {
      (void)api_.cuCtxSetCurrent(ctx_[d]);
      std::vector<unsigned> pattern(words);
      for (unsigned i = 0; i < words; ++i)
        pattern[i] = i * 2246822519u + static_cast<unsigned>(d);
      if (rc == 0)
        rc = api_.cuMemAlloc(&bufs[d], bytes * 2);
      if (rc == 0)
        rc = api_.cuMemcpyHtoD(bufs[d], pattern.data(), bytes);
    }
    std::string failures;
    int copies = 0;
    if (rc != 0) {
      s.cuda("cuMemAlloc", rc, "P2P buffers");
    } else if (!api_.cuMemcpyPeer) {
      s.set("warn", "this libcuda lacks cuMemcpyPeer");
    } else {
      for (int i : planned_)
        for (int j : planned_) {
          if (i == j)
            continue;
          (void)api_.cuCtxSetCurrent(ctx_[j]);
          int r = api_.cuMemcpyPeer(bufs[j] + bytes, ctx_[j], bufs[i], ctx_[i], bytes);
          std::vector<unsigned> back(words, 0);
          if (r == 0)
            r = api_.cuMemcpyDtoH(back.data(), bufs[j] + bytes, bytes);
          bool same = r == 0;
          for (unsigned w = 0; same && w < words; ++w)
            same = back[w] == w * 2246822519u + static_cast<unsigned>(i);
          ++copies;
          if (!same)
            failures += (failures.empty() ? "" : " ") + std::to_string(i) + "->" +
                        std::to_string(j) + (r ? "(" + error_name(r) + ")" : "(wrong data)");
        }
      s.fact("copies", std::to_string(copies));
      s.fact("bytes_per_copy", std::to_string(bytes));
      if (failures.empty())
        s.set("pass", std::to_string(copies) + " GPU-to-GPU copies verified");
      else {
        s.fact("failed", failures);
        s.set("fail", "GPU-to-GPU copy failed or returned wrong data: " + failures);
      }
    }
    for (int d : planned_)
      if (bufs[d]) {
        (void)api_.cuCtxSetCurrent(ctx_[d]);
        (void)api_.cuMemFree(bufs[d]);
      }
    s.finish();
  }
  {
    Step s(this, "interconnect.nccl", -1);
    if (!req_.value("nccl", true)) {
      s.set("skipped", "NCCL not requested");
      s.finish();
      return;
    }
    DynLib nccl =
        DynLib::open({"libnccl.so.2"}, string_list(req_.value("library_path", json::array())),
                     library_override(req_, "nccl"));
    cu::NcclApi api;
    if (nccl.loaded()) {
      api.comm_init_all = nccl.fn<decltype(api.comm_init_all)>("ncclCommInitAll");
      api.comm_destroy = nccl.fn<decltype(api.comm_destroy)>("ncclCommDestroy");
      api.all_reduce = nccl.fn<decltype(api.all_reduce)>("ncclAllReduce");
      api.group_start = nccl.fn<decltype(api.group_start)>("ncclGroupStart");
      api.group_end = nccl.fn<decltype(api.group_end)>("ncclGroupEnd");
      api.get_error_string = nccl.fn<decltype(api.get_error_string)>("ncclGetErrorString");
      api.get_version = nccl.fn<decltype(api.get_version)>("ncclGetVersion");
    }
    if (!nccl.loaded() || !api.comm_init_all || !api.all_reduce || !api.group_start ||
        !api.group_end) {
      s.set("warn", "NCCL (libnccl.so.2) not available, all-reduce not checked: " +
                        (nccl.loaded() ? std::string("symbols missing") : nccl.error()));
      s.finish();
      return;
    }
    s.fact("library", nccl.path());
    int version = 0;
    if (api.get_version && api.get_version(&version) == 0)
      s.fact("nccl_version", std::to_string(version));
    auto nccl_err = [&](int r) {
      return std::string(api.get_error_string ? api.get_error_string(r) : "error") + " (" +
             std::to_string(r) + ")";
    };
    std::vector<cu::ncclComm_t> comms(static_cast<size_t>(n), nullptr);
    int r = api.comm_init_all(comms.data(), n, planned_.data());
    if (r != 0) {
      s.set("fail", "ncclCommInitAll failed: " + nccl_err(r));
      s.finish();
      return;
    }
    const size_t count = size_t{1} << 20;
    std::vector<cu::CUdeviceptr> bufs(static_cast<size_t>(n), 0);
    int rc = 0;
    for (int k = 0; k < n && rc == 0; ++k) {
      (void)api_.cuCtxSetCurrent(ctx_[planned_[k]]);
      std::vector<float> v(count, static_cast<float>(k + 1));
      rc = api_.cuMemAlloc(&bufs[k], count * sizeof(float));
      if (rc == 0)
        rc = api_.cuMemcpyHtoD(bufs[k], v.data(), count * sizeof(float));
    }
    if (rc != 0) {
      s.cuda("cuMemAlloc", rc, "NCCL buffers");
    } else {
      r = api.group_start();
      for (int k = 0; k < n && r == 0; ++k) {
        (void)api_.cuCtxSetCurrent(ctx_[planned_[k]]);
        r = api.all_reduce(reinterpret_cast<void*>(bufs[k]), reinterpret_cast<void*>(bufs[k]),
                           count, cu::nccl_float32, cu::nccl_sum, comms[k], nullptr);
      }
      const int r_end = api.group_end();
      if (r == 0)
        r = r_end;
      const float expect = static_cast<float>(n * (n + 1) / 2);
      size_t bad = 0;
      for (int k = 0; k < n && r == 0 && rc == 0; ++k) {
        (void)api_.cuCtxSetCurrent(ctx_[planned_[k]]);
        rc = api_.cuCtxSynchronize();
        std::vector<float> v(count, 0.f);
        if (rc == 0)
          rc = api_.cuMemcpyDtoH(v.data(), bufs[k], count * sizeof(float));
        for (float x : v)
          bad += x != expect;
      }
      if (r != 0) {
        s.set("fail", "ncclAllReduce failed: " + nccl_err(r));
      } else if (rc != 0) {
        s.cuda("cuCtxSynchronize/cuMemcpyDtoH", rc, "NCCL all-reduce did not complete");
      } else if (bad != 0) {
        s.fact("mismatches", std::to_string(bad));
        s.set("fail",
              "NCCL all-reduce returned wrong sums (" + std::to_string(bad) + " elements differ)");
      } else {
        s.fact("elements", std::to_string(count));
        s.set("pass", "NCCL all-reduce over " + std::to_string(n) + " GPUs gave the right sum");
      }
    }
    for (int k = 0; k < n; ++k)
      if (bufs[k]) {
        (void)api_.cuCtxSetCurrent(ctx_[planned_[k]]);
        (void)api_.cuMemFree(bufs[k]);
      }
    if (api.comm_destroy)
      for (auto c : comms)
        if (c)
          (void)api.comm_destroy(c);
    s.finish();
  }
}

int Probe::run() {
  if (!load_driver() || !init_driver()) {
    emit(fd_, {{"ev", "done"}});
    return 0;
  }
  enumerate();
  const int tp = std::max(1, req_.value("tp", 1));
  std::vector<int> wanted = req_.value("devices", std::vector<int>{});
  if (wanted.empty())
    for (int i = 0; i < tp; ++i)
      wanted.push_back(i);
  {
    Step s(this, "cuda.devices", -1);
    std::string missing;
    for (int d : wanted)
      if (d >= count_)
        missing += (missing.empty() ? "" : ",") + std::to_string(d);
    std::string list;
    for (int d : wanted)
      list += (list.empty() ? "" : ",") + std::to_string(d);
    s.fact("planned", list);
    s.fact("visible", std::to_string(count_));
    if (!missing.empty()) {
      s.cuda("cuDeviceGet", 101,
             "TP group needs " + std::to_string(wanted.size()) + " GPU(s) (" + list + "), " +
                 std::to_string(count_) + " visible");
      s.fact("missing", missing);
    } else {
      s.set("pass", "planned GPU(s) " + list + " are visible");
    }
    s.finish();
    for (int d : wanted)
      if (d < count_)
        planned_.push_back(d);
    emit(fd_, {{"ev", "plan"}, {"devices", planned_}, {"complete", missing.empty()}});
    if (!missing.empty()) {
      // The group cannot be formed; still check the GPUs that exist so the report says whether
      // they work, but the interconnect of a group that does not exist is not checked.
      ctx_.assign(static_cast<size_t>(count_), nullptr);
      healthy_.assign(static_cast<size_t>(count_), false);
      for (int d : planned_)
        compute(d);
      const std::string why = "TP group needs " + std::to_string(wanted.size()) + " GPUs, " +
                              std::to_string(count_) + " visible";
      for (const char* id :
           {"interconnect.peer_access", "interconnect.p2p_copy", "interconnect.nccl"})
        skipped(id, -1, why);
      emit(fd_, {{"ev", "done"}});
      return 0;
    }
  }
  ctx_.assign(static_cast<size_t>(count_), nullptr);
  healthy_.assign(static_cast<size_t>(count_), false);
  for (int d : planned_)
    compute(d);
  interconnect();
  // The contexts are not released: the process ends right after this, and the driver frees them.
  emit(fd_, {{"ev", "done"}});
  return 0;
}

} // namespace

int run_gpu_probe(const std::string& request_json, int out_fd) {
  json req = json::parse(request_json, nullptr, false);
  if (req.is_discarded()) {
    emit(out_fd, {{"ev", "error"}, {"message", "probe request is not valid JSON"}});
    return 2;
  }
  Probe probe(req, out_fd);
  return probe.run();
}

} // namespace specbench::preflight

namespace specbench {
int gpu_probe_main(int argc, char** argv) {
  std::string request;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--request") == 0)
      request = argv[i + 1];
  if (request.empty()) {
    const char msg[] = "usage: specbench-gpu-probe --request JSON (started by the preflight)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    return 2;
  }
  return preflight::run_gpu_probe(request, 1);
}
} // namespace specbench
