// Process-wide runtime state: thread pools (sized by the first session, as in TensorFlow),
// and logical CPU devices. GPU discovery keeps its own state (gpu_discovery.h).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "flowstone/thread_pool.h"

namespace flowstone {

class ProcessState {
 public:
  static ProcessState& Get();

  // Creates the pools on first use; later calls keep the existing pools.
  void ConfigureThreads(int inter_op_threads, int intra_op_threads);
  ThreadPool* inter_op_pool();
  ThreadPool* intra_op_pool();

  // How many fork() calls this process descends through (0 in the original process). State
  // that counts work done by threads compares it to forget the parent's threads in a child.
  static uint64_t ForkGeneration();

  // Logical CPU devices set with tf.config.set_logical_device_configuration (default 1).
  int num_logical_cpus() const;
  void set_num_logical_cpus(int n);

 private:
  mutable std::mutex mu_;
  std::unique_ptr<ThreadPool> inter_op_;
  std::unique_ptr<ThreadPool> intra_op_;
  int num_logical_cpus_ = 1;
};

}  // namespace flowstone
