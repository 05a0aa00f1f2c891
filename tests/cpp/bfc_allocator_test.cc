// The best-fit-with-coalescing allocator, over host memory: chunk placement, merging, region
// growth, limits, stats, the OOM report and concurrent use.
#include "flowstone/bfc_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace flowstone {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

// What the allocator asked of its sub-allocator.
struct RegionLog {
  std::vector<size_t> allocated;
  std::vector<size_t> refused;
  std::vector<size_t> freed;
  // Larger regions are refused, like a GPU with less free memory than the limit.
  size_t max_region_bytes = SIZE_MAX;
};

class RecordingSubAllocator final : public SubAllocator {
 public:
  explicit RecordingSubAllocator(RegionLog* log) : log_(log) {}
  void* Alloc(size_t bytes) override {
    if (bytes > log_->max_region_bytes) {
      log_->refused.push_back(bytes);
      return nullptr;
    }
    log_->allocated.push_back(bytes);
    return host_.Alloc(bytes);
  }
  void Free(void* ptr, size_t bytes) override {
    log_->freed.push_back(bytes);
    host_.Free(ptr, bytes);
  }

 private:
  RegionLog* log_;
  HostSubAllocator host_;
};

std::unique_ptr<BfcAllocator> MakeAllocator(RegionLog* log, size_t limit, bool allow_growth,
                                            size_t initial_region_bytes = 2 * kMiB) {
  BfcOptions options;
  options.memory_limit_bytes = static_cast<int64_t>(limit);
  options.allow_growth = allow_growth;
  options.initial_region_bytes = static_cast<int64_t>(initial_region_bytes);
  return std::make_unique<BfcAllocator>(std::make_unique<RecordingSubAllocator>(log), options,
                                        "GPU_0_bfc");
}

char* Alloc(BfcAllocator& allocator, size_t bytes) {
  return static_cast<char*>(allocator.Allocate(bytes));
}

struct Block {
  char* ptr;
  size_t bytes;
  char pattern;
};

bool HoldsPattern(const Block& block) {
  return std::all_of(block.ptr, block.ptr + block.bytes,
                     [&](char c) { return c == block.pattern; });
}

TEST(BfcAllocatorTest, ChunksAreAlignedAndLiveChunksNeverOverlap) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, kMiB, false);
  const size_t sizes[] = {1, 100, 255, 256, 257, 1000, 4096, 3000, 10000, 7, 512, 65536};
  std::vector<Block> live;
  char pattern = 1;
  auto allocate = [&](size_t bytes) {
    char* ptr = Alloc(*allocator, bytes);
    ASSERT_NE(ptr, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % BfcAllocator::kMinChunkBytes, 0u) << bytes;
    std::memset(ptr, pattern, bytes);
    live.push_back(Block{ptr, bytes, pattern++});
  };
  for (size_t bytes : sizes) allocate(bytes);
  // Free every other block, then fill the holes with new blocks of other sizes.
  std::vector<Block> kept;
  for (size_t i = 0; i < live.size(); ++i) {
    if (i % 2 == 0) {
      allocator->Deallocate(live[i].ptr, live[i].bytes);
    } else {
      kept.push_back(live[i]);
    }
  }
  live = kept;
  for (size_t bytes : sizes) allocate(bytes / 2 + 1);

  for (const Block& block : live) EXPECT_TRUE(HoldsPattern(block)) << block.bytes;
  std::sort(live.begin(), live.end(), [](const Block& a, const Block& b) { return a.ptr < b.ptr; });
  for (size_t i = 1; i < live.size(); ++i) {
    EXPECT_LE(live[i - 1].ptr + live[i - 1].bytes, live[i].ptr);
  }
  for (const Block& block : live) allocator->Deallocate(block.ptr, block.bytes);
  EXPECT_EQ(allocator->stats().bytes_in_use, 0);
}

TEST(BfcAllocatorTest, FreedNeighboursMergeInAnyOrder) {
  RegionLog log;
  constexpr size_t kPiece = 64 * kKiB;
  auto allocator = MakeAllocator(&log, 3 * kPiece, false);
  std::array<int, 3> order = {0, 1, 2};
  do {
    char* pieces[3];
    for (char*& piece : pieces) {
      piece = Alloc(*allocator, kPiece);
      ASSERT_NE(piece, nullptr);
    }
    EXPECT_EQ(Alloc(*allocator, 1), nullptr) << "the three pieces fill the limit";
    for (int i : order) allocator->Deallocate(pieces[i], kPiece);
    // Only one chunk of all the memory can serve this.
    char* whole = Alloc(*allocator, 3 * kPiece);
    ASSERT_NE(whole, nullptr) << "order " << order[0] << order[1] << order[2];
    EXPECT_EQ(whole, pieces[0]);
    allocator->Deallocate(whole, 3 * kPiece);
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(log.allocated.size(), 1u);
}

TEST(BfcAllocatorTest, BestFitReusesTheSmallestHoleThatFits) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, kMiB, false);
  char* a = Alloc(*allocator, 4 * kKiB);
  char* barrier1 = Alloc(*allocator, kKiB);
  char* c = Alloc(*allocator, 2 * kKiB);
  char* barrier2 = Alloc(*allocator, kKiB);
  ASSERT_TRUE(a && barrier1 && c && barrier2);
  allocator->Deallocate(a, 4 * kKiB);
  allocator->Deallocate(c, 2 * kKiB);
  // Holes of 4 KiB (first) and 2 KiB, and the large free tail: a 2 KiB request takes the 2 KiB
  // hole exactly, then a 3 KiB request takes the 4 KiB hole rather than the tail.
  EXPECT_EQ(Alloc(*allocator, 2000), c);
  EXPECT_EQ(Alloc(*allocator, 3 * kKiB), a);
  // The 4 KiB hole was split: its last 1 KiB is free and serves the next 1 KiB request.
  EXPECT_EQ(Alloc(*allocator, kKiB), a + 3 * kKiB);
}

TEST(BfcAllocatorTest, ReturnsNullptrAtTheLimitAndRecoversAfterFrees) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, kMiB, false);
  char* big = Alloc(*allocator, 768 * kKiB);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(Alloc(*allocator, 512 * kKiB), nullptr);
  EXPECT_EQ(Alloc(*allocator, 2 * kMiB), nullptr);
  EXPECT_EQ(Alloc(*allocator, SIZE_MAX), nullptr);
  EXPECT_EQ(allocator->stats().num_allocs, 1);
  EXPECT_EQ(allocator->stats().bytes_in_use, static_cast<int64_t>(768 * kKiB));

  allocator->Deallocate(big, 768 * kKiB);
  char* all = Alloc(*allocator, kMiB);
  EXPECT_NE(all, nullptr);
  EXPECT_EQ(log.allocated, std::vector<size_t>{kMiB});
}

TEST(BfcAllocatorTest, ZeroBytesGetsAChunkAndFreeingNullptrDoesNothing) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, kMiB, false);
  char* a = Alloc(*allocator, 0);
  char* b = Alloc(*allocator, 0);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a, b);
  EXPECT_EQ(allocator->stats().bytes_in_use, 512);
  allocator->Deallocate(nullptr, 0);
  allocator->Deallocate(nullptr, 100);
  EXPECT_EQ(allocator->stats().bytes_in_use, 512);
}

TEST(BfcAllocatorTest, GrowthDoublesRegionsUpToTheLimit) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 15 * kMiB, true, 2 * kMiB);
  EXPECT_EQ(allocator->bytes_reserved(), 0);
  ASSERT_NE(Alloc(*allocator, 1536 * kKiB), nullptr);
  EXPECT_EQ(log.allocated, (std::vector<size_t>{2 * kMiB}));
  ASSERT_NE(Alloc(*allocator, 1536 * kKiB), nullptr);  // 512 KiB left in the first region
  EXPECT_EQ(log.allocated, (std::vector<size_t>{2 * kMiB, 4 * kMiB}));
  ASSERT_NE(Alloc(*allocator, 3 * kMiB), nullptr);  // 2.5 MiB left in the second region
  EXPECT_EQ(log.allocated, (std::vector<size_t>{2 * kMiB, 4 * kMiB, 8 * kMiB}));
  ASSERT_NE(Alloc(*allocator, 5 * kMiB), nullptr);     // fills the third region
  ASSERT_NE(Alloc(*allocator, 2560 * kKiB), nullptr);  // fills the second
  ASSERT_NE(Alloc(*allocator, 512 * kKiB), nullptr);   // fills the first
  EXPECT_EQ(log.allocated.size(), 3u);
  // 14 MiB reserved: the next region would be 16 MiB but only 1 MiB is left under the limit.
  ASSERT_NE(Alloc(*allocator, 512 * kKiB), nullptr);
  EXPECT_EQ(log.allocated, (std::vector<size_t>{2 * kMiB, 4 * kMiB, 8 * kMiB, kMiB}));
  EXPECT_EQ(allocator->bytes_reserved(), static_cast<int64_t>(15 * kMiB));
  ASSERT_NE(Alloc(*allocator, 512 * kKiB), nullptr);
  EXPECT_EQ(Alloc(*allocator, 256), nullptr);
  EXPECT_EQ(Alloc(*allocator, kMiB), nullptr);
  EXPECT_EQ(log.allocated.size(), 4u);
  EXPECT_EQ(allocator->bytes_reserved(), static_cast<int64_t>(15 * kMiB));

  allocator.reset();
  std::vector<size_t> freed = log.freed;
  std::sort(freed.begin(), freed.end());
  EXPECT_EQ(freed, (std::vector<size_t>{kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB}));
}

TEST(BfcAllocatorTest, GrowthStartsWithTheRequestWhenItIsLarger) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 64 * kMiB, true, 2 * kMiB);
  ASSERT_NE(Alloc(*allocator, 3 * kMiB + 1), nullptr);
  EXPECT_EQ(log.allocated, std::vector<size_t>{3 * kMiB + 256});
  ASSERT_NE(Alloc(*allocator, 256), nullptr);  // the first region is full
  EXPECT_EQ(log.allocated, (std::vector<size_t>{3 * kMiB + 256, 2 * (3 * kMiB + 256)}));
}

TEST(BfcAllocatorTest, WithoutGrowthTheFirstAllocationReservesTheWholeLimit) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 10 * kMiB + 100, false);
  EXPECT_TRUE(log.allocated.empty());
  EXPECT_EQ(allocator->stats().largest_free_block_bytes, static_cast<int64_t>(10 * kMiB));
  std::vector<char*> blocks;
  for (int i = 0; i < 10; ++i) {
    blocks.push_back(Alloc(*allocator, kMiB - 1));
    ASSERT_NE(blocks.back(), nullptr);
  }
  EXPECT_EQ(Alloc(*allocator, 1), nullptr);
  // The limit rounded down to whole 256-byte chunks, in one region.
  EXPECT_EQ(log.allocated, std::vector<size_t>{10 * kMiB});
  for (char* block : blocks) allocator->Deallocate(block, kMiB - 1);
  allocator.reset();
  EXPECT_EQ(log.freed, std::vector<size_t>{10 * kMiB});
}

TEST(BfcAllocatorTest, BacksOffWhenTheSubAllocatorRefuses) {
  RegionLog log;
  log.max_region_bytes = 5 * kMiB;
  auto allocator = MakeAllocator(&log, 16 * kMiB, false);
  ASSERT_NE(Alloc(*allocator, 3 * kMiB), nullptr);
  EXPECT_EQ(log.refused, (std::vector<size_t>{16 * kMiB, 8 * kMiB}));
  EXPECT_EQ(log.allocated, std::vector<size_t>{4 * kMiB});
  // 12 MiB remain under the limit: 12 and 6 MiB are refused, then 3 MiB is enough.
  ASSERT_NE(Alloc(*allocator, 3 * kMiB), nullptr);
  EXPECT_EQ(log.refused, (std::vector<size_t>{16 * kMiB, 8 * kMiB, 12 * kMiB, 6 * kMiB}));
  EXPECT_EQ(log.allocated, (std::vector<size_t>{4 * kMiB, 3 * kMiB}));
  // Nothing the sub-allocator will give can hold 6 MiB: the request fails cleanly.
  EXPECT_EQ(Alloc(*allocator, 6 * kMiB), nullptr);
  EXPECT_EQ(log.allocated.size(), 2u);
  EXPECT_EQ(allocator->bytes_reserved(), static_cast<int64_t>(7 * kMiB));
}

TEST(BfcAllocatorTest, StatsAreExact) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, kMiB, false);
  AllocatorStats s = allocator->stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_limit, static_cast<int64_t>(kMiB));
  EXPECT_EQ(s.largest_free_block_bytes, static_cast<int64_t>(kMiB));

  char* a = Alloc(*allocator, 100);
  char* b = Alloc(*allocator, 1000);
  s = allocator->stats();
  EXPECT_EQ(s.bytes_in_use, 256 + 1024);
  EXPECT_EQ(s.peak_bytes_in_use, 256 + 1024);
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(kMiB) - 1280);
  EXPECT_EQ(s.largest_free_block_bytes, static_cast<int64_t>(kMiB) - 1280);

  allocator->Deallocate(a, 100);
  s = allocator->stats();
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.peak_bytes_in_use, 1280);
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.largest_free_block_bytes, static_cast<int64_t>(kMiB) - 1280);
  allocator->Deallocate(b, 1000);
  EXPECT_EQ(allocator->stats().largest_free_block_bytes, static_cast<int64_t>(kMiB));
  EXPECT_EQ(allocator->limit(), static_cast<int64_t>(kMiB));
}

TEST(BfcAllocatorTest, LargestFreeBlockCountsMemoryNotYetReserved) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 8 * kMiB, true, 2 * kMiB);
  ASSERT_NE(Alloc(*allocator, kMiB), nullptr);
  // 1 MiB free in the first region, 6 MiB not yet reserved.
  EXPECT_EQ(allocator->stats().largest_free_block_bytes, static_cast<int64_t>(6 * kMiB));
  EXPECT_EQ(allocator->stats().num_system_allocs, 1);
}

TEST(BfcAllocatorTest, MemoryReportDescribesBinsChunksAndTotals) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 16 * kMiB, false);
  char* a = Alloc(*allocator, 200);
  char* b = Alloc(*allocator, 200);
  char* c = Alloc(*allocator, 200);
  char* big = Alloc(*allocator, 12 * kMiB);
  ASSERT_TRUE(a && b && c && big);
  allocator->Deallocate(b, 200);

  std::string report = allocator->MemoryReport(1288490240);
  EXPECT_EQ(report.substr(0, report.find('\n')),
            "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.20GiB (rounded to "
            "1288490240)");
  EXPECT_NE(report.find("Bin (256): Total Chunks: 3, Chunks in use: 2. 768B allocated for "
                        "chunks. 512B in use in bin. 400B client-requested in use in bin.\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Bin (8388608): Total Chunks: 1, Chunks in use: 1. 12.0MiB allocated"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("Bin (512)"), std::string::npos) << "empty bins are left out";
  EXPECT_NE(report.find("  1 chunks of size 12582912 totalling 12.0MiB\n"), std::string::npos);
  EXPECT_NE(report.find("  2 chunks of size 256 totalling 512B\n"), std::string::npos);
  EXPECT_NE(report.find("Sum Total of in-use chunks: 12.0MiB\n"), std::string::npos) << report;
  EXPECT_NE(report.find("total_region_allocated_bytes_: 16777216 memory_limit_: 16777216 "
                        "available bytes: 0"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Limit:            16777216\n"), std::string::npos) << report;
  EXPECT_NE(report.find("LargestFreeChunk: 4193536 (4.0MiB)"), std::string::npos) << report;
  EXPECT_NE(report.find("InUse at "), std::string::npos);
  EXPECT_NE(report.find("Free  at "), std::string::npos);
}

TEST(BfcAllocatorTest, MemoryReportListsABoundedNumberOfChunks) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 8 * kMiB, false);
  // 500 chunks of 100 distinct sizes.
  for (int i = 0; i < 500; ++i) ASSERT_NE(Alloc(*allocator, 256 * (1 + i % 100)), nullptr);
  std::string report = allocator->MemoryReport(8 * kMiB);
  size_t listed = 0;
  for (size_t at = report.find("InUse at "); at != std::string::npos;
       at = report.find("InUse at ", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, 64u);
  EXPECT_NE(report.find("437 more chunks not listed"), std::string::npos) << report;
  EXPECT_NE(report.find("68 smaller sizes not listed"), std::string::npos) << report;
  EXPECT_LT(report.size(), 12000u);
}

// Four threads allocate and free random sizes against a limit they often reach; every block is
// filled with its own pattern and checked before it is freed, so overlapping chunks or lost
// updates show up as corrupted data (and as races under ThreadSanitizer).
TEST(BfcAllocatorTest, ConcurrentUseKeepsDataIntact) {
  RegionLog log;
  auto allocator = MakeAllocator(&log, 2 * kMiB, true, 256 * kKiB);
  constexpr int kThreads = 4;
  constexpr int kSteps = 3000;
  std::atomic<int64_t> successes{0};
  std::atomic<int64_t> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      std::uniform_int_distribution<size_t> size_dist(1, 32 * kKiB);
      std::vector<Block> live;
      auto free_block = [&](size_t i) {
        if (!HoldsPattern(live[i])) ++corrupted;
        allocator->Deallocate(live[i].ptr, live[i].bytes);
        live[i] = live.back();
        live.pop_back();
      };
      for (int step = 0; step < kSteps; ++step) {
        if (live.size() < 24 && rng() % 3 != 0) {
          size_t bytes = size_dist(rng);
          char* ptr = Alloc(*allocator, bytes);
          if (ptr == nullptr) continue;
          ++successes;
          char pattern = static_cast<char>(t * 64 + step % 64);
          std::memset(ptr, pattern, bytes);
          live.push_back(Block{ptr, bytes, pattern});
        } else if (!live.empty()) {
          free_block(rng() % live.size());
        }
      }
      while (!live.empty()) free_block(live.size() - 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(corrupted.load(), 0);
  AllocatorStats s = allocator->stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.num_allocs, successes.load());
  EXPECT_LE(allocator->bytes_reserved(), static_cast<int64_t>(2 * kMiB));
  // Every region merged back into one free chunk.
  size_t largest_region = *std::max_element(log.allocated.begin(), log.allocated.end());
  size_t unreserved = 2 * kMiB - static_cast<size_t>(allocator->bytes_reserved());
  EXPECT_EQ(s.largest_free_block_bytes, static_cast<int64_t>(std::max(largest_region, unreserved)));
}

}  // namespace
}  // namespace flowstone
