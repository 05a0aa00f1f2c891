#include "flowstone/bfc_allocator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace flowstone {
namespace {

constexpr size_t kChunkUnit = BfcAllocator::kMinChunkBytes;
// Bin b holds free chunks of [256 << b, 256 << (b + 1)) bytes; the last bin holds everything
// from 256 << 20 = 256 MiB up.
constexpr int kNumBins = 21;
// The report lists at most this many chunks and this many distinct in-use sizes, so that an OOM
// message stays readable when the allocator holds thousands of chunks.
constexpr int kMaxReportedChunks = 64;
constexpr int kMaxReportedSizes = 32;

size_t RoundToChunkUnit(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kChunkUnit - 1) / kChunkUnit * kChunkUnit;
}

int BinIndex(size_t chunk_bytes) {
  size_t units = chunk_bytes / kChunkUnit;  // >= 1 for every chunk
  int log2 = 63 - __builtin_clzll(units);
  return std::min(log2, kNumBins - 1);
}

size_t NonNegative(int64_t bytes) { return static_cast<size_t>(std::max<int64_t>(bytes, 0)); }

size_t BinBytes(int bin) { return kChunkUnit << bin; }

// "768B", "1.5KiB", "12.0MiB", "1.20GiB": GiB amounts get two decimals because a tenth of a GiB
// is already 100 MiB.
std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  char buf[64];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%.0fB", bytes);
  } else {
    std::snprintf(buf, sizeof(buf), unit <= 2 ? "%.1f%s" : "%.2f%s", bytes, units[unit]);
  }
  return buf;
}

}  // namespace

void* HostSubAllocator::Alloc(size_t bytes) {
  // Aligned like cudaMalloc's memory; aligned_alloc needs a size that is a multiple of it.
  return std::aligned_alloc(kChunkUnit, RoundToChunkUnit(bytes));
}

void HostSubAllocator::Free(void* ptr, size_t) { std::free(ptr); }

// Every region is cut into chunks that tile it; neighbouring chunks of one region are linked, so
// a freed chunk can merge with free neighbours. Chunks never merge across regions, even when two
// regions happen to be adjacent in memory, because each region goes back to the sub-allocator
// whole.
struct BfcAllocator::Impl {
  using ChunkId = int;
  static constexpr ChunkId kNoChunk = -1;

  struct Chunk {
    char* ptr = nullptr;
    size_t size = 0;
    size_t requested = 0;  // what the caller asked for; 0 while free
    bool in_use = false;
    ChunkId prev = kNoChunk;
    ChunkId next = kNoChunk;
  };

  struct Region {
    char* base;
    size_t bytes;
    ChunkId first;
  };

  // Free chunks in a bin, smallest first; address order breaks ties so that keys are unique.
  struct FreeKey {
    size_t size;
    uintptr_t address;
    ChunkId id;
    bool operator<(const FreeKey& other) const {
      if (size != other.size) return size < other.size;
      return address < other.address;
    }
  };

  Impl(std::unique_ptr<SubAllocator> sub_allocator, const BfcOptions& options)
      : sub(std::move(sub_allocator)),
        allow_growth(options.allow_growth),
        limit(NonNegative(options.memory_limit_bytes) / kChunkUnit * kChunkUnit),
        next_region_bytes(allow_growth ? RoundToChunkUnit(NonNegative(options.initial_region_bytes))
                                       : limit) {}

  ~Impl() {
    for (const Region& region : regions) sub->Free(region.base, region.bytes);
  }

  ChunkId NewChunk() {
    if (!unused_ids.empty()) {
      ChunkId id = unused_ids.back();
      unused_ids.pop_back();
      chunks[id] = Chunk();
      return id;
    }
    chunks.emplace_back();
    return static_cast<ChunkId>(chunks.size() - 1);
  }

  FreeKey KeyOf(ChunkId id) const {
    return FreeKey{chunks[id].size, reinterpret_cast<uintptr_t>(chunks[id].ptr), id};
  }

  void InsertFree(ChunkId id) { bins[BinIndex(chunks[id].size)].insert(KeyOf(id)); }
  void RemoveFree(ChunkId id) { bins[BinIndex(chunks[id].size)].erase(KeyOf(id)); }

  // The smallest free chunk of at least `bytes`: the first fitting chunk of the request's own bin,
  // else the smallest chunk of the next non-empty bin (every chunk there is larger).
  ChunkId FindBestFit(size_t bytes) const {
    for (int bin = BinIndex(bytes); bin < kNumBins; ++bin) {
      auto it = bins[bin].lower_bound(FreeKey{bytes, 0, kNoChunk});
      if (it != bins[bin].end()) return it->id;
    }
    return kNoChunk;
  }

  // Takes a new region from the sub-allocator big enough for `bytes`, within the limit. When the
  // sub-allocator refuses, the region size is halved (down to `bytes`) and tried again, since a
  // smaller region may still be available.
  bool AddRegion(size_t bytes) {
    size_t available = limit - reserved;
    if (bytes > available) return false;
    size_t region_bytes = std::min(std::max(next_region_bytes, bytes), available);
    void* base = sub->Alloc(region_bytes);
    while (base == nullptr && region_bytes > bytes) {
      region_bytes = std::max(bytes, RoundToChunkUnit(region_bytes / 2));
      base = sub->Alloc(region_bytes);
    }
    if (base == nullptr) return false;
    reserved += region_bytes;
    if (allow_growth) next_region_bytes = std::min(region_bytes * 2, limit);

    ChunkId id = NewChunk();
    chunks[id].ptr = static_cast<char*>(base);
    chunks[id].size = region_bytes;
    regions.push_back(Region{static_cast<char*>(base), region_bytes, id});
    InsertFree(id);
    return true;
  }

  // Cuts chunk `id` down to `bytes`; the rest becomes a free chunk after it. Its next neighbour
  // is in use (free neighbours are always merged), so the rest needs no merging. Every remainder
  // is a whole number of 256-byte units and merges back when the chunk is freed, so it is always
  // worth keeping: in-use chunks are then exactly the rounded requests.
  void Split(ChunkId id, size_t bytes) {
    size_t rest_bytes = chunks[id].size - bytes;
    if (rest_bytes < kChunkUnit) return;
    ChunkId rest = NewChunk();  // may move `chunks`, so no references are held across it
    chunks[rest].ptr = chunks[id].ptr + bytes;
    chunks[rest].size = rest_bytes;
    chunks[rest].prev = id;
    chunks[rest].next = chunks[id].next;
    if (chunks[id].next != kNoChunk) chunks[chunks[id].next].prev = rest;
    chunks[id].next = rest;
    chunks[id].size = bytes;
    InsertFree(rest);
  }

  // Appends `next` (free, not in a bin) to its predecessor `id` and retires it.
  void Absorb(ChunkId id, ChunkId next) {
    chunks[id].size += chunks[next].size;
    chunks[id].next = chunks[next].next;
    if (chunks[next].next != kNoChunk) chunks[chunks[next].next].prev = id;
    unused_ids.push_back(next);
  }

  size_t LargestFreeChunk() const {
    for (int bin = kNumBins - 1; bin >= 0; --bin) {
      if (!bins[bin].empty()) return bins[bin].rbegin()->size;
    }
    return 0;
  }

  std::unique_ptr<SubAllocator> sub;
  const bool allow_growth;
  const size_t limit;  // the memory limit rounded down to whole chunk units

  // Guards everything below.
  mutable std::mutex mu;
  size_t next_region_bytes;
  size_t reserved = 0;
  std::vector<Chunk> chunks;
  std::vector<ChunkId> unused_ids;
  std::vector<Region> regions;
  std::set<FreeKey> bins[kNumBins];
  std::unordered_map<const void*, ChunkId> in_use;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;
  int64_t largest_alloc = 0;
};

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> sub_allocator, const BfcOptions& options,
                           std::string name)
    : impl_(std::make_unique<Impl>(std::move(sub_allocator), options)),
      options_(options),
      name_(std::move(name)) {}

BfcAllocator::~BfcAllocator() = default;

void* BfcAllocator::Allocate(size_t bytes) {
  Impl& m = *impl_;
  if (bytes > m.limit) return nullptr;  // also keeps the rounding below from overflowing
  size_t rounded = RoundToChunkUnit(bytes);
  std::lock_guard<std::mutex> lock(m.mu);
  Impl::ChunkId id = m.FindBestFit(rounded);
  if (id == Impl::kNoChunk) {
    if (!m.AddRegion(rounded)) return nullptr;
    id = m.FindBestFit(rounded);
  }
  m.RemoveFree(id);
  m.Split(id, rounded);
  Impl::Chunk& chunk = m.chunks[id];
  chunk.in_use = true;
  chunk.requested = bytes;
  m.in_use.emplace(chunk.ptr, id);
  m.bytes_in_use += static_cast<int64_t>(chunk.size);
  m.peak_bytes_in_use = std::max(m.peak_bytes_in_use, m.bytes_in_use);
  m.largest_alloc = std::max(m.largest_alloc, static_cast<int64_t>(chunk.size));
  ++m.num_allocs;
  return chunk.ptr;
}

void BfcAllocator::Deallocate(void* ptr, size_t) {
  if (ptr == nullptr) return;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto found = m.in_use.find(ptr);
  if (found == m.in_use.end()) {
    // Freeing memory this allocator never handed out is a caller bug; ignoring it keeps the
    // allocator's own chunks intact.
    std::fprintf(stderr, "flowstone: %s: Deallocate of %p, which it did not allocate\n",
                 name_.c_str(), ptr);
    return;
  }
  Impl::ChunkId id = found->second;
  m.in_use.erase(found);
  m.chunks[id].in_use = false;
  m.chunks[id].requested = 0;
  m.bytes_in_use -= static_cast<int64_t>(m.chunks[id].size);

  Impl::ChunkId next = m.chunks[id].next;
  if (next != Impl::kNoChunk && !m.chunks[next].in_use) {
    m.RemoveFree(next);
    m.Absorb(id, next);
  }
  Impl::ChunkId prev = m.chunks[id].prev;
  if (prev != Impl::kNoChunk && !m.chunks[prev].in_use) {
    m.RemoveFree(prev);
    m.Absorb(prev, id);
    id = prev;
  }
  m.InsertFree(id);
}

AllocatorStats BfcAllocator::stats() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  AllocatorStats s;
  s.bytes_in_use = m.bytes_in_use;
  s.peak_bytes_in_use = m.peak_bytes_in_use;
  s.bytes_limit = options_.memory_limit_bytes;
  s.num_allocs = m.num_allocs;
  s.bytes_cached = static_cast<int64_t>(m.reserved) - m.bytes_in_use;
  s.num_system_allocs = static_cast<int64_t>(m.regions.size());
  s.largest_free_block_bytes =
      static_cast<int64_t>(std::max(m.LargestFreeChunk(), m.limit - m.reserved));
  return s;
}

int64_t BfcAllocator::bytes_reserved() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int64_t>(impl_->reserved);
}

std::string BfcAllocator::MemoryReport(size_t failed_request_bytes) const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  std::string out;
  char line[512];
  auto add = [&](const char* format, auto... args) {
    std::snprintf(line, sizeof(line), format, args...);
    out += line;
  };
  size_t rounded = RoundToChunkUnit(failed_request_bytes);
  add("Allocator (%s) ran out of memory trying to allocate %s (rounded to %zu)\n", name_.c_str(),
      HumanBytes(static_cast<double>(failed_request_bytes)).c_str(), rounded);
  out += "Current allocation summary follows.\n";

  struct BinTotals {
    int64_t chunks = 0, chunks_in_use = 0;
    size_t bytes = 0, bytes_in_use = 0, requested_in_use = 0;
  };
  BinTotals totals[kNumBins];
  std::map<size_t, int64_t> in_use_sizes;
  for (const Impl::Region& region : m.regions) {
    for (Impl::ChunkId id = region.first; id != Impl::kNoChunk; id = m.chunks[id].next) {
      const Impl::Chunk& c = m.chunks[id];
      BinTotals& t = totals[BinIndex(c.size)];
      ++t.chunks;
      t.bytes += c.size;
      if (c.in_use) {
        ++t.chunks_in_use;
        t.bytes_in_use += c.size;
        t.requested_in_use += c.requested;
        ++in_use_sizes[c.size];
      }
    }
  }
  for (int bin = 0; bin < kNumBins; ++bin) {
    const BinTotals& t = totals[bin];
    if (t.chunks == 0) continue;
    add("Bin (%zu): Total Chunks: %" PRId64 ", Chunks in use: %" PRId64
        ". %s allocated for chunks. %s in use in bin. %s client-requested in use in bin.\n",
        BinBytes(bin), t.chunks, t.chunks_in_use, HumanBytes(t.bytes).c_str(),
        HumanBytes(t.bytes_in_use).c_str(), HumanBytes(t.requested_in_use).c_str());
  }

  int listed = 0, unlisted = 0;
  for (const Impl::Region& region : m.regions) {
    add("Region at %p of size %zu\n", static_cast<void*>(region.base), region.bytes);
    for (Impl::ChunkId id = region.first; id != Impl::kNoChunk; id = m.chunks[id].next) {
      const Impl::Chunk& c = m.chunks[id];
      if (listed == kMaxReportedChunks) {
        ++unlisted;
        continue;
      }
      ++listed;
      if (c.in_use) {
        add("  InUse at %p of size %zu (requested %zu)\n", static_cast<void*>(c.ptr), c.size,
            c.requested);
      } else {
        add("  Free  at %p of size %zu\n", static_cast<void*>(c.ptr), c.size);
      }
    }
  }
  if (unlisted > 0) add("  ... %d more chunks not listed\n", unlisted);

  out += "Summary of in-use chunks by size (largest first):\n";
  int sizes_listed = 0;
  for (auto it = in_use_sizes.rbegin(); it != in_use_sizes.rend(); ++it) {
    if (sizes_listed == kMaxReportedSizes) {
      add("  ... %zu smaller sizes not listed\n", in_use_sizes.size() - sizes_listed);
      break;
    }
    ++sizes_listed;
    add("  %" PRId64 " chunks of size %zu totalling %s\n", it->second, it->first,
        HumanBytes(static_cast<double>(it->first) * static_cast<double>(it->second)).c_str());
  }
  add("Sum Total of in-use chunks: %s\n", HumanBytes(static_cast<double>(m.bytes_in_use)).c_str());
  add("total_region_allocated_bytes_: %zu memory_limit_: %zu available bytes: %zu "
      "curr_region_allocation_bytes_: %zu\n",
      m.reserved, m.limit, m.limit - m.reserved, m.next_region_bytes);
  add("Limit:            %" PRId64 "\n", options_.memory_limit_bytes);
  add("InUse:            %" PRId64 "\n", m.bytes_in_use);
  add("MaxInUse:         %" PRId64 "\n", m.peak_bytes_in_use);
  add("NumAllocs:        %" PRId64 "\n", m.num_allocs);
  add("MaxAllocSize:     %" PRId64 "\n", m.largest_alloc);
  size_t largest_free = m.LargestFreeChunk();
  add("LargestFreeChunk: %zu (%s); not yet reserved under the limit: %zu (%s)\n", largest_free,
      HumanBytes(static_cast<double>(largest_free)).c_str(), m.limit - m.reserved,
      HumanBytes(static_cast<double>(m.limit - m.reserved)).c_str());
  return out;
}

}  // namespace flowstone
