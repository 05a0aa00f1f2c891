// The state behind a tf.data iterator: a dataset and the position in it. Graph mode keeps one per
// iterator op in the session's ResourceMgr (IteratorV2, OneShotIterator); eager iteration is meant
// to hold one directly and call the same GetNext, so both paths share one implementation.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "dataset.h"
#include "flowstone/resource.h"

namespace flowstone::data {

class IteratorResource {
 public:
  explicit IteratorResource(DatasetPtr dataset)
      : dataset_(std::move(dataset)), iterator_(dataset_->MakeIterator()) {}

  const DatasetBase& dataset() const { return *dataset_; }

  // The next element, or OutOfRange "End of sequence" after the last (as TF's IteratorGetNext).
  // Safe to call from several threads; calls are served one at a time.
  Status GetNext(KernelContext& ctx, Element* out);

 private:
  DatasetPtr dataset_;
  std::mutex mu_;
  std::unique_ptr<IteratorBase> iterator_;
};

// The session-owned slot of an iterator op (a Var holding a scalar variant, created on first
// use), named "iterator:<shared_name or node name>"; ':' cannot occur in a variable's name.
Var* IteratorSlot(KernelContext& ctx, const std::string& name);
// The iterator a slot holds, or FailedPrecondition saying to run its initializer.
Status IteratorInSlot(Var* slot, std::shared_ptr<IteratorResource>* out);
// Puts a new iterator over `dataset` in the slot (MakeIterator: the initializer).
void ResetSlot(Var* slot, DatasetPtr dataset);

}  // namespace flowstone::data
