// A fake libcublas for preflight tests: SGEMM computed on the CPU over the fake driver's
// "device" memory (which is host memory). FAKE_CUBLAS_WRONG=1 makes it add 1 to one element.
#include "fake_common.hpp"

extern "C" {
struct cublasContext {
  int unused;
};
static cublasContext g_handle;
int cublasCreate_v2(cublasContext** h) {
  *h = &g_handle;
  return 0;
}
int cublasDestroy_v2(cublasContext*) {
  return 0;
}
int cublasSgemm_v2(cublasContext*, int ta, int tb, int m, int n, int k, const float* alpha,
                   const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                   int ldc) {
  if (ta != 0 || tb != 0)
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED
  for (int col = 0; col < n; ++col)
    for (int row = 0; row < m; ++row) {
      float acc = 0.f;
      for (int p = 0; p < k; ++p)
        acc += a[p * lda + row] * b[col * ldb + p];
      c[col * ldc + row] = *alpha * acc + *beta * c[col * ldc + row];
    }
  if (fake::env_int("FAKE_CUBLAS_WRONG", 0))
    c[0] += 1.f;
  return 0;
}
} // extern "C"
