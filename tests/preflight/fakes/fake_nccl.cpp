// A fake libnccl.so.2 for preflight tests: an all-reduce (sum of floats) over the fake driver's
// host-memory "device" buffers, performed at ncclGroupEnd like NCCL's grouped launches.
#include "fake_common.hpp"

#include <cstring>
#include <vector>

extern "C" {
struct ncclComm {
  int rank, nranks;
};
struct Pending {
  const float* send;
  float* recv;
  size_t count;
};
static std::vector<Pending> g_pending;
static ncclComm g_comms[64];

int ncclGetVersion(int* v) {
  *v = 22700;
  return 0;
}
const char* ncclGetErrorString(int) {
  return "fake NCCL error";
}
int ncclCommInitAll(ncclComm** comms, int n, const int*) {
  if (fake::env_int("FAKE_NCCL_INIT_RESULT", 0))
    return fake::env_int("FAKE_NCCL_INIT_RESULT", 0);
  for (int i = 0; i < n; ++i) {
    g_comms[i] = {i, n};
    comms[i] = &g_comms[i];
  }
  return 0;
}
int ncclCommDestroy(ncclComm*) {
  return 0;
}
int ncclGroupStart() {
  g_pending.clear();
  return 0;
}
int ncclAllReduce(const void* s, void* r, size_t count, int dtype, int op, ncclComm*, void*) {
  if (dtype != 7 || op != 0)
    return 4; // ncclInvalidArgument
  g_pending.push_back({static_cast<const float*>(s), static_cast<float*>(r), count});
  return 0;
}
int ncclGroupEnd() {
  if (g_pending.empty())
    return 0;
  const size_t count = g_pending[0].count;
  std::vector<float> sum(count, 0.f);
  for (const auto& p : g_pending)
    for (size_t i = 0; i < count; ++i)
      sum[i] += p.send[i];
  for (const auto& p : g_pending)
    std::memcpy(p.recv, sum.data(), count * sizeof(float));
  g_pending.clear();
  return 0;
}
} // extern "C"
