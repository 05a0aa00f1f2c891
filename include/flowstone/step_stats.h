// Step statistics: what a traced run records about each node it executes (RunOptions with
// trace_level FULL_TRACE), in the shape of TensorFlow's StepStats proto, so that TF's timeline and
// profiler tools read it. Nothing here is touched by a run without tracing.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/shape.h"
#include "flowstone/types.h"

namespace flowstone {

// One output of an executed node (NodeOutput with its TensorDescription).
struct NodeOutputStats {
  int slot = 0;
  DType dtype = DType::kInvalid;
  TensorShape shape;
  int64_t requested_bytes = 0;
  std::string allocator_name;
};

// One execution of one node (NodeExecStats). Times are nanoseconds: `all_start_nanos` since the
// Unix epoch, the others relative to it. The node's work, from picking it up (gathering and
// moving inputs) to its outputs being set, spans [0, all_end_rel]; the kernel's Compute spans
// [op_start_rel, op_end_rel].
struct NodeExecStats {
  std::string node_name;  // with "function/" prefixes for nodes inside function calls
  std::string op_type;
  std::string timeline_label;  // TensorFlow's form: "name = Op(input, ...)"
  int64_t all_start_nanos = 0;
  int64_t op_start_rel_nanos = 0;
  int64_t op_end_rel_nanos = 0;
  int64_t all_end_rel_nanos = 0;
  uint32_t thread_id = 0;
  std::vector<NodeOutputStats> outputs;
  // AllocatorMemoryUsed: the bytes of this node's outputs on `allocator_name`, and that
  // allocator's bytes in use when the node finished.
  std::string allocator_name;
  int64_t output_bytes = 0;
  int64_t allocator_bytes_in_use = 0;
};

// A run's records, per device in the order devices first appear (DeviceStepStats).
struct DeviceStepStats {
  std::string device;
  std::vector<NodeExecStats> node_stats;
};

struct StepStats {
  std::vector<DeviceStepStats> dev_stats;
};

// Collects the records of one traced run; nodes on several threads add to it at once.
class StepStatsCollector {
 public:
  void Add(const std::string& device, NodeExecStats stats);
  // Moves the records out into `out`, leaving the collector empty.
  void Finalize(StepStats* out);

 private:
  std::mutex mu_;
  StepStats stats_;
};

// Where a traced node reports: the run's collector and the prefix that names nodes of the
// function bodies being run ("" at the top level, "body_fn/" inside a loop body).
struct TraceScope {
  StepStatsCollector* collector = nullptr;
  std::string node_prefix;
};

// TensorFlow's StepStats wire format (tensorflow.StepStats), for RunMetadata.step_stats.
std::string SerializeStepStats(const StepStats& stats);

}  // namespace flowstone
