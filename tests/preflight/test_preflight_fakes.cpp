// The preflight against fake driver libraries on a fake machine root: each test reproduces one
// real failure (the seeds' incident, no driver, 35, 802, 803, a hanging cuInit, counts that
// disagree, a GPU that vanishes) and checks layer, diagnosis, remedy and verdict.
#include "fake_machine.hpp"

#include "specbench/build_info.hpp"
#include "support/test_paths.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>

namespace specbench {
namespace {
using testing::check;
using testing::FakeMachine;
using ::testing::HasSubstr;
using testing::Uvm;

int exit_code(const PreflightReport& r) {
  if (std::getenv("PREFLIGHT_TEST_VERBOSE"))
    std::cout << r.to_table() << "\n";
  return r.could_not_run() ? 2 : r.passed() ? 0 : 1;
}

TEST(PreflightFakes, SeedsIncidentNvmlHealthyCuInit999UvmMissingInLxc) {
  FakeMachine m("seeds");
  m.driver_loaded("595.71.05", Uvm::missing_node);
  m.gpu_nodes(8);
  m.container("lxc");
  m.set("FAKE_GPU_COUNT", "8");
  m.set("FAKE_CUDA_INIT_RESULT", "999");
  const PreflightReport r = run_preflight(m.plan(1));
  ASSERT_FALSE(r.could_not_run()) << r.run_error.to_string();
  // NVML: eight healthy GPUs.
  EXPECT_EQ(r.host.nvml_device_count, 8);
  EXPECT_EQ(check(r, "driver.nvml").status, CheckStatus::pass);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(check(r, "driver.gpu" + std::to_string(i)).status, CheckStatus::pass) << i;
  EXPECT_EQ(r.layer(PreflightLayer::driver).status, CheckStatus::pass);
  // Host evidence: the uvm node is missing.
  EXPECT_EQ(check(r, "host.uvm").status, CheckStatus::fail);
  EXPECT_EQ(r.host.container, "lxc");
  // cuInit 999 is the failure, in the cuda-driver layer, with the combined diagnosis.
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.layer, PreflightLayer::cuda_driver);
  EXPECT_EQ(init.status, CheckStatus::fail);
  EXPECT_EQ(init.cuda_error, 999);
  EXPECT_EQ(init.cuda_error_name, "CUDA_ERROR_UNKNOWN");
  EXPECT_THAT(init.diagnosis, HasSubstr("NVML works"));
  EXPECT_THAT(init.diagnosis, HasSubstr("/dev/nvidia-uvm is missing"));
  EXPECT_THAT(init.remedy, HasSubstr("modprobe nvidia-uvm"));
  EXPECT_THAT(init.remedy, HasSubstr("restart this lxc container"));
  // Later layers are blocked, not run and not passed.
  EXPECT_EQ(check(r, "compute").status, CheckStatus::skipped);
  EXPECT_THAT(check(r, "compute").summary, HasSubstr("blocked by cuda-driver (cuda.init)"));
  EXPECT_EQ(r.layer(PreflightLayer::compute).blocked_by, "cuda-driver");
  EXPECT_EQ(r.layer(PreflightLayer::interconnect).blocked_by, "cuda-driver");
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_STREQ(r.verdict(), "fail");
}

TEST(PreflightFakes, StaleUvmMajorAfterRebootIsNamed) {
  FakeMachine m("stale-major");
  m.driver_loaded("595.71.05", Uvm::stale_major);
  m.gpu_nodes(8);
  m.container("lxc");
  m.set("FAKE_GPU_COUNT", "8");
  m.set("FAKE_CUDA_INIT_RESULT", "999");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_THAT(check(r, "host.uvm").summary,
              HasSubstr("major 1 but the loaded nvidia-uvm driver has major 510"));
  EXPECT_THAT(check(r, "cuda.init").diagnosis, HasSubstr("stale node"));
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, Error999WithGoodNodesInContainerMeansStaleContainer) {
  FakeMachine m("stale-container");
  m.healthy(8);
  m.container("lxc");
  m.set("FAKE_CUDA_INIT_RESULT", "999");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "host.uvm").status, CheckStatus::pass);
  EXPECT_THAT(check(r, "cuda.init").diagnosis, HasSubstr("stale"));
  EXPECT_THAT(check(r, "cuda.init").remedy, HasSubstr("restart the container"));
}

TEST(PreflightFakes, NoDriverAtAll) {
  FakeMachine m("no-driver"); // empty root: no module, no nodes
  PreflightPlan plan = m.plan(1);
  plan.library_path.clear();
  plan.libraries = {{"nvml", (m.root / "nowhere/libnvidia-ml.so.1").string()},
                    {"cuda", (m.root / "nowhere/libcuda.so.1").string()}};
  const auto t0 = std::chrono::steady_clock::now();
  const PreflightReport r = run_preflight(plan);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(check(r, "host.kernel_module").status, CheckStatus::fail);
  EXPECT_EQ(check(r, "driver.nvml").status, CheckStatus::fail);
  const CheckResult& load = check(r, "cuda.load");
  EXPECT_EQ(load.status, CheckStatus::fail);
  EXPECT_THAT(load.diagnosis, HasSubstr("no NVIDIA driver on this machine"));
  EXPECT_EQ(check(r, "compute").status, CheckStatus::skipped);
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_LT(ms, 5000.0); // generous bound for a loaded CI box; docs/preflight.md has the timing
}

TEST(PreflightFakes, DriverOlderThanRuntimeIs35) {
  if (!build_info::cuda_compiled)
    GTEST_SKIP() << "built without CUDA: no runtime version to compare";
  FakeMachine m("driver-old");
  m.healthy(1);
  m.set("FAKE_CUDA_DRIVER_VERSION", "12040");
  const PreflightReport r = run_preflight(m.plan(1));
  const CheckResult& v = check(r, "cuda.version");
  EXPECT_EQ(v.status, CheckStatus::fail);
  EXPECT_EQ(v.cuda_error, 35);
  EXPECT_THAT(v.summary, HasSubstr("driver supports CUDA 12.4"));
  EXPECT_THAT(v.remedy, HasSubstr("install a driver that supports CUDA"));
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, FabricNotReadyIs802) {
  FakeMachine m("fabric");
  m.healthy(8);
  m.set("FAKE_NVML_FABRIC_STATE", "2"); // in progress
  m.set("FAKE_CUDA_INIT_RESULT", "802");
  const PreflightReport r = run_preflight(m.plan(8));
  const CheckResult& g0 = check(r, "driver.gpu0");
  EXPECT_EQ(g0.status, CheckStatus::fail);
  EXPECT_THAT(g0.summary, HasSubstr("NVLink fabric still in progress"));
  EXPECT_THAT(g0.remedy, HasSubstr("nvidia-fabricmanager"));
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.cuda_error, 802);
  EXPECT_EQ(init.cuda_error_name, "CUDA_ERROR_SYSTEM_NOT_READY");
  EXPECT_THAT(init.diagnosis, HasSubstr("NVLink fabric is not ready"));
  EXPECT_THAT(init.remedy, HasSubstr("nvidia-fabricmanager"));
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, DriverLibraryMismatchIs803) {
  FakeMachine m("mismatch");
  m.driver_loaded("590.48.01"); // kernel module still the old one
  m.gpu_nodes(2);
  m.set("FAKE_GPU_COUNT", "2");
  m.set("FAKE_NVML_INIT_RESULT", "18"); // NVML_ERROR_LIB_RM_VERSION_MISMATCH
  m.set("FAKE_CUDA_INIT_RESULT", "803");
  const PreflightReport r = run_preflight(m.plan(1));
  const CheckResult& nvml = check(r, "driver.nvml");
  EXPECT_EQ(nvml.status, CheckStatus::fail);
  EXPECT_THAT(nvml.summary, HasSubstr("NVML_ERROR_LIB_RM_VERSION_MISMATCH"));
  // cuInit is still tried although NVML failed.
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.cuda_error, 803);
  EXPECT_THAT(init.diagnosis, HasSubstr("kernel module 590.48.01"));
  EXPECT_THAT(init.remedy, HasSubstr("reboot the host"));
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, NvmlVersionAheadOfKernelModuleWarnsBefore803) {
  FakeMachine m("mismatch-warn");
  m.driver_loaded("590.48.01");
  m.gpu_nodes(1);
  m.set("FAKE_GPU_COUNT", "1");
  m.set("FAKE_CUDA_INIT_RESULT", "803");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "driver.nvml").status, CheckStatus::warn);
  EXPECT_THAT(check(r, "driver.nvml").diagnosis, HasSubstr("803"));
  EXPECT_THAT(check(r, "cuda.init").diagnosis, HasSubstr("NVML 595.71.05"));
}

TEST(PreflightFakes, HangingCuInitIsKilledNotWaitedFor) {
  FakeMachine m("hang");
  m.healthy(1);
  m.set("FAKE_CUDA_INIT_HANG", "1");
  PreflightPlan plan = m.plan(1);
  plan.timeouts.cuda_init = std::chrono::milliseconds(700);
  const auto t0 = std::chrono::steady_clock::now();
  const PreflightReport r = run_preflight(plan);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 4000.0);
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.status, CheckStatus::fail);
  EXPECT_THAT(init.summary, HasSubstr("did not return within"));
  EXPECT_THAT(init.diagnosis, HasSubstr("hangs in cuInit"));
  EXPECT_EQ(check(r, "compute").status, CheckStatus::skipped);
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, HangingNvmlIsAbandonedAndCudaStillChecked) {
  FakeMachine m("nvml-hang");
  m.healthy(1);
  m.set("FAKE_NVML_INIT_HANG", "1");
  PreflightPlan plan = m.plan(1);
  plan.timeouts.nvml = std::chrono::milliseconds(500);
  const auto t0 = std::chrono::steady_clock::now();
  const PreflightReport r = run_preflight(plan);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 4000.0);
  const CheckResult& nvml = check(r, "driver.nvml");
  EXPECT_EQ(nvml.status, CheckStatus::fail);
  EXPECT_THAT(nvml.summary, HasSubstr("NVML did not answer"));
  EXPECT_THAT(nvml.diagnosis, HasSubstr("hangs in NVML"));
  EXPECT_EQ(check(r, "cuda.init").status, CheckStatus::pass);
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, NvmlAndCudaCountsDisagree) {
  FakeMachine m("counts");
  m.driver_loaded();
  m.gpu_nodes(8, /*missing=*/7);
  m.set("FAKE_GPU_COUNT", "8");
  m.set("FAKE_CUDA_DEVICE_COUNT", "7");
  const PreflightReport r = run_preflight(m.plan(1));
  const CheckResult& match = check(r, "cuda.match");
  EXPECT_EQ(match.status, CheckStatus::warn);
  EXPECT_THAT(match.summary, HasSubstr("NVML sees 8 GPU(s), CUDA 7"));
  EXPECT_THAT(match.summary, HasSubstr("0000:08:00.0"));
  EXPECT_THAT(match.diagnosis, HasSubstr("/dev/nvidia7"));
  EXPECT_EQ(r.host.cuda_device_count, 7);
  // The planned GPU itself works: a warning, not a failure.
  EXPECT_EQ(exit_code(r), 0) << r.to_table();
  EXPECT_STREQ(r.verdict(), "warn");
}

TEST(PreflightFakes, GpuNodeWithForeignMajorIsReported) {
  if (!std::filesystem::is_character_file("/dev/tty"))
    GTEST_SKIP() << "/dev/tty (a character device of major 5) is not available here";
  FakeMachine m("bad-node");
  m.healthy(2);
  std::filesystem::remove(m.root / "dev/nvidia1");
  std::filesystem::create_symlink("/dev/tty", m.root / "dev/nvidia1"); // character device 5:0
  const PreflightReport r = run_preflight(m.plan(1));
  const CheckResult& n = check(r, "host.device_nodes");
  EXPECT_THAT(n.summary, HasSubstr("/dev/nvidia1 has major 5, the nvidia driver has 1"));
  // Evidence only: NVML and CUDA still ran, and since cuInit and the planned GPU work, the
  // finding is a warning (the deeper layers judge the GPUs the plan uses).
  EXPECT_EQ(check(r, "cuda.init").status, CheckStatus::pass);
  EXPECT_EQ(n.status, CheckStatus::warn);
  EXPECT_THAT(n.summary, HasSubstr("cuInit works all the same"));
}

TEST(PreflightFakes, StubLibcudaIs34AndNamed) {
  FakeMachine m("stub");
  m.healthy(1);
  std::filesystem::create_directories(m.root / "cuda/lib64/stubs");
  std::filesystem::create_symlink(testing::fake_driver_dir() + "/libcuda.so.1",
                                  m.root / "cuda/lib64/stubs/libcuda.so.1");
  m.set("FAKE_CUDA_INIT_RESULT", "34");
  PreflightPlan plan = m.plan(1);
  plan.libraries["cuda"] = (m.root / "cuda/lib64/stubs/libcuda.so.1").string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_FALSE(check(r, "cuda.load").facts.empty());
  bool stub_fact = false;
  for (const auto& [k, v] : check(r, "cuda.load").facts)
    stub_fact |= k == "stub" && v == "yes";
  EXPECT_TRUE(stub_fact);
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.cuda_error, 34);
  EXPECT_THAT(init.diagnosis, HasSubstr("stub"));
  EXPECT_THAT(init.diagnosis, HasSubstr("/stubs/libcuda.so.1"));
  EXPECT_THAT(init.remedy, HasSubstr("LD_LIBRARY_PATH"));
}

TEST(PreflightFakes, CompatLibrariesOnUnsupportedGpuAre804) {
  FakeMachine m("compat");
  m.healthy(1);
  std::filesystem::create_directories(m.root / "usr/local/cuda/compat");
  std::filesystem::create_symlink(testing::fake_driver_dir() + "/libcuda.so.1",
                                  m.root / "usr/local/cuda/compat/libcuda.so.1");
  m.set("FAKE_CUDA_INIT_RESULT", "804");
  PreflightPlan plan = m.plan(1);
  plan.libraries["cuda"] = (m.root / "usr/local/cuda/compat/libcuda.so.1").string();
  const PreflightReport r = run_preflight(plan);
  const CheckResult& init = check(r, "cuda.init");
  EXPECT_EQ(init.cuda_error, 804);
  EXPECT_THAT(init.diagnosis, HasSubstr("forward-compatibility directory"));
  EXPECT_THAT(init.remedy, HasSubstr("compat"));
}

TEST(PreflightFakes, VisibilityVariableExplainsFewerCudaDevices) {
  FakeMachine m("visible");
  m.healthy(8);
  m.set("FAKE_CUDA_DEVICE_COUNT", "2");
  PreflightPlan plan = m.plan(2);
  plan.environment["CUDA_VISIBLE_DEVICES"] = "4,5";
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "cuda.match").status, CheckStatus::pass);
  EXPECT_THAT(check(r, "cuda.match").summary, HasSubstr("as CUDA_VISIBLE_DEVICES asks"));
}

// Only the host findings that say the driver cannot be seen turn into warnings when cuInit
// works; a visibility variable that hides GPUs the plan needs stays a failure.
TEST(PreflightFakes, AVisibilityVariableThatHidesPlannedGpusStaysAFailure) {
  FakeMachine m("visible-short");
  m.healthy(8);
  m.set("FAKE_CUDA_DEVICE_COUNT", "2");
  PreflightPlan plan = m.plan(4);
  plan.environment["CUDA_VISIBLE_DEVICES"] = "0,1";
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "cuda.init").status, CheckStatus::pass);
  EXPECT_EQ(check(r, "host.visibility").status, CheckStatus::fail) << r.to_table();
  EXPECT_THAT(check(r, "host.visibility").summary, ::testing::Not(HasSubstr("cuInit works")));
}

// CUDA stops reading the list at its first invalid entry: when that leaves too few GPUs, the
// entry is the thing to fix, not the count.
TEST(PreflightFakes, AnInvalidVisibilityEntryIsNamedWhenItLeavesTooFewGpus) {
  FakeMachine m("visible-invalid");
  m.healthy(4);
  PreflightPlan plan = m.plan(2);
  plan.environment["CUDA_VISIBLE_DEVICES"] = "0,,1";
  const PreflightReport r = run_preflight(plan);
  const CheckResult& v = check(r, "host.visibility");
  EXPECT_EQ(v.status, CheckStatus::fail);
  EXPECT_THAT(v.summary, HasSubstr("allows 1 GPU(s), the plan needs 2: it stops at invalid "
                                   "entry \"(empty entry)\""));
  EXPECT_THAT(v.remedy, HasSubstr("remove the invalid entry"));
}

// A node name no driver creates (its number overflows an int) is reported, and the rest of
// the host layer still runs.
TEST(PreflightFakes, AnOddDeviceNodeNameDoesNotStopTheHostLayer) {
  FakeMachine m("odd-node");
  m.healthy(2);
  std::filesystem::create_symlink("/dev/null", m.root / "dev/nvidia99999999999");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(r.find("host.unexpected"), nullptr) << r.to_table();
  for (const char* id : {"host.device_nodes", "host.uvm", "host.visibility", "host.cuda_env"})
    EXPECT_NE(r.find(id), nullptr) << id << "\n" << r.to_table();
  EXPECT_THAT(check(r, "host.device_nodes").summary + check(r, "host.device_nodes").diagnosis,
              HasSubstr("/dev/nvidia99999999999 is not a GPU node the driver creates"))
      << r.to_table();
}

TEST(PreflightFakes, ARootThatIsNotThereIsRefused) {
  PreflightPlan plan;
  plan.root = "/nonexistent-specbench-root";
  const Status st = validate_plan(plan);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.message(), HasSubstr("--root /nonexistent-specbench-root is not a directory"));
  EXPECT_TRUE(run_preflight(plan).could_not_run());
}

TEST(PreflightFakes, DeviceVanishesBetweenLayers) {
  FakeMachine m("vanish");
  m.healthy(2);
  m.set("FAKE_CUDA_VANISH_ORDINAL", "1");
  PreflightPlan plan = m.plan(2);
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "driver.gpu1").status, CheckStatus::pass); // NVML saw it healthy first
  EXPECT_EQ(check(r, "compute.gpu0.context").status, CheckStatus::pass);
  const CheckResult& ctx = check(r, "compute.gpu1.context");
  EXPECT_EQ(ctx.status, CheckStatus::fail);
  EXPECT_THAT(ctx.diagnosis, HasSubstr("vanished between layers"));
  EXPECT_THAT(ctx.diagnosis, HasSubstr("NVML_ERROR_GPU_IS_LOST"));
  EXPECT_THAT(ctx.remedy, HasSubstr("Xid 79"));
  EXPECT_EQ(check(r, "interconnect.nccl").status, CheckStatus::skipped);
  EXPECT_EQ(r.layer(PreflightLayer::interconnect).blocked_by, "compute");
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, ALibraryPathThatIsNotUtf8IsRefusedByNameNotLost) {
  // A directory name is bytes, the request to the probe child is JSON text: the plain dump threw
  // (the whole preflight ended in an internal error), and a repaired name would be another
  // directory. The plan is refused, naming the entry and what to do.
  FakeMachine m("path-bytes");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  plan.library_path.insert(plan.library_path.begin(), (m.root / "lib\xff\xfe").string());
  PreflightReport r;
  ASSERT_NO_THROW(r = run_preflight(plan));
  ASSERT_TRUE(r.could_not_run());
  EXPECT_THAT(r.run_error.message(), HasSubstr("is not UTF-8 text"));
  EXPECT_THAT(r.run_error.message(), HasSubstr("lib\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_THAT(r.run_error.remedy(), HasSubstr("link to it"));
  EXPECT_NO_THROW((void)r.to_json()); // the report is still written
  plan.library_path.erase(plan.library_path.begin());
  plan.libraries = {{"cuda", (m.root / "libcuda\xff.so").string()}};
  EXPECT_THAT(run_preflight(plan).run_error.message(), HasSubstr("(cuda) is not UTF-8 text"));
}

TEST(PreflightFakes, HealthyTp2RunsEveryLayerAndVerifiesResults) {
  FakeMachine m("healthy");
  m.healthy(2);
  const PreflightReport r = run_preflight(m.plan(2));
  ASSERT_FALSE(r.could_not_run()) << r.run_error.to_string();
  for (const char* id : {"host.uvm", "driver.nvml", "driver.gpu0", "cuda.init", "cuda.count",
                         "cuda.match", "compute.gpu0.context", "compute.gpu0.alloc",
                         "compute.gpu0.memcpy", "compute.gpu0.gemm", "compute.gpu1.gemm",
                         "interconnect.peer_access", "interconnect.p2p_copy", "interconnect.nccl"})
    EXPECT_EQ(check(r, id).status, CheckStatus::pass) << id << ": " << check(r, id).summary;
  EXPECT_THAT(check(r, "interconnect.nccl").summary, HasSubstr("right sum"));
  if (build_info::cuda_compiled) {
    EXPECT_EQ(check(r, "compute.gpu0.kernel").status, CheckStatus::pass);
    EXPECT_EQ(exit_code(r), 0) << r.to_table();
  } else {
    EXPECT_EQ(check(r, "compute.gpu0.kernel").status, CheckStatus::warn);
    EXPECT_THAT(check(r, "compute.gpu0.kernel").remedy, HasSubstr("rebuild"));
  }
  EXPECT_EQ(r.planned_gpus, (std::vector<int>{0, 1}));
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].nvml_index, 0);
  EXPECT_EQ(r.gpus[0].cuda_ordinal, 0);
  EXPECT_TRUE(r.gpus[1].planned);
  EXPECT_GT(r.gpus[0].bandwidth_gbps, 0.0);
  EXPECT_EQ(r.gpus[0].pci_bus_id, "0000:01:00.0");
  for (const auto& l : r.layers)
    if (l.layer != PreflightLayer::model) {
      EXPECT_NE(l.status, CheckStatus::skipped) << to_string(l.layer);
    }
}

TEST(PreflightFakes, WrongDataIsCaught) {
  FakeMachine m("corrupt");
  m.healthy(1);
  m.set("FAKE_CUDA_CORRUPT_COPY", "1");
  m.set("FAKE_CUBLAS_WRONG", "1");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "compute.gpu0.memcpy").status, CheckStatus::fail);
  EXPECT_EQ(check(r, "compute.gpu0.gemm").status, CheckStatus::fail);
  if (build_info::cuda_compiled) {
    EXPECT_EQ(check(r, "compute.gpu0.kernel").status, CheckStatus::fail);
  }
  EXPECT_EQ(exit_code(r), 1);
  // Failures with no CUDA error code still say why and what to do.
  EXPECT_THAT(check(r, "compute.gpu0.memcpy").diagnosis, HasSubstr("comes back changed"));
  EXPECT_THAT(check(r, "compute.gpu0.memcpy").remedy, HasSubstr("ECC"));
  EXPECT_THAT(check(r, "compute.gpu0.gemm").diagnosis, HasSubstr("wrong matrix product"));
  ASSERT_NE(r.first_failure(), nullptr);
  EXPECT_FALSE(r.first_failure()->diagnosis.empty());
}

TEST(PreflightFakes, InterconnectFailuresSayWhyAndWhatToDo) {
  FakeMachine m("nccl-init");
  m.healthy(2);
  m.set("FAKE_NCCL_INIT_RESULT", "5");
  m.set("FAKE_CUDA_NO_PEER", "1");
  const PreflightReport r = run_preflight(m.plan(2));
  EXPECT_EQ(check(r, "interconnect.nccl").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "interconnect.nccl").diagnosis, HasSubstr("NCCL could not set up"));
  EXPECT_THAT(check(r, "interconnect.nccl").remedy, HasSubstr("NCCL_DEBUG=INFO"));
  EXPECT_EQ(check(r, "interconnect.peer_access").status, CheckStatus::warn);
  EXPECT_THAT(check(r, "interconnect.peer_access").remedy, HasSubstr("topo -m"));
}

// WSL2 or a sandboxed runtime: no /proc/driver/nvidia and no /dev/nvidia* nodes, yet NVML and
// cuInit work. The host layer is evidence, not a gate: its findings become warnings.
TEST(PreflightFakes, HostFindingsAreWarningsWhenCudaWorks) {
  FakeMachine m("wsl");
  m.healthy(1);
  std::filesystem::remove_all(m.root / "proc/driver/nvidia");
  for (const char* node : {"dev/nvidiactl", "dev/nvidia0"})
    std::filesystem::remove(m.root / node);
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "cuda.init").status, CheckStatus::pass);
  bool host_warned = false;
  for (const auto* c : r.checks_of(PreflightLayer::host)) {
    EXPECT_NE(c->status, CheckStatus::fail) << c->id << ": " << c->summary;
    host_warned |= c->status == CheckStatus::warn;
  }
  EXPECT_TRUE(host_warned) << r.to_table();
  if (build_info::cuda_compiled) {
    EXPECT_EQ(exit_code(r), 0) << r.to_table();
  }
}

TEST(PreflightFakes, NoKernelImageNamesCompiledArchitectures) {
  if (!build_info::cuda_compiled)
    GTEST_SKIP() << "built without CUDA: no kernel image at all";
  FakeMachine m("no-image");
  m.healthy(1);
  m.set("FAKE_CUDA_CC", "121");
  m.set("FAKE_CUDA_MODULE_RESULT", "209");
  const PreflightReport r = run_preflight(m.plan(1));
  const CheckResult& k = check(r, "compute.gpu0.kernel");
  EXPECT_EQ(k.status, CheckStatus::fail);
  EXPECT_EQ(k.cuda_error, 209);
  EXPECT_THAT(k.diagnosis, HasSubstr("compute capability 12.1"));
  EXPECT_THAT(k.diagnosis,
              HasSubstr(std::string("architectures ") + build_info::cuda_architectures));
  EXPECT_THAT(k.remedy, HasSubstr("121"));
}

TEST(PreflightFakes, TpGroupLargerThanVisibleGpus) {
  FakeMachine m("tp-too-big");
  m.healthy(1);
  const PreflightReport r = run_preflight(m.plan(2));
  const CheckResult& d = check(r, "cuda.devices");
  EXPECT_EQ(d.status, CheckStatus::fail);
  EXPECT_EQ(d.cuda_error, 101);
  EXPECT_THAT(d.summary, HasSubstr("TP group needs 2 GPU(s) (0,1), 1 visible"));
  EXPECT_EQ(check(r, "interconnect.peer_access").status, CheckStatus::skipped);
  EXPECT_THAT(check(r, "interconnect.peer_access").summary,
              HasSubstr("TP group needs 2 GPUs, 1 visible"));
  // The GPU that exists is still checked.
  EXPECT_EQ(check(r, "compute.gpu0.context").status, CheckStatus::pass);
  EXPECT_EQ(exit_code(r), 1);
}

TEST(PreflightFakes, SingleGpuSkipsInterconnect) {
  FakeMachine m("tp1");
  m.healthy(1);
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "interconnect.nccl").status, CheckStatus::skipped);
  EXPECT_THAT(check(r, "interconnect.nccl").summary, HasSubstr("TP group of 1 GPU"));
}

TEST(PreflightFakes, ExclusiveProcessComputeModeExplains46) {
  FakeMachine m("excl");
  m.healthy(1);
  m.set("FAKE_NVML_COMPUTE_MODE", "2");
  m.set("FAKE_CUDA_CTX_RESULT", "46");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "driver.gpu0").status, CheckStatus::fail);
  const CheckResult& ctx = check(r, "compute.gpu0.context");
  EXPECT_EQ(ctx.cuda_error, 46);
  EXPECT_THAT(ctx.diagnosis, HasSubstr("Prohibited"));
}

TEST(PreflightFakes, EmptyCudaVisibleDevicesHidesEverything) {
  FakeMachine m("cvd-empty");
  m.healthy(2);
  PreflightPlan plan = m.plan(1);
  plan.environment["CUDA_VISIBLE_DEVICES"] = "";
  m.set("FAKE_CUDA_INIT_RESULT", "100");
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "host.visibility").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "cuda.init").diagnosis, HasSubstr("CUDA_VISIBLE_DEVICES hides every GPU"));
}

TEST(PreflightFakes, MissingProbeExecutableCouldNotRun) {
  FakeMachine m("no-probe");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  plan.probe_path = (m.root / "missing-probe").string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_TRUE(r.could_not_run());
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_THAT(r.run_error.message(), HasSubstr("could not start the GPU probe"));
  // What ran before is kept.
  EXPECT_NE(r.find("driver.nvml"), nullptr);
}

// A probe that exits before its first line (a loader error, a probe of another build) tells
// nothing about the GPUs: the preflight could not run, and it says why, not "libcuda missing".
TEST(PreflightFakes, AProbeThatCannotStartCouldNotRun) {
  FakeMachine m("probe-false");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  plan.probe_path = "/bin/false";
  const PreflightReport r = run_preflight(plan);
  EXPECT_TRUE(r.could_not_run()) << r.to_table();
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_THAT(r.run_error.message(), HasSubstr("exited before it checked anything (exit code 1)"));
  EXPECT_EQ(r.find("cuda.load"), nullptr);
}

TEST(PreflightFakes, NoDeviceAfterCuInitFailsTheCount) {
  FakeMachine m("count-zero");
  m.healthy(1);
  m.set("FAKE_CUDA_DEVICE_COUNT", "0");
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_EQ(check(r, "cuda.count").status, CheckStatus::fail) << r.to_table();
  EXPECT_EQ(check(r, "cuda.count").cuda_error, 100);
  EXPECT_THAT(check(r, "cuda.count").summary, HasSubstr("reports 0 devices"));
  EXPECT_FALSE(check(r, "cuda.count").remedy.empty());
  EXPECT_EQ(r.layers[static_cast<size_t>(PreflightLayer::compute)].blocked_by, "cuda-driver");
}

TEST(PreflightFakes, ForkFallbackWithoutProbeExecutable) {
  FakeMachine m("fork");
  m.healthy(1);
  m.set("FAKE_CUDA_INIT_RESULT", "999");
  PreflightPlan plan = m.plan(1);
  plan.probe_path.clear();
  plan.environment["SPECBENCH_GPU_PROBE"] = "";
  // With no executable found next to the test binary, the library forks itself; either way the
  // answer must be the same.
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "cuda.init").cuda_error, 999);
}

TEST(PreflightFakes, JsonReportFollowsSchema) {
  FakeMachine m("json");
  m.driver_loaded("595.71.05", Uvm::missing_node);
  m.gpu_nodes(8);
  m.set("FAKE_GPU_COUNT", "8");
  m.set("FAKE_CUDA_INIT_RESULT", "999");
  const PreflightReport r = run_preflight(m.plan(1));
  const std::string text = r.to_json();
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema_version"], 1);
  // The documented order: the schema version first, and each check's facts as they were read.
  const auto in_order = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(in_order.begin().key(), "schema_version") << text.substr(0, 200);
  for (const auto& c : in_order["checks"]) {
    const auto& check = r.checks[static_cast<size_t>(&c - &in_order["checks"][0])];
    std::vector<std::string> keys;
    for (auto it = c["facts"].begin(); it != c["facts"].end(); ++it)
      keys.push_back(it.key());
    std::vector<std::string> read;
    for (const auto& [k, v] : check.facts)
      read.push_back(k);
    EXPECT_EQ(keys, read) << check.id;
  }
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["exit_code"], 1);
  // host.uvm fails first, but host findings are evidence: the headline is cuInit's failure.
  EXPECT_EQ(j["first_failure"]["id"], "cuda.init");
  EXPECT_EQ(j["first_failure"]["layer"], "cuda-driver");
  EXPECT_EQ(j["host"]["nvml_device_count"], 8);
  EXPECT_EQ(j["layers"].size(), 6u);
  EXPECT_EQ(j["layers"][2]["layer"], "cuda-driver");
  EXPECT_EQ(j["layers"][2]["status"], "fail");
  EXPECT_EQ(j["layers"][3]["blocked_by"], "cuda-driver");
  EXPECT_EQ(j["gpus"].size(), 8u);
  bool found = false;
  for (const auto& c : j["checks"])
    if (c["id"] == "cuda.init") {
      found = true;
      EXPECT_EQ(c["cuda_error"]["code"], 999);
      EXPECT_EQ(c["cuda_error"]["name"], "CUDA_ERROR_UNKNOWN");
      EXPECT_TRUE(c["diagnosis"].is_string());
      EXPECT_TRUE(c["remedy"].is_string());
      EXPECT_TRUE(c["elapsed_ms"].is_number());
    }
  EXPECT_TRUE(found);
}

// The CLI end to end, with the fakes put in front through LD_LIBRARY_PATH.
TEST(PreflightCli, SeedsIncidentExitsOneWithJson) {
  FakeMachine m("cli");
  m.driver_loaded("595.71.05", Uvm::missing_node);
  m.gpu_nodes(8);
  const auto res = testing::run_cli(
      {testing::cli_path().string(), "preflight", "--json", "--root", m.root.string()},
      {{"LD_LIBRARY_PATH", testing::fake_driver_dir()},
       {"FAKE_GPU_COUNT", "8"},
       {"FAKE_CUDA_INIT_RESULT", "999"},
       {"FAKE_STATE_DIR", (m.root / "state").string()}});
  ASSERT_EQ(res.exit_code, 1) << res.out;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["verdict"], "fail");
  bool init_failed = false;
  for (const auto& c : j["checks"])
    if (c["id"] == "cuda.init")
      init_failed = c["status"] == "fail" && c["cuda_error"]["code"] == 999;
  EXPECT_TRUE(init_failed) << res.out;
}

TEST(PreflightCli, HumanTableAndExitCodes) {
  FakeMachine m("cli-table");
  m.healthy(1);
  const std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", testing::fake_driver_dir()},
                                                  {"FAKE_GPU_COUNT", "1"},
                                                  {"FAKE_STATE_DIR", (m.root / "state").string()}};
  auto res = testing::run_cli(
      {testing::cli_path().string(), "preflight", "--root", m.root.string(), "--alloc-mib", "2"},
      env);
  EXPECT_EQ(res.exit_code, 0) << res.out; // without CUDA compiled in, the kernel check only warns
  EXPECT_THAT(res.out, HasSubstr("cuda.init"));
  EXPECT_THAT(res.out, HasSubstr("verdict:"));
  EXPECT_EQ(res.out.find("\033["), std::string::npos) << "no colour when stdout is a pipe";
  res = testing::run_cli({testing::cli_path().string(), "preflight", "--gpus", "0,0"}, env);
  EXPECT_EQ(res.exit_code, 2);
  res = testing::run_cli({testing::cli_path().string(), "preflight", "--gpus", "x"}, env);
  EXPECT_EQ(res.exit_code, 2);
  for (const char* option : {"--model", "--draft-model", "--gpus", "--root"}) {
    res = testing::run_cli({testing::cli_path().string(), "preflight", "--json", option, ""}, env);
    EXPECT_EQ(res.exit_code, 2) << option;
    EXPECT_NE(res.out.find(std::string(option) + ": the value is empty"), std::string::npos)
        << res.out;
  }
  // An argument the parser itself refuses (not a number) still answers --json with the
  // could-not-run fields: verdict, exit_code and an error with a remedy.
  res = testing::run_cli({testing::cli_path().string(), "preflight", "--json", "--tp", "abc"}, env);
  EXPECT_EQ(res.exit_code, 2);
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["verdict"], "could-not-run");
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("--tp"), std::string::npos);
  EXPECT_NE(j["error"]["remedy"].get<std::string>().find("specbench preflight --help"),
            std::string::npos);
}

// --draft-model checks the drafter in the model layer, beside the target or alone (a hub model).
TEST(PreflightCli, DraftModelIsCheckedInTheModelLayer) {
  FakeMachine m("cli-draft");
  m.healthy(1);
  const std::string gone = (m.root / "no-such-drafter").string();
  const auto res = testing::run_cli({testing::cli_path().string(), "preflight", "--json", "--root",
                                     m.root.string(), "--alloc-mib", "2", "--draft-model", gone},
                                    {{"LD_LIBRARY_PATH", testing::fake_driver_dir()},
                                     {"FAKE_GPU_COUNT", "1"},
                                     {"FAKE_STATE_DIR", (m.root / "state").string()}});
  ASSERT_EQ(res.exit_code, 1) << res.out;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["plan"]["draft_model_path"], gone);
  EXPECT_EQ(j["first_failure"]["id"], "model.draft_dir") << res.out;
  EXPECT_THAT(j["first_failure"]["summary"].get<std::string>(),
              HasSubstr("drafter directory " + gone + " does not exist"));
}

// The real machine: where there is no NVIDIA driver (the CI box), the answer is a clean
// "no driver" with exit code 1, fast.
TEST(PreflightCli, RealMachineWithoutDriverSaysSo) {
  if (std::filesystem::exists("/dev/nvidiactl") || std::filesystem::exists("/proc/driver/nvidia"))
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  const auto res = testing::run_cli({testing::cli_path().string(), "preflight", "--json"}, {});
  ASSERT_EQ(res.exit_code, 1) << res.out;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["first_failure"]["id"], "driver.nvml");
  bool said = false;
  for (const auto& c : j["checks"])
    if (c["id"] == "cuda.load" && c["diagnosis"].is_string())
      said = c["diagnosis"].get<std::string>().find("no NVIDIA driver on this machine") !=
             std::string::npos;
  EXPECT_TRUE(said) << res.out;
}

} // namespace
} // namespace specbench
