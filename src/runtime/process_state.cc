#include "process_state.h"

#include <pthread.h>

#include <atomic>

namespace flowstone {

namespace {
std::atomic<uint64_t> fork_generation{0};
}  // namespace

ProcessState& ProcessState::Get() {
  // Never destroyed: worker threads must not be joined during static destruction.
  static ProcessState* state = [] {
    pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1); });
    return new ProcessState;
  }();
  return *state;
}

uint64_t ProcessState::ForkGeneration() { return fork_generation.load(std::memory_order_relaxed); }

void ProcessState::ConfigureThreads(int inter_op_threads, int intra_op_threads) {
  std::lock_guard<std::mutex> lock(mu_);
  int cores = NumSchedulableCpus();
  if (!inter_op_) {
    int n = inter_op_threads > 0 ? inter_op_threads : cores;
    inter_op_ = std::make_unique<ThreadPool>("inter_op", n);
  }
  if (!intra_op_) {
    // The calling thread takes part in ParallelFor, so the pool has one thread fewer.
    int n = (intra_op_threads > 0 ? intra_op_threads : cores) - 1;
    intra_op_ =
        std::make_unique<ThreadPool>("intra_op", n > 0 ? n : 0, ThreadPool::Idle::kSpinThenBlock);
  }
}

ThreadPool* ProcessState::inter_op_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  return inter_op_.get();
}

ThreadPool* ProcessState::intra_op_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  return intra_op_.get();
}

int ProcessState::num_logical_cpus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_logical_cpus_;
}

void ProcessState::set_num_logical_cpus(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  num_logical_cpus_ = n > 0 ? n : 1;
}

}  // namespace flowstone
