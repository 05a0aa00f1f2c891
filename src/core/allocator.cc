#include "flowstone/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace flowstone {
namespace {

// Freed blocks are kept per size class. Classes are multiples of 64 bytes up to 1 KiB, then four
// classes per power of two, so a block is at most 25% larger than asked for.
constexpr size_t kMaxCachedBlock = size_t{1} << 31;

size_t SizeClassBytes(size_t bytes) {
  if (bytes <= 1024) return std::max<size_t>(64, (bytes + 63) & ~size_t{63});
  int log2 = 63 - __builtin_clzll(bytes - 1);  // bytes - 1 < 2^(log2+1)
  size_t quarter = size_t{1} << (log2 - 2);    // four steps between 2^log2 and 2^(log2+1)
  return (bytes + quarter - 1) / quarter * quarter;
}

class CachingCpuAllocator final : public Allocator {
 public:
  CachingCpuAllocator() : limit_(PhysicalMemoryBytes()) {}

  std::string name() const override { return "cpu"; }

  void* Allocate(size_t bytes) override {
    size_t block = SizeClassBytes(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.bytes_in_use + static_cast<int64_t>(block) > limit_) return nullptr;
    void* ptr = nullptr;
    auto it = std::lower_bound(cache_.begin(), cache_.end(), block,
                               [](const Bin& bin, size_t b) { return bin.block < b; });
    if (it != cache_.end() && it->block == block && !it->free.empty()) {
      ptr = it->free.back();
      it->free.pop_back();
      stats_.bytes_cached -= static_cast<int64_t>(block);
    } else {
      ptr = SystemAllocate(block);
      if (ptr == nullptr) {
        ReleaseCacheLocked();
        ptr = SystemAllocate(block);
      }
      if (ptr == nullptr) return nullptr;
      ++stats_.num_system_allocs;
    }
    stats_.bytes_in_use += static_cast<int64_t>(block);
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    return ptr;
  }

  void Deallocate(void* ptr, size_t bytes) override {
    if (ptr == nullptr) return;
    size_t block = SizeClassBytes(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= static_cast<int64_t>(block);
    if (block > kMaxCachedBlock || stats_.bytes_cached + static_cast<int64_t>(block) > CacheCap()) {
      std::free(ptr);
      return;
    }
    auto it = std::lower_bound(cache_.begin(), cache_.end(), block,
                               [](const Bin& bin, size_t b) { return bin.block < b; });
    if (it == cache_.end() || it->block != block) it = cache_.insert(it, Bin{block, {}});
    it->free.push_back(ptr);
    stats_.bytes_cached += static_cast<int64_t>(block);
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    AllocatorStats s = stats_;
    s.bytes_limit = limit_;
    return s;
  }

  int64_t limit() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return limit_;
  }

  void SetLimit(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = bytes > 0 ? bytes : PhysicalMemoryBytes();
  }

 private:
  struct Bin {
    size_t block;
    std::vector<void*> free;
  };

  static void* SystemAllocate(size_t block) { return std::aligned_alloc(kTensorAlignment, block); }

  // Cached memory is bounded so that an idle process does not hold on to much.
  int64_t CacheCap() const { return std::min<int64_t>(limit_ / 4, int64_t{2} << 30); }

  void ReleaseCacheLocked() {
    for (Bin& bin : cache_) {
      for (void* p : bin.free) std::free(p);
      bin.free.clear();
    }
    stats_.bytes_cached = 0;
  }

  mutable std::mutex mu_;
  int64_t limit_;
  AllocatorStats stats_;
  std::vector<Bin> cache_;  // sorted by block size
};

CachingCpuAllocator* GlobalCpuAllocator() {
  // Never destroyed: buffers handed to Python may outlive every other object.
  static CachingCpuAllocator* allocator = new CachingCpuAllocator;
  return allocator;
}

}  // namespace

Allocator* CpuAllocator() { return GlobalCpuAllocator(); }

void SetCpuMemoryLimit(int64_t bytes) { GlobalCpuAllocator()->SetLimit(bytes); }

int64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 40;
  return static_cast<int64_t>(pages) * page_size;
}

LimitedAllocator::LimitedAllocator(Allocator* base, int64_t limit, std::string name)
    : base_(base), limit_(limit), name_(std::move(name)) {}

void* LimitedAllocator::Allocate(size_t bytes) {
  int64_t size = static_cast<int64_t>(bytes);
  int64_t now = in_use_.fetch_add(size) + size;
  if (now > limit_) {
    in_use_.fetch_sub(size);
    return nullptr;
  }
  void* ptr = base_->Allocate(bytes);
  if (ptr == nullptr) {
    in_use_.fetch_sub(size);
    return nullptr;
  }
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  num_allocs_.fetch_add(1);
  return ptr;
}

void LimitedAllocator::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  base_->Deallocate(ptr, bytes);
  in_use_.fetch_sub(static_cast<int64_t>(bytes));
}

AllocatorStats LimitedAllocator::stats() const {
  AllocatorStats s;
  s.bytes_in_use = in_use_.load();
  s.peak_bytes_in_use = peak_.load();
  s.bytes_limit = limit_;
  s.num_allocs = num_allocs_.load();
  return s;
}

}  // namespace flowstone
