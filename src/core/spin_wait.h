// Bounded spinning before a thread blocks (see ThreadPool::SpinBeforeSleepMicros()).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace flowstone {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() with the CPU's pause hint between polls until it is true or `micros` pass; returns
// its last value. The clock is read every 64 polls: a pause is tens of cycles, a clock read more.
template <typename Done>
bool SpinUntil(Done done, int64_t micros) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace flowstone
