// Ctrl-C during sess.run. A SIGINT handler placed in front of CPython's records the interrupt for
// the runtime (NotifyInterrupt: runs on Python's main thread watch it and stop within a node or a
// GEMM tile) and then calls CPython's handler, so Python's own handling is unchanged: the binding
// calls PyErr_CheckSignals when the stopped run returns, which raises KeyboardInterrupt.
//
// The hook is placed only while Python's SIGINT handler is signal.default_int_handler. A program
// that installs a handler of its own with signal.signal replaces the hook (CPython reinstalls its
// C handler); its handler then runs when the run returns, as in TensorFlow, and runs are not
// stopped. The hook is checked again (one sigaction call) when a session is created and when a run
// signature is compiled, never on the per-run path.
#include <signal.h>

#include "common.h"
#include "flowstone/cancellation.h"

namespace flowstone::python {
namespace {

struct sigaction python_action;  // the action the hook replaced and chains to
bool hook_active = false;        // guarded by the GIL
unsigned long main_thread_ident = 0;

void OnSigint(int sig, siginfo_t* info, void* context) {
  NotifyInterrupt();
  if (python_action.sa_flags & SA_SIGINFO) {
    python_action.sa_sigaction(sig, info, context);
  } else if (python_action.sa_handler != SIG_DFL && python_action.sa_handler != SIG_IGN) {
    python_action.sa_handler(sig);
  }
}

bool HookInstalled(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == &OnSigint;
}

// Places the hook when Python's SIGINT handler is the default one; returns whether it is placed.
bool RefreshInterruptHook() {
  nb::module_ signal = nb::module_::import_("signal");
  const bool python_default =
      signal.attr("getsignal")(signal.attr("SIGINT")).is(signal.attr("default_int_handler"));
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return hook_active = false;
  if (HookInstalled(current)) return hook_active = python_default;
  if (!python_default) return hook_active = false;
  struct sigaction hook = {};
  hook.sa_sigaction = &OnSigint;
  // SA_ONSTACK: handled on the thread's alternate signal stack (see core/thread_signals.h).
  hook.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & SA_RESTART);
  sigemptyset(&hook.sa_mask);
  python_action = current;
  return hook_active = sigaction(SIGINT, &hook, nullptr) == 0;
}

}  // namespace

bool RunShouldWatchInterrupts() {
  return hook_active && PyThread_get_thread_ident() == main_thread_ident;
}

void RaiseIfInterrupted(const Status& status) {
  if (status.ok() || status.GetPayload("interrupted").empty()) return;
  // Python's handler runs now; the default one raises KeyboardInterrupt.
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

void RegisterInterrupts(nb::module_& m) {
  main_thread_ident = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  m.def("refresh_interrupt_hook", &RefreshInterruptHook,
        "Places the SIGINT hook that lets Ctrl-C stop runs when Python's SIGINT handler is the "
        "default one; returns whether it is placed.");
}

}  // namespace flowstone::python
