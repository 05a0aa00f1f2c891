// TF1's queues (tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue): bounded buffers
// of tuples of tensors shared by the runs of one session, which block until they can go on. The
// queue lives in the session's ResourceMgr under "queue:<shared_name or node name>" (as iterators
// do), so two sessions on one graph hold separate queues. Readers (reader_ops.cc) dequeue file
// names from one.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flowstone/kernel.h"

namespace flowstone::io {

// One queue element: a tensor per component.
using QueueTuple = std::vector<Tensor>;

class QueueResource {
 public:
  // A priority queue's first component is its int64 scalar priority; the lowest comes out first,
  // and equal priorities in the order they went in.
  enum class Kind { kFifo, kRandomShuffle, kPadding, kPriority };
  struct Options {
    std::string name;  // for messages, as TF names queues
    Kind kind = Kind::kFifo;
    std::vector<DType> dtypes;
    std::vector<PartialShape> shapes;  // empty: any shape
    int64_t capacity = -1;             // negative: unbounded
    int64_t min_after_dequeue = 0;     // RandomShuffleQueue only
    uint64_t seed = 0, seed2 = 0;      // RandomShuffleQueue only; both 0: nondeterministic
  };
  explicit QueueResource(Options options);

  const Options& options() const { return o_; }
  const char* KindName() const;

  // Adds one tuple (many = false) or the rows of a batch of tuples (many = true), blocking while
  // the queue is full. Cancelled once the queue is closed (TF's "Queue '...' is closed.").
  Status Enqueue(KernelContext& ctx, const QueueTuple& tuple, bool many);
  // Removes one tuple (n < 0) or n stacked into batches, blocking until enough are there. On a
  // closed queue with too few left: OutOfRange "... is closed and has insufficient elements
  // (requested n, current size m)"; with up_to, whatever is left (at least one) instead.
  Status Dequeue(KernelContext& ctx, int64_t n, bool up_to, QueueTuple* out);
  void Close(bool cancel_pending_enqueues);
  int64_t Size();
  bool IsClosed();

 private:
  Status CheckTuple(const QueueTuple& tuple, bool many) const;
  // Waits (with mu_ held through `lock`) until ready() holds, or the run is cancelled.
  template <typename Ready>
  Status Wait(std::unique_lock<std::mutex>& lock, KernelContext& ctx, Ready ready);
  // How many elements a dequeue may take now (a shuffle queue keeps min_after_dequeue while open).
  int64_t Available() const;
  QueueTuple TakeOne();
  void Insert(QueueTuple element);
  Status Batch(std::vector<QueueTuple>& rows, QueueTuple* out) const;

  const Options o_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<QueueTuple> elements_;
  bool closed_ = false;
  bool enqueues_cancelled_ = false;
  std::mt19937_64 rng_;
};

// The queue a handle (the output of a queue op) points to, or FailedPrecondition.
Status QueueFromHandle(const Tensor& handle, std::shared_ptr<QueueResource>* out);

}  // namespace flowstone::io
