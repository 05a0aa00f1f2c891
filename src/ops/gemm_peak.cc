// Peak float32 GEMM throughput: see gemm_peak.h.
#include "ops/gemm_peak.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <new>

namespace flowstone {
namespace {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Sets the OpenMP team size for oneDNN's calls on this thread, and restores it.
class OpenMpThreads {
 public:
  explicit OpenMpThreads(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OpenMpThreads() { omp_set_num_threads(saved_); }
  OpenMpThreads(const OpenMpThreads&) = delete;
  OpenMpThreads& operator=(const OpenMpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace

Status MeasureSgemmPeak(int64_t n, int threads, int repeats, SgemmRate* rate) {
  constexpr int64_t kMaxN = 16384;
  if (n < 1 || n > kMaxN || threads < 1 || repeats < 1) {
    return errors::InvalidArgument("sgemm peak: need 1 <= n <= ", kMaxN,
                                   ", threads >= 1 and repeats >= 1, got n=", n,
                                   ", threads=", threads, ", repeats=", repeats);
  }
  const size_t elements = static_cast<size_t>(n * n);
  std::unique_ptr<float[]> a(new (std::nothrow) float[elements]);
  std::unique_ptr<float[]> b(new (std::nothrow) float[elements]);
  std::unique_ptr<float[]> c(new (std::nothrow) float[elements]);
  if (!a || !b || !c) {
    return errors::ResourceExhausted("sgemm peak: out of memory for three ", n, " x ", n,
                                     " float32 matrices; pass a smaller n");
  }
  // Values of one magnitude, so that no denormal slows the products down.
  for (size_t i = 0; i < elements; ++i) {
    a[i] = 1.0f + static_cast<float>(i % 7) * 0.125f;
    b[i] = 1.0f - static_cast<float>(i % 5) * 0.125f;
  }
  OpenMpThreads team(threads);
  auto call = [&] {
    return dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.get(), n, b.get(), n, 0.0f, c.get(), n);
  };
  if (dnnl_status_t status = call(); status != dnnl_success) {
    return errors::Internal("sgemm peak: oneDNN's sgemm failed with status ",
                            static_cast<int>(status), " for n=", n);
  }
  *rate = SgemmRate{};
  for (int r = 0; r < repeats; ++r) {
    const double cpu_start = ThreadCpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    call();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 0 || seconds < rate->seconds) {
      rate->seconds = seconds;
      rate->cpu_seconds = ThreadCpuSeconds() - cpu_start;
    }
  }
  rate->gflops = 2.0 * static_cast<double>(n) * n * n / rate->seconds / 1e9;
  return Status::OK();
}

}  // namespace flowstone
