// Running oneDNN primitives from kernels: the process's one engine, primitives bound to the
// layouts of Flowstone tensors, and a per-kernel cache of them keyed by shapes.
//
// Creating a oneDNN primitive costs far more than running a small one, so a kernel builds the
// primitive for a set of shapes once and keeps it. Kernels run concurrently; a primitive may be
// executed from several threads at once as long as every execution has its own memory objects
// and scratchpad, which Primitive::Execute provides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/status.h"

namespace flowstone::onednn {

// The CPU engine shared by every kernel.
const dnnl::engine& Engine();

// False when the environment sets FLOWSTONE_ONEDNN=0: float32 kernels then run the reference
// loops, for debugging and for comparing the two.
bool Enabled();

// True when oneDNN chose a generic implementation (gemm-based or reference loops) rather than one
// of its optimized direct kernels; callers then try letting oneDNN pick the tensor layouts.
bool IsGeneric(const char* impl_info);

// One argument of a primitive: the layout of the Flowstone tensor, the layout the primitive
// wants, and the reorder between them when they differ.
struct Arg {
  int id = 0;  // DNNL_ARG_*
  bool output = false;
  dnnl::memory::desc user;
  dnnl::memory::desc internal;
  dnnl::reorder convert;  // user -> internal for inputs, internal -> user for outputs
  bool needs_convert = false;
};

struct ArgSpec {
  int id;
  dnnl::memory::desc user;
  bool output;
};

class Primitive {
 public:
  // Binds `prim` (built from `pd`, with a user-managed scratchpad) to arguments in the given
  // user layouts; arguments the primitive wants in another layout get a reorder.
  Primitive(dnnl::primitive prim, const dnnl::primitive_desc_base& pd,
            const std::vector<ArgSpec>& args);

  // Runs the primitive on `data` (one pointer per argument, in the order given at
  // construction); temporaries come from the kernel's device allocator. Arguments marked in
  // `internal` are already in the layout the primitive wants (see Convert), so they are passed
  // as they are; the others are in the tensors' layouts and reordered as needed.
  Status Execute(KernelContext& ctx, const std::vector<void*>& data,
                 const std::vector<bool>& internal = {}) const;

  // Whether argument i needs a reorder between the tensor's layout and the primitive's.
  bool needs_convert(int i) const { return args_[i].needs_convert; }
  // Reorders argument i: an input from the tensor's layout at `from` into the primitive's at
  // `to`, an output from the primitive's layout into the tensor's. Lets a caller that runs the
  // primitive many times on one operand (the filter of each chunk of a batch) reorder it once.
  Status Convert(int i, const void* from, void* to) const;

  // True when both primitives want every argument in the same layout.
  bool SameLayoutsAs(const Primitive& other) const;
  // The layout the primitive wants argument i in.
  const dnnl::memory::desc& internal_desc(int i) const { return args_[i].internal; }
  // oneDNN's name for the implementation it chose, e.g. "jit:avx512_core".
  const std::string& implementation() const { return implementation_; }

 private:
  dnnl::primitive prim_;
  std::vector<Arg> args_;
  dnnl::memory::desc scratchpad_;
  std::string implementation_;
};

// Builds a primitive descriptor with make(false), which keeps the tensors' own layouts; when
// oneDNN has only a generic implementation for those, tries make(true), which lets it choose
// blocked layouts (paying for reorders) and is worth it whenever that finds a direct kernel.
template <typename MakePd>
auto ChoosePd(const MakePd& make) {
  auto pd = make(false);
  if (IsGeneric(pd.impl_info_str())) {
    try {
      auto blocked = make(true);
      if (!IsGeneric(blocked.impl_info_str())) return blocked;
    } catch (const dnnl::error&) {
      // No implementation with free layouts; keep the first.
    }
  }
  return pd;
}

// The index of the candidate to use among primitives computing the same thing with different
// internal layouts (the tensors' own layouts first): the first whose implementation is not
// generic, else the first. The choice depends on the candidates alone, never on timings: two
// implementations sum in different orders, so a timed choice (which the load on the machine
// can flip) made results differ from process to process.
size_t PickDirectImplementation(const std::vector<Primitive>& candidates);

// Attributes every primitive is created with: the scratchpad is passed to each execution, so
// concurrent executions of one primitive never share one.
dnnl::primitive_attr DefaultAttr();

// Runs `fn`, turning a oneDNN exception into a Status.
Status Guard(const char* what, const std::function<void()>& fn);

// Threads: the oneDNN build Flowstone links runs each primitive on an OpenMP team as large as the
// calling thread allows. A team beside the intra-op pool oversubscribes the cores (its
// spin-waiting threads take cycles from the pool, and every inter-op thread calling oneDNN gets a
// team of its own); on a shared machine that made convolutions erratically slower (2x to 5x) than
// single-threaded calls. So oneDNN is called with one OpenMP thread, while primitives are built
// and run, and kernels spread independent calls (chunks of a batch) over the intra-op pool, as
// the matrix products in gemm.cc do.
class OneOpenMpThread {
 public:
  OneOpenMpThread();
  ~OneOpenMpThread();
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int saved_;
};

// oneDNN runs single-threaded (see OneOpenMpThread), so kernels cut a batch into chunks of images
// that run in parallel on the intra-op pool, each with about `work_per_chunk` of work. The chunks
// depend on the shapes only, never on the number of threads, so results do not change with the
// pool size.
struct BatchChunks {
  int64_t size = 1;   // images per chunk; the last chunk may have fewer
  int64_t count = 1;  // number of chunks
  BatchChunks(int64_t batch, int64_t work_per_image, int64_t work_per_chunk);
  int64_t images(int64_t chunk, int64_t batch) const {
    return std::min(size, batch - chunk * size);
  }
};

// A small cache of values built per shape key, for one kernel. Kernels see few distinct shapes
// (usually one), so a short list with the oldest entry evicted is enough.
template <typename V>
class ShapeCache {
 public:
  using Key = std::vector<int64_t>;

  // The value for `key`, built by make(&value) on first use; a failed build is not cached.
  Status Get(const Key& key, const std::function<Status(V*)>& make, std::shared_ptr<const V>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : entries_) {
      if (k == key) {
        *out = v;
        return Status::OK();
      }
    }
    auto value = std::make_shared<V>();
    FS_RETURN_IF_ERROR(make(value.get()));
    if (entries_.size() >= kCapacity) entries_.erase(entries_.begin());
    entries_.emplace_back(key, value);
    *out = std::move(value);
    return Status::OK();
  }

 private:
  static constexpr size_t kCapacity = 8;
  std::mutex mu_;
  std::vector<std::pair<Key, std::shared_ptr<const V>>> entries_;
};

}  // namespace flowstone::onednn
