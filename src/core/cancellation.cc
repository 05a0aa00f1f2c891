#include "flowstone/cancellation.h"

#include <pthread.h>

#include <condition_variable>
#include <map>
#include <new>
#include <thread>

#include "core/thread_signals.h"

namespace flowstone {

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "NotifyInterrupt must be async-signal-safe");

std::atomic<uint64_t> CancellationToken::interrupt_count_{0};

// One thread for the whole process cancels tokens whose deadline passed, so that runs with a
// deadline never read the clock between nodes. It starts on the first deadline and, after a fork,
// again in the child on the first deadline there (threads do not survive a fork).
class DeadlineTimer {
 public:
  static DeadlineTimer& Get() {
    // Never destroyed: the thread may still wait when static destructors run.
    static DeadlineTimer* timer = new DeadlineTimer;
    return *timer;
  }

  void Add(CancellationToken* token, CancellationToken::Clock::time_point deadline,
           const Status& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.emplace(deadline, Entry{token, reason});
    if (!running_) {
      running_ = true;
      std::thread([this] { Loop(); }).detach();
    }
    cv_.notify_one();
  }

  void Remove(CancellationToken* token) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.token == token) {
        entries_.erase(it);
        return;
      }
    }
  }

 private:
  struct Entry {
    CancellationToken* token;
    Status reason;
  };

  DeadlineTimer() {
    pthread_atfork([] { Get().mu_.lock(); }, [] { Get().mu_.unlock(); },
                   [] { Get().AfterForkInChild(); });
  }

  // The timer thread and the runs whose tokens it held exist only in the parent.
  void AfterForkInChild() {
    entries_.clear();
    running_ = false;
    new (&cv_) std::condition_variable;  // it counts the parent's waiting timer thread
    mu_.unlock();
  }

  void Loop() {
    BlockAsynchronousSignals();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (entries_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto first = entries_.begin();
      // A copy: wait_until reads the deadline again after waking, and while it waits (the lock
      // released) the token's destructor may erase the entry holding it.
      const CancellationToken::Clock::time_point deadline = first->first;
      if (CancellationToken::Clock::now() < deadline) {
        cv_.wait_until(lock, deadline);
        continue;
      }
      // Cancelled under the lock: Remove (from the token's destructor) waits for it.
      first->second.token->Cancel(first->second.reason);
      entries_.erase(first);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<CancellationToken::Clock::time_point, Entry> entries_;
  bool running_ = false;
};

CancellationToken::~CancellationToken() {
  if (has_deadline_) DeadlineTimer::Get().Remove(this);
}

void CancellationToken::Cancel(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return;
  reason_ = reason;
  cancelled_.store(true, std::memory_order_release);
}

void CancellationToken::WatchInterrupts() {
  interrupts_at_watch_ = InterruptCount();
  watches_interrupts_ = true;
}

void CancellationToken::CancelAt(Clock::time_point deadline, const Status& reason) {
  has_deadline_ = true;
  DeadlineTimer::Get().Add(this, deadline, reason);
}

Status CancellationToken::status() const {
  if (cancelled_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_;
  }
  if (watches_interrupts_ && InterruptCount() != interrupts_at_watch_) return InterruptedError();
  return Status::OK();
}

void NotifyInterrupt() {
  CancellationToken::interrupt_count_.fetch_add(1, std::memory_order_acq_rel);
}

Status InterruptedError() {
  Status s = errors::Cancelled("Run call was interrupted (SIGINT)");
  s.SetPayload("interrupted", "SIGINT");
  return s;
}

}  // namespace flowstone
