// Eager execution: ops run one at a time, as Python calls them, through the same kernels,
// schemas and shape functions as in a session.
//
//   EagerContext& ctx = EagerContext::Global();
//   std::vector<TensorHandle> out;
//   FS_RETURN_IF_ERROR(ctx.Execute("AddV2", {&a, &b}, {}, "", &out));
//
// The context caches, per (op, input dtypes, attrs, device), the node the kernel was built for
// (schema checked, attr defaults filled, type attrs inferred) and the kernel itself, so a call
// after the first does no graph work: it runs the op's shape function on the actual input shapes
// (graph mode's checks and messages) and the kernel with a KernelContext on the device.
//
// Gradient tapes record the ops that touch watched tensors. GradientTape::Gradient replays the
// recorded ops into a scratch graph, adds the gradient ops with AddGradients (the per-op GradFns
// tf.gradients uses) and executes those ops eagerly, so the backward pass itself is recorded by
// outer tapes (higher-order gradients). The scratch graph is kept per structure (the replayed
// ops, their attrs, and the leaves' dtypes and shapes), with each gradient op prepared once, so
// a training loop builds it once and then runs it op by op with no lookups. A tape holds only
// the values the recorded ops' gradients read.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flowstone/attr.h"
#include "flowstone/device.h"
#include "flowstone/resource.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

// A tensor held by eager execution: a value (sharing its buffer), the device whose memory holds
// it, and an id that gradient tapes refer to it by. Copies keep the id: they are the same tensor.
class TensorHandle {
 public:
  TensorHandle(Tensor tensor, Device* device);
  const Tensor& tensor() const { return tensor_; }
  Device* device() const { return device_; }
  int64_t id() const { return id_; }

 private:
  Tensor tensor_;
  Device* device_;
  int64_t id_;
};

class GradientTape;

class EagerContext {
 public:
  // The process-wide context (created on first use; lives for the process).
  static EagerContext& Global();

  // Runs op `op_type` on `inputs` with `attrs` (defaults filled in) on the device matching
  // `device` (a tf.device string; empty = the first GPU with a kernel for the op, else CPU:0).
  // Errors have TensorFlow's eager form: the message, then " [Op:<type>]" (and " name: <name>").
  // The op is recorded on the calling thread's recording tapes that watch one of its inputs.
  Status Execute(const std::string& op_type, const std::vector<const TensorHandle*>& inputs,
                 const AttrMap& attrs, const std::string& device, const std::string& name,
                 std::vector<TensorHandle>* outputs);

  // One op resolved for one signature (op, device, input dtypes, attrs): its node and kernel.
  // Execute is Prepare + Run; callers that run one signature many times (the operators of
  // EagerTensor, a backward pass) prepare once and keep the pointer, valid for the process.
  struct CachedOp;
  // Resolves `op_type` for inputs of `input_types` on the device `device` names (as Execute
  // chooses it); errors as Execute's.
  Status Prepare(const std::string& op_type, const std::vector<DType>& input_types,
                 const AttrMap& attrs, const std::string& device, CachedOp** out);
  // Runs a prepared op on `inputs`, whose dtypes must be the prepared ones.
  Status Run(CachedOp& op, const std::vector<const TensorHandle*>& inputs, const std::string& name,
             std::vector<TensorHandle>* outputs);

  // A handle for a host tensor (a converted Python value) on CPU:0, or copied to the device
  // `device` names.
  Status MakeHandle(Tensor value, const std::string& device, std::unique_ptr<TensorHandle>* out);
  // Copies a handle to the device `device` names (a no-op copy when it is there already).
  Status CopyToDevice(const TensorHandle& handle, const std::string& device,
                      std::unique_ptr<TensorHandle>* out);
  // The value in host memory (a device copy for GPU tensors).
  Status ToHost(const TensorHandle& handle, Tensor* out);

  // Eager variables live here (a resource handle points at a Var in this manager).
  ResourceMgr* resources() { return &resources_; }
  std::vector<DeviceAttributes> ListDevices();
  // True once an op has run eagerly: devices are then fixed, as in TensorFlow.
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }
  // Number of distinct (op, signature) entries built so far.
  int64_t cache_size();
  // Eager variables alive now: each lives while a tensor holding its handle does.
  int64_t num_variables();
  // tf.debugging.set_log_device_placement: each op then logs "AddV2: (AddV2): <device>" to
  // stderr, the line a session's placement log has.
  void set_log_device_placement(bool enabled) {
    log_device_placement_.store(enabled, std::memory_order_relaxed);
  }
  // tf.config.set_soft_device_placement (on by default, as in TensorFlow 2): when off, an op
  // whose tf.device names no device with a kernel for it fails instead of running elsewhere.
  void set_soft_device_placement(bool enabled) {
    soft_device_placement_.store(enabled, std::memory_order_relaxed);
  }
  bool soft_device_placement() const {
    return soft_device_placement_.load(std::memory_order_relaxed);
  }

  // The calling thread's tapes, outermost first.
  static std::vector<std::shared_ptr<GradientTape>>& ThreadTapes();

 private:
  EagerContext() = default;
  Status InitDevices();
  Status FindDevice(const std::string& requested, const std::string& op_type, Device** out);
  Status UnsatisfiableDevice(const std::string& requested) const;
  Status BuildOp(const std::string& op_type, const DType* input_types, size_t num_inputs,
                 const AttrMap& attrs, Device* device, std::unique_ptr<CachedOp>* out);
  Status GetCachedOp(const std::string& op_type, const DType* input_types, size_t num_inputs,
                     const AttrMap& attrs, Device* device, CachedOp** out);
  Status PrepareOn(const std::string& op_type, const DType* input_types, size_t num_inputs,
                   const AttrMap& attrs, const std::string& device, CachedOp** out);
  Status CheckShapes(CachedOp& op, const Tensor* in, int n_in, const std::string& name);
  void Record(CachedOp& op, const std::vector<const TensorHandle*>& inputs,
              const std::vector<TensorHandle>& outputs);
  // One eager variable's storage and the allocator of its handle tensors (see Run).
  class VariableOwner;
  std::shared_ptr<VariableOwner> OwnerOfVariable(const std::string& name);

  std::mutex mu_;
  std::once_flag devices_once_;
  Status devices_status_;
  std::vector<std::unique_ptr<Device>> devices_;
  Device* cpu_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<CachedOp>> cache_;
  ResourceMgr resources_;
  // Eager variables by name (a VarHandleOp's shared_name), while one is alive.
  std::mutex variables_mu_;
  std::unordered_map<std::string, std::weak_ptr<VariableOwner>> variables_;
  std::atomic<int64_t> next_step_{1};
  std::atomic<bool> initialized_{false};
  std::atomic<bool> log_device_placement_{false};
  std::atomic<bool> soft_device_placement_{true};
};

// A record of the ops run eagerly while it was active, for one backward pass (or many when
// persistent). Push/pop onto the thread's tapes with EagerContext::ThreadTapes.
class GradientTape {
 public:
  GradientTape(bool persistent, bool watch_accessed_variables)
      : persistent_(persistent), watch_accessed_variables_(watch_accessed_variables) {}

  bool persistent() const { return persistent_; }
  bool watch_accessed_variables() const { return watch_accessed_variables_; }
  // While false (tf.GradientTape.stop_recording), ops are not recorded.
  bool recording() const { return recording_; }
  void set_recording(bool recording) { recording_ = recording; }

  void Watch(const TensorHandle& tensor);
  bool IsWatched(int64_t id) const { return watched_.count(id) != 0; }
  // Records an op (its node in the eager cache, which lives for the process) whose inputs
  // include a watched tensor; its outputs become watched. Only the values flagged in
  // `keep_inputs` / `keep_outputs` (what the op's gradient reads, see GradientReads) are held;
  // of the others the tape keeps the dtype and shape.
  void Record(const Node& node, const std::vector<const TensorHandle*>& inputs,
              const std::vector<TensorHandle>& outputs, const std::vector<bool>& keep_inputs,
              const std::vector<bool>& keep_outputs);
  // Which inputs and outputs of `forward` its gradient function reads the values of; reads of
  // only the shape (Shape, Size, Rank, ZerosLike, OnesLike of it) do not count. All of them when
  // the gradient cannot be built.
  static void GradientReads(const Node& forward, std::vector<bool>* inputs,
                            std::vector<bool>* outputs);
  // Ids of the tensors whose values the tape holds (for tests of what recording keeps alive).
  std::vector<int64_t> HeldIds() const;
  // Forgets everything recorded and watched (tf.GradientTape.reset).
  void Reset();

  // d(sum of targets)/d(source) for each source; nullopt where no recorded path joins them or
  // the source is neither watched nor the output of a recorded op.
  // `output_gradients` (null entries = ones) weight the targets. The gradient ops run eagerly
  // and are recorded by the other tapes of the thread.
  Status Gradient(EagerContext& ctx, const std::vector<const TensorHandle*>& targets,
                  const std::vector<const TensorHandle*>& sources,
                  const std::vector<const TensorHandle*>& output_gradients,
                  std::vector<std::optional<TensorHandle>>* out);

  // Ids watched (for tf.GradientTape.watched_variables, in watch order).
  const std::vector<int64_t>& watch_order() const { return watch_order_; }

 private:
  // A tensor a recorded op read or wrote: its value only when the op's gradient reads it.
  struct TapeTensor {
    int64_t id;
    DType dtype;
    TensorShape shape;
    std::optional<TensorHandle> value;
  };
  struct Entry {
    const Node* node;
    std::vector<TapeTensor> inputs;
    std::vector<TapeTensor> outputs;
  };
  bool persistent_;
  bool watch_accessed_variables_;
  bool recording_ = true;
  std::unordered_set<int64_t> watched_;
  std::vector<int64_t> watch_order_;
  std::vector<Entry> entries_;
};

}  // namespace flowstone
