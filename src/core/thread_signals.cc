#include "core/thread_signals.h"

#include <signal.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>

namespace flowstone {
namespace {

// Large enough for a signal frame with AVX-512 (or AMX) state and a small handler.
constexpr size_t kAlternateStackBytes = 256 * 1024;

class AlternateSignalStack {
 public:
  AlternateSignalStack() {
    stack_t current;
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;
    memory_.reset(static_cast<char*>(std::malloc(kAlternateStackBytes)));
    if (memory_ == nullptr) return;
    stack_t mine{};
    mine.ss_sp = memory_.get();
    mine.ss_size = kAlternateStackBytes;
    if (sigaltstack(&mine, nullptr) != 0) memory_.reset();
  }
  ~AlternateSignalStack() {
    if (memory_ == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> memory_;
};

}  // namespace

void BlockAsynchronousSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE, SIGWINCH}) {
    sigaddset(&set, sig);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void EnsureAlternateSignalStack() {
  thread_local AlternateSignalStack stack;
  (void)stack;
}

}  // namespace flowstone
