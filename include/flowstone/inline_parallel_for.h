// A per-thread switch for ThreadPool::ParallelFor (thread_pool.h), in a header of its own so that
// the few users need not include the pool.
#pragma once

namespace flowstone {

// While one lives, ParallelFor called on its thread runs all the work inline on that thread: for
// threads that together already keep every core busy (a parallel map's workers), where splitting
// each kernel only adds hand-offs between threads. Scopes nest.
class InlineParallelForScope {
 public:
  InlineParallelForScope();
  ~InlineParallelForScope();
  InlineParallelForScope(const InlineParallelForScope&) = delete;
  InlineParallelForScope& operator=(const InlineParallelForScope&) = delete;

 private:
  bool previous_;
};

}  // namespace flowstone
