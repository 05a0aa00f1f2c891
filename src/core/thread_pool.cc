#include "flowstone/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "core/spin_wait.h"
#include "core/thread_signals.h"
#include "flowstone/inline_parallel_for.h"
#include "flowstone/logging.h"

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

ThreadPool::ThreadPool(std::string name, int num_threads, Idle idle)
    : name_(std::move(name)), num_threads_(std::max(num_threads, 0)), idle_(idle) {
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
    stopping_.store(true, std::memory_order_release);
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
    pool->queued_.store(0);
    pool->spinning_.store(false);
    pool->sleeping_ = 0;
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
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (threads_lost_) {
      threads_lost_ = false;
      StartThreadsLocked();
    }
    queue_.push_back(std::move(fn));
    queued_.fetch_add(1, std::memory_order_release);
    // A spinning worker takes one task without a wake-up; a worker that stops spinning looks at
    // the queue under mu_ before it blocks, so no task is left behind.
    const size_t spinners = spinning_.load(std::memory_order_acquire) ? 1 : 0;
    wake = sleeping_ > 0 && queue_.size() > spinners;
  }
  if (wake) cv_.notify_one();
}

int64_t ThreadPool::SpinBeforeSleepMicros() {
  static const int64_t micros = [] {
    const char* value = std::getenv("FLOWSTONE_SPIN_US");
    if (value == nullptr || *value == '\0') return kDefaultSpinMicros;
    char* end = nullptr;
    const long long parsed = std::strtoll(value, &end, 10);
    if (*end != '\0' || parsed < 0) {
      LogWarning("flowstone/threads", "Ignoring FLOWSTONE_SPIN_US=", value,
                 ": it takes a whole number of microseconds, 0 or more; spinning ",
                 kDefaultSpinMicros, " us.");
      return kDefaultSpinMicros;
    }
    return static_cast<int64_t>(std::min<long long>(parsed, 1000000));
  }();
  return micros;
}

bool ThreadPool::SpinForWork() {
  if (idle_ == Idle::kBlock || SpinBeforeSleepMicros() == 0) return false;
  bool expected = false;
  if (!spinning_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
  const bool found = SpinUntil(
      [this] {
        return queued_.load(std::memory_order_acquire) > 0 ||
               stopping_.load(std::memory_order_acquire);
      },
      SpinBeforeSleepMicros());
  spinning_.store(false, std::memory_order_release);
  return found;
}

void ThreadPool::WorkerLoop() {
  BlockAsynchronousSignals();
  EnsureAlternateSignalStack();
  current_pool = this;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (queue_.empty() && !stopping_.load(std::memory_order_relaxed)) {
        lock.unlock();
        const bool found = SpinForWork();
        lock.lock();
        if (found || !queue_.empty() || stopping_.load(std::memory_order_relaxed)) continue;
        ++sleeping_;
        cv_.wait(lock);
        --sleeping_;
      }
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    fn();
  }
}

bool ThreadPool::InWorkerThread() const { return current_pool == this; }

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (!WorthSplitting(n, cost_per_unit) || num_threads() == 0 || InWorkerThread() ||
      inline_parallel_for) {
    fn(0, n);
    return;
  }
  int64_t total_cost;
  if (__builtin_mul_overflow(n, std::max<int64_t>(cost_per_unit, 1), &total_cost)) {
    total_cost = std::numeric_limits<int64_t>::max();
  }
  int64_t max_shards = std::min<int64_t>(num_threads() + 1, total_cost / kMinCostPerShard);
  const int64_t shards = std::min<int64_t>(max_shards, n);
  // The range is cut into grains, about kGrainsPerShard per participating thread, which the
  // caller and the workers claim one at a time until none is left. A thread that loses its core
  // mid-run (a loaded machine) then holds back one grain, not a third of the work, and uneven
  // grains (the edge bands of a convolution) even out. The grains do not depend on which thread
  // runs them, so results do not change; kernels already make each unit's result independent of
  // how [0, n) is split, since the number of shards follows the number of threads. The state
  // lives on the heap: a worker that wakes after the caller returned finds no grain left and
  // touches nothing else.
  constexpr int64_t kGrainsPerShard = 4;
  const int64_t grain = std::max<int64_t>(1, n / (shards * kGrainsPerShard));
  const int64_t grains = (n + grain - 1) / grain;
  struct Shared {
    explicit Shared(int64_t grains) : unfinished(grains) {}
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> unfinished;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>(grains);
  auto run = [&fn, grain, grains, n](Shared& st) {
    for (;;) {
      const int64_t g = st.next.fetch_add(1, std::memory_order_acq_rel);
      if (g >= grains) return;
      fn(g * grain, std::min(n, (g + 1) * grain));
      if (st.unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(st.mu);
        st.cv.notify_all();
      }
    }
  };
  for (int64_t s = 1; s < shards; ++s) {
    Schedule([shared, run] { run(*shared); });
  }
  run(*shared);
  // The last shards usually finish within microseconds: spinning keeps this thread on its core
  // rather than waking it onto another one.
  if (SpinUntil([&] { return shared->unfinished.load(std::memory_order_acquire) == 0; },
                SpinBeforeSleepMicros())) {
    return;
  }
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
