#include "flowstone/step_stats.h"

#include "proto/step_stats.pb.h"

namespace flowstone {

void StepStatsCollector::Add(const std::string& device, NodeExecStats stats) {
  std::lock_guard<std::mutex> lock(mu_);
  // A run touches few devices, so a linear search beats a map here.
  for (DeviceStepStats& d : stats_.dev_stats) {
    if (d.device == device) {
      d.node_stats.push_back(std::move(stats));
      return;
    }
  }
  stats_.dev_stats.push_back({device, {}});
  stats_.dev_stats.back().node_stats.push_back(std::move(stats));
}

void StepStatsCollector::Finalize(StepStats* out) {
  std::lock_guard<std::mutex> lock(mu_);
  *out = std::move(stats_);
  stats_ = StepStats();
}

namespace {

constexpr int64_t kNanosPerMicro = 1000;

void ExportNode(const NodeExecStats& in, proto::NodeExecStats* out) {
  out->set_node_name(in.node_name);
  out->set_timeline_label(in.timeline_label);
  out->set_thread_id(in.thread_id);
  out->set_all_start_nanos(in.all_start_nanos);
  out->set_op_start_rel_nanos(in.op_start_rel_nanos);
  out->set_op_end_rel_nanos(in.op_end_rel_nanos);
  out->set_all_end_rel_nanos(in.all_end_rel_nanos);
  out->set_scheduled_nanos(in.all_start_nanos);
  // The micros fields are what TF's timeline and profiler read; each is its nanos field cut to
  // whole microseconds, as TensorFlow fills them.
  out->set_all_start_micros(in.all_start_nanos / kNanosPerMicro);
  out->set_op_start_rel_micros(in.op_start_rel_nanos / kNanosPerMicro);
  out->set_op_end_rel_micros(in.op_end_rel_nanos / kNanosPerMicro);
  out->set_all_end_rel_micros(in.all_end_rel_nanos / kNanosPerMicro);
  out->set_scheduled_micros(in.all_start_nanos / kNanosPerMicro);
  for (const NodeOutputStats& o : in.outputs) {
    proto::NodeOutput* output = out->add_output();
    output->set_slot(o.slot);
    proto::TensorDescription* desc = output->mutable_tensor_description();
    desc->set_dtype(static_cast<proto::DataType>(DTypeToTfEnum(o.dtype)));
    proto::TensorShapeProto* shape = desc->mutable_shape();
    for (int i = 0; i < o.shape.rank(); ++i) shape->add_dim()->set_size(o.shape.dim(i));
    proto::AllocationDescription* alloc = desc->mutable_allocation_description();
    alloc->set_requested_bytes(o.requested_bytes);
    alloc->set_allocated_bytes(o.requested_bytes);
    alloc->set_allocator_name(o.allocator_name);
  }
  if (!in.allocator_name.empty()) {
    proto::AllocatorMemoryUsed* memory = out->add_memory();
    memory->set_allocator_name(in.allocator_name);
    memory->set_total_bytes(in.output_bytes);
    memory->set_peak_bytes(in.output_bytes);
    memory->set_allocator_bytes_in_use(in.allocator_bytes_in_use);
  }
}

}  // namespace

std::string SerializeStepStats(const StepStats& stats) {
  proto::StepStats out;
  for (const DeviceStepStats& d : stats.dev_stats) {
    proto::DeviceStepStats* dev = out.add_dev_stats();
    dev->set_device(d.device);
    for (const NodeExecStats& n : d.node_stats) ExportNode(n, dev->add_node_stats());
  }
  return out.SerializeAsString();
}

}  // namespace flowstone
