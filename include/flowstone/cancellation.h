// Cancellation of a run in progress.
//
// Each run has one CancellationToken. Three things cancel it: Session::Close() from another
// thread, a deadline (RunOptions::timeout_in_ms), and a process interrupt (NotifyInterrupt(),
// which the Python bindings call from their SIGINT handler) when the run watches interrupts. The
// executor checks the token between nodes; kernels that run for a long time check it between
// units of work (GEMM tiles, batch chunks, loop iterations) through
// KernelContext::CheckCancelled(), and return its Status when it fails:
//
//   for (int64_t i = 0; i < iterations; ++i) {
//     FS_RETURN_IF_ERROR(ctx.CheckCancelled());
//     ... one iteration ...
//   }
//
// A check is one or two relaxed atomic loads, cheap enough for every unit of work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "flowstone/status.h"

namespace flowstone {

class CancellationToken {
 public:
  using Clock = std::chrono::steady_clock;

  CancellationToken() = default;
  // Removes the token from the deadline timer, so it is safe to destroy at any time.
  ~CancellationToken();
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // Cancels with `reason` (a non-OK Status). The first reason wins; later calls do nothing.
  // Thread-safe; not async-signal-safe (use NotifyInterrupt from a signal handler).
  void Cancel(const Status& reason);

  // From now on, an interrupt (NotifyInterrupt) cancels this token with InterruptedError().
  void WatchInterrupts();

  // Cancels the token with `reason` at `deadline`, from a timer thread shared by the process.
  // Call it at most once per token, from the thread that owns the token.
  void CancelAt(Clock::time_point deadline, const Status& reason);

  // True once the token is cancelled (or, when it watches interrupts, once one arrived).
  bool IsCancelled() const {
    return cancelled_.load(std::memory_order_acquire) ||
           (watches_interrupts_ && InterruptCount() != interrupts_at_watch_);
  }

  // OK while the token is not cancelled, else the reason it was cancelled for.
  Status status() const;

  // The number of NotifyInterrupt calls so far in this process.
  static uint64_t InterruptCount() { return interrupt_count_.load(std::memory_order_acquire); }

 private:
  friend void NotifyInterrupt();
  friend class DeadlineTimer;

  static std::atomic<uint64_t> interrupt_count_;

  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  Status reason_;
  bool watches_interrupts_ = false;
  uint64_t interrupts_at_watch_ = 0;
  bool has_deadline_ = false;  // CancelAt was called (set and read by the token's owner only)
};

// Records an interrupt: every token that watches interrupts becomes cancelled. Async-signal-safe
// (one lock-free atomic increment), so a signal handler may call it.
void NotifyInterrupt();

// The status of a run stopped by an interrupt: Cancelled, with the payload
// "interrupted" = "SIGINT" so that the Python bindings let Python's SIGINT handler raise.
Status InterruptedError();

}  // namespace flowstone
