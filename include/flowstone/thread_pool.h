// A fixed-size pool of worker threads.
#pragma once

#include <atomic>
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
//
// In a kSpinThenBlock pool a worker that runs out of work spins for up to SpinBeforeSleepMicros()
// before it blocks (one worker per pool at a time), so the next task of a step starts on a running
// thread: waking a blocked one costs microseconds, and on some kernels (packed virtual CPUs) puts
// it on the waking thread's core, where the two then take turns.
class ThreadPool {
 public:
  // Whether idle workers spin before they block (see SpinBeforeSleepMicros). The intra-op pool's
  // do: its tasks are the shards of one kernel, handed out back to back within a step. The
  // inter-op pool's do not: there a spinning thread would take a core from the intra-op work its
  // own nodes start.
  enum class Idle { kBlock, kSpinThenBlock };

  ThreadPool(std::string name, int num_threads, Idle idle = Idle::kBlock);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void Schedule(std::function<void()> fn);

  // How long an idle worker, and a caller waiting for its ParallelFor shards, spin before they
  // block: kDefaultSpinMicros, or FLOWSTONE_SPIN_US (0 turns spinning off, for machines whose
  // cores are shared with other busy programs). docs/architecture/speed.md ("Spinning before
  // sleeping") has the measurements.
  static constexpr int64_t kDefaultSpinMicros = 100;
  static int64_t SpinBeforeSleepMicros();

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
  // Spins until a task is queued or SpinBeforeSleepMicros() pass; false at once when another worker
  // is spinning already. True when a task is queued.
  bool SpinForWork();
  void StartThreadsLocked();
  static void BeforeFork();
  static void AfterForkInParent();
  static void AfterForkInChild();

  std::string name_;
  const int num_threads_;
  const Idle idle_;
  bool threads_lost_ = false;  // forked: threads_ ran in the parent
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int64_t> queued_{0};     // queue_.size(), for the spinning worker to poll
  std::atomic<bool> spinning_{false};  // a worker is in SpinForWork
  int sleeping_ = 0;                   // workers blocked on cv_; guarded by mu_
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

// Number of cores this process may run on.
int NumSchedulableCpus();

}  // namespace flowstone
