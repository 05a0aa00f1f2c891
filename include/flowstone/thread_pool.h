// A fixed-size pool of worker threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace flowstone {

// Pool threads block asynchronous signals (SIGINT and the like go to the threads that called into
// Flowstone) and have an alternate signal stack. After fork(), the child's pools start new threads
// on first use, dropping the work queued in the parent (its threads do not exist in the child).
class ThreadPool {
 public:
  ThreadPool(std::string name, int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void Schedule(std::function<void()> fn);

  // Below this many cycles of work per shard, waking threads costs more than it saves.
  static constexpr int64_t kMinCostPerShard = 50000;
  // Whether n units of cost_per_unit cycles each are worth two shards or more.
  static bool WorthSplitting(int64_t n, int64_t cost_per_unit) {
    int64_t total_cost;
    return __builtin_mul_overflow(n, cost_per_unit < 1 ? 1 : cost_per_unit, &total_cost) ||
           total_cost >= 2 * kMinCostPerShard;
  }

  // Splits [0, n) into blocks and runs fn(begin, end) on them, the caller taking part; returns
  // when all are done. `cost_per_unit` (rough cycles per element) decides whether splitting pays.
  void ParallelFor(int64_t n, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // True on one of this pool's threads (nested ParallelFor then runs inline).
  bool InWorkerThread() const;

 private:
  void WorkerLoop();
  void StartThreadsLocked();
  static void BeforeFork();
  static void AfterForkInParent();
  static void AfterForkInChild();

  std::string name_;
  const int num_threads_;
  bool threads_lost_ = false;  // forked: threads_ ran in the parent
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Number of cores this process may run on.
int NumSchedulableCpus();

}  // namespace flowstone
