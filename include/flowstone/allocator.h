// Allocators hand out aligned memory for tensor buffers and enforce memory limits.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace flowstone {

// Every buffer is aligned for the widest vector loads (AVX-512) and cache lines.
constexpr size_t kTensorAlignment = 64;

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_limit = 0;
  int64_t num_allocs = 0;
  // Bytes held in caches for reuse, not counted as in use.
  int64_t bytes_cached = 0;
  // Allocations that had to go to the system allocator (cache misses).
  int64_t num_system_allocs = 0;
  // The largest single allocation that could succeed now, or -1 when the allocator cannot tell.
  int64_t largest_free_block_bytes = -1;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Name used in OOM messages, e.g. "cpu" or "GPU_0_bfc".
  virtual std::string name() const = 0;
  // Returns nullptr when the request would exceed the limit or the system has no memory.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual int64_t limit() const = 0;
  // Something a buffer holds to keep this allocator alive until the buffer is freed; empty for
  // allocators that live for the whole process.
  virtual std::shared_ptr<void> Keepalive() { return nullptr; }
};

// The process-wide CPU allocator. Freed blocks are cached by size class so that a steady-state
// run reuses memory instead of calling the system allocator. It lives for the whole process,
// so buffers may safely outlive any session.
Allocator* CpuAllocator();

// Sets the process-wide CPU memory limit in bytes (0 = what the machine can give).
void SetCpuMemoryLimit(int64_t bytes);
// Total physical memory of the machine in bytes.
int64_t PhysicalMemoryBytes();

// An allocator that counts its own usage against its own limit and passes requests to a base
// allocator; a session with a memory limit in its config gets one.
class LimitedAllocator final : public Allocator,
                               public std::enable_shared_from_this<LimitedAllocator> {
 public:
  LimitedAllocator(Allocator* base, int64_t limit, std::string name);
  std::string name() const override { return name_; }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;
  int64_t limit() const override { return limit_; }
  std::shared_ptr<void> Keepalive() override { return shared_from_this(); }

 private:
  Allocator* base_;
  int64_t limit_;
  std::string name_;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> num_allocs_{0};
};

}  // namespace flowstone
