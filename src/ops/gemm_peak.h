// The machine's float32 matrix-multiply peak as oneDNN reaches it: one large sgemm, timed. The
// benchmarks (bench/bench_training.py) state their products' GFLOP/s against it.
#pragma once

#include <cstdint>

#include "flowstone/status.h"

namespace flowstone {

struct SgemmRate {
  double seconds = 0;  // wall time of the fastest call
  // The calling thread's CPU time over that call: with one thread, the call's CPU time, which a
  // loaded machine inflates far less than the wall time. (The process's CPU clock would not do
  // for a team: Linux adds a running thread's time to it only at its scheduler ticks, so a
  // millisecond call on two threads read as one thread's time.)
  double cpu_seconds = 0;
  double gflops = 0;  // 2 n^3 floating-point operations per call / seconds / 1e9
};

// Times `repeats` calls of oneDNN's sgemm C = A B on n x n matrices (after one untimed call that
// JIT-compiles the kernel and faults in the pages), on an OpenMP team of `threads` threads
// (oneDNN's own threading, unlike the kernels', which call it on one thread each: a peak is what
// the library reaches on the whole machine), and returns the fastest call. The fastest rather
// than the median: on a shared machine the slow calls measure the other load, not the CPU.
// n below 1 or above 16384, threads below 1 or repeats below 1 are InvalidArgument; running out
// of memory for the matrices is ResourceExhausted.
Status MeasureSgemmPeak(int64_t n, int threads, int repeats, SgemmRate* rate);

}  // namespace flowstone
