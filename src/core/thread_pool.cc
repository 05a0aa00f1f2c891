#include "flowstone/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <vector>

#include "core/thread_signals.h"
#include "flowstone/inline_parallel_for.h"

namespace flowstone {
namespace {
thread_local const ThreadPool* current_pool = nullptr;
thread_local bool inline_parallel_for = false;  // see InlineParallelForScope

// The live pools, for the fork handlers.
std::mutex& PoolsMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::vector<ThreadPool*>& Pools() {
  static auto* pools = new std::vector<ThreadPool*>;
  return *pools;
}
}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads)
    : name_(std::move(name)), num_threads_(std::max(num_threads, 0)) {
  static const bool fork_handlers_registered = [] {
    return pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild) == 0;
  }();
  (void)fork_handlers_registered;
  std::lock_guard<std::mutex> pools_lock(PoolsMutex());
  Pools().push_back(this);
  std::lock_guard<std::mutex> lock(mu_);
  StartThreadsLocked();
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> pools_lock(PoolsMutex());
    auto& pools = Pools();
    pools.erase(std::find(pools.begin(), pools.end(), this));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::StartThreadsLocked() {
  threads_.reserve(num_threads_);
  for (int i = 0; i < num_threads_; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

// Fork: every pool's mutex is held across fork() so the child gets consistent queues.
void ThreadPool::BeforeFork() {
  PoolsMutex().lock();
  for (ThreadPool* pool : Pools()) pool->mu_.lock();
}

void ThreadPool::AfterForkInParent() {
  for (ThreadPool* pool : Pools()) pool->mu_.unlock();
  PoolsMutex().unlock();
}

void ThreadPool::AfterForkInChild() {
  for (ThreadPool* pool : Pools()) {
    // The std::thread objects name threads of the parent: never join or destroy them.
    new std::vector<std::thread>(std::move(pool->threads_));
    pool->threads_.clear();
    pool->queue_.clear();
    // The condition variable still counts the parent's waiting workers, and would wait for them
    // to wake before signalling anyone: start it afresh.
    new (&pool->cv_) std::condition_variable;
    pool->threads_lost_ = pool->num_threads_ > 0;
    pool->mu_.unlock();
  }
  PoolsMutex().unlock();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  if (num_threads_ == 0) {
    fn();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (threads_lost_) {
      threads_lost_ = false;
      StartThreadsLocked();
    }
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ThreadPool::WorkerLoop() {
  BlockAsynchronousSignals();
  EnsureAlternateSignalStack();
  current_pool = this;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

bool ThreadPool::InWorkerThread() const { return current_pool == this; }

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Below ~50k cycles of work, waking threads costs more than it saves.
  constexpr int64_t kMinCostPerShard = 50000;
  // Up to this many shards per thread (the caller counts): whoever is running takes the next
  // shard, so a thread that the OS preempts, or a shard that runs longer than the others, holds
  // up the end by one small shard rather than by a fixed share of the work. With one shard per
  // thread, the tutorial CNN's first convolution (13 chunks of the batch) split 7 + 6.
  constexpr int64_t kShardsPerThread = 4;
  int64_t total_cost = n * std::max<int64_t>(cost_per_unit, 1);
  int64_t max_shards =
      std::min<int64_t>((num_threads() + 1) * kShardsPerThread, total_cost / kMinCostPerShard);
  if (max_shards <= 1 || InWorkerThread() || inline_parallel_for) {
    fn(0, n);
    return;
  }
  int64_t shards = std::min<int64_t>(max_shards, n);
  int64_t block = (n + shards - 1) / shards;
  shards = (n + block - 1) / block;
  // The caller and up to num_threads() workers take shards in order from a shared counter until
  // none is left. On a loaded machine a sleeping worker may wait milliseconds for a core; the
  // caller then runs its shards instead of waiting for it. The shards are the same whoever runs
  // them, so results do not change. The state lives on the heap: a worker that wakes after the
  // caller returned finds no shard left and touches nothing else.
  struct Shared {
    explicit Shared(int64_t shards) : unfinished(shards) {}
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> unfinished;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>(shards);
  auto drain = [&fn, block, n, shards](Shared& st) {
    for (;;) {
      const int64_t s = st.next.fetch_add(1, std::memory_order_relaxed);
      if (s >= shards) return;
      fn(s * block, std::min(n, (s + 1) * block));
      if (st.unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(st.mu);
        st.cv.notify_all();
      }
    }
  };
  const int64_t helpers = std::min<int64_t>(num_threads(), shards - 1);
  for (int64_t h = 0; h < helpers; ++h) {
    Schedule([shared, drain] { drain(*shared); });
  }
  drain(*shared);
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->unfinished.load(std::memory_order_acquire) == 0; });
}

InlineParallelForScope::InlineParallelForScope() : previous_(inline_parallel_for) {
  inline_parallel_for = true;
}

InlineParallelForScope::~InlineParallelForScope() { inline_parallel_for = previous_; }

int NumSchedulableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace flowstone
