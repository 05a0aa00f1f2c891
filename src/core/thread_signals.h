// Signal delivery to threads that run kernels.
//
// oneDNN's AVX-512 sgemm kernel runs with its stack pointer inside its heap workspace. A signal
// delivered to a thread in that kernel makes the kernel write the signal frame (about 3 KiB with
// the AVX-512 registers) below that pointer, over the heap (the Ctrl-C heap corruption of
// issue 16). Two defences: pool threads block asynchronous signals, so the process's signals go to
// the threads that called into Flowstone; and every thread that runs kernels has an alternate
// signal stack, which the kernel uses instead of the stack pointer for handlers installed with
// SA_ONSTACK (CPython installs its handlers so since 3.10, and so does Flowstone's SIGINT hook).
#pragma once

namespace flowstone {

// Blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE and
// SIGWINCH in the calling thread. For threads Flowstone creates.
void BlockAsynchronousSignals();

// Gives the calling thread an alternate signal stack unless it has one (the first call per
// thread costs two system calls; later calls one thread-local load). The stack is freed when the
// thread exits.
void EnsureAlternateSignalStack();

}  // namespace flowstone
