// A best-fit-with-coalescing (BFC) allocator: it takes large regions from a sub-allocator
// (cudaMalloc for a GPU, aligned host memory in tests) and carves them into chunks, so that a
// training step reuses device memory instead of calling the driver. Freed chunks merge with free
// neighbours; free chunks are kept in size-class bins and the smallest chunk that fits is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "flowstone/allocator.h"

namespace flowstone {

// Where a BFC allocator gets its regions.
class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  // Returns nullptr when the memory is not available.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

// Host memory aligned to 256 bytes like cudaMalloc's; for testing the BFC allocator on machines
// without GPUs.
class HostSubAllocator final : public SubAllocator {
 public:
  void* Alloc(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
};

struct BfcOptions {
  // The most memory the allocator may hold from its sub-allocator.
  int64_t memory_limit_bytes = 0;
  // false: reserve the whole limit in one region on the first allocation.
  // true: start with a small region and double the region size as memory is needed.
  bool allow_growth = false;
  // The first region's size with allow_growth.
  int64_t initial_region_bytes = 2 << 20;
};

class BfcAllocator final : public Allocator {
 public:
  BfcAllocator(std::unique_ptr<SubAllocator> sub_allocator, const BfcOptions& options,
               std::string name);
  // Frees every region to the sub-allocator.
  ~BfcAllocator() override;

  // Requests are rounded up to whole multiples of this; chunks are aligned to it (given regions
  // aligned to it, as cudaMalloc's are).
  static constexpr size_t kMinChunkBytes = 256;

  std::string name() const override { return name_; }
  // Returns nullptr when no chunk fits and no new region can be had within the limit.
  void* Allocate(size_t bytes) override;
  // Frees the chunk at ptr (its size is known, so `bytes` is not needed); nullptr is a no-op.
  void Deallocate(void* ptr, size_t bytes) override;
  // bytes_in_use counts chunk sizes (rounded up to 256 bytes); bytes_limit is the limit;
  // largest_free_block_bytes is the largest free chunk, counting memory not yet reserved;
  // bytes_cached is reserved memory not in use; num_system_allocs counts regions.
  AllocatorStats stats() const override;
  int64_t limit() const override { return options_.memory_limit_bytes; }

  // Bytes reserved from the sub-allocator so far.
  int64_t bytes_reserved() const;
  // A report for OOM messages, in TensorFlow's shape: "Allocator (GPU_0_bfc) ran out of memory
  // trying to allocate 1.20GiB (rounded to 1288490240)", the non-empty bins, the regions and their
  // first 64 chunks, the 32 largest in-use chunk sizes, and the totals.
  std::string MemoryReport(size_t failed_request_bytes) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  BfcOptions options_;
  std::string name_;
};

}  // namespace flowstone
