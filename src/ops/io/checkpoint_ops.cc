// The ops TensorFlow's savers put in graphs: SaveV2 and RestoreV2 (tensors to and from a V2
// checkpoint, the tensor bundle of flowstone/tensor_bundle.h), MergeV2Checkpoints (shards into
// one checkpoint) and ShardedFilename. SavedModels written by TensorFlow 2 restore their
// variables by running a function built from them; DisableCopyOnRead, which those functions
// also call, has nothing to do here, since Flowstone's variables copy on write.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/tensor_bundle.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

// The tensor names, checked against shape_and_slices: whole tensors only ("" slices).
Status ReadNames(const Tensor& names, const Tensor& slices, int64_t expected,
                 std::vector<std::string>* out) {
  if (names.rank() != 1 || names.num_elements() != expected) {
    return errors::InvalidArgument("tensor_names must be a vector of ", expected,
                                   " names, got shape ", names.shape().ToString());
  }
  if (slices.shape() != names.shape()) {
    return errors::InvalidArgument("shape_and_slices must have the shape of tensor_names (",
                                   names.shape().ToString(), "), got ", slices.shape().ToString());
  }
  for (int64_t i = 0; i < expected; ++i) {
    if (!slices.data<std::string>()[i].empty()) {
      return errors::Unimplemented("Checkpoint slices (shape_and_slices \"",
                                   slices.data<std::string>()[i], "\" for tensor '",
                                   names.data<std::string>()[i],
                                   "') of partitioned variables are not supported");
    }
    out->push_back(names.data<std::string>()[i]);
  }
  return Status::OK();
}

Status RestoreV2Kernel(KernelContext& ctx) {
  std::string prefix;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(0), "prefix", &prefix));
  std::vector<std::string> names;
  FS_RETURN_IF_ERROR(ReadNames(ctx.input(1), ctx.input(2), ctx.num_outputs(), &names));
  std::vector<Tensor> values;
  FS_RETURN_IF_ERROR(ReadTensorBundle(prefix, names, &values));
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (values[i].dtype() != ctx.output_type(i)) {
      return errors::InvalidArgument("tensor '", names[i], "' of checkpoint ", prefix, " is ",
                                     DTypeName(values[i].dtype()), ", but the graph expects ",
                                     DTypeName(ctx.output_type(i)));
    }
    ctx.SetOutput(i, std::move(values[i]));
  }
  return Status::OK();
}

Status RestoreV2Shape(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape::Unknown());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("RestoreV2")
                   .Input("prefix", "string")
                   .Input("tensor_names", "string")
                   .Input("shape_and_slices", "string")
                   .OutputTypeList("tensors", "dtypes")
                   .Stateful()
                   .Shape(RestoreV2Shape)
                   .Kernel("CPU", RestoreV2Kernel)
                   .NotDifferentiable()
                   .Doc("The tensors stored under tensor_names in the V2 checkpoint at prefix."));

Status SaveV2Kernel(KernelContext& ctx) {
  std::string prefix;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(0), "prefix", &prefix));
  std::vector<std::string> names;
  const int count = ctx.num_inputs() - 3;
  FS_RETURN_IF_ERROR(ReadNames(ctx.input(1), ctx.input(2), count, &names));
  std::vector<std::pair<std::string, Tensor>> values;
  for (int i = 0; i < count; ++i) values.emplace_back(names[i], ctx.input(3 + i));
  return WriteTensorBundle(values, prefix);
}

FS_REGISTER_OP(OpBuilder("SaveV2")
                   .Input("prefix", "string")
                   .Input("tensor_names", "string")
                   .Input("shape_and_slices", "string")
                   .InputTypeList("tensors", "dtypes")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", SaveV2Kernel)
                   .NotDifferentiable()
                   .Doc("Writes the tensors under tensor_names as a V2 checkpoint at prefix."));

// Merges the checkpoints into `destination_prefix` and removes them (and, with delete_old_dirs,
// their directories once empty).
Status MergeV2CheckpointsKernel(KernelContext& ctx) {
  const Tensor& sources = ctx.input(0);
  std::string destination;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "destination_prefix", &destination));
  if (sources.rank() > 1) {
    return errors::InvalidArgument("checkpoint_prefixes must be a vector, got shape ",
                                   sources.shape().ToString());
  }
  std::vector<std::pair<std::string, Tensor>> merged;
  for (int64_t i = 0; i < sources.num_elements(); ++i) {
    const std::string& source = sources.data<std::string>()[i];
    std::vector<CheckpointEntry> entries;
    FS_RETURN_IF_ERROR(ListTensorBundle(source, &entries));
    std::vector<std::string> keys;
    for (const CheckpointEntry& entry : entries) keys.push_back(entry.key);
    std::vector<Tensor> values;
    FS_RETURN_IF_ERROR(ReadTensorBundle(source, keys, &values));
    for (size_t k = 0; k < keys.size(); ++k) merged.emplace_back(keys[k], std::move(values[k]));
  }
  FS_RETURN_IF_ERROR(WriteTensorBundle(merged, destination));
  const bool delete_dirs = ctx.attrs().GetOr<bool>("delete_old_dirs", true);
  for (int64_t i = 0; i < sources.num_elements(); ++i) {
    const std::filesystem::path source(sources.data<std::string>()[i]);
    if (source == std::filesystem::path(destination)) continue;
    std::error_code ignored;
    std::filesystem::remove(source.string() + ".index", ignored);
    for (const auto& file : std::filesystem::directory_iterator(source.parent_path(), ignored)) {
      if (file.path().filename().string().rfind(source.filename().string() + ".data-", 0) == 0) {
        std::filesystem::remove(file.path(), ignored);
      }
    }
    if (delete_dirs) std::filesystem::remove(source.parent_path(), ignored);  // only if empty
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MergeV2Checkpoints")
                   .Input("checkpoint_prefixes", "string")
                   .Input("destination_prefix", "string")
                   .Attr("delete_old_dirs", true)
                   .Attr("allow_missing_files", false)
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", MergeV2CheckpointsKernel)
                   .NotDifferentiable()
                   .Doc("Merges V2 checkpoints (a saver's shards) into one and removes them."));

Status ShardedFilenameKernel(KernelContext& ctx) {
  std::string base;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(0), "basename", &base));
  const Tensor& shard = ctx.input(1);
  const Tensor& shards = ctx.input(2);
  if (shard.rank() != 0 || shards.rank() != 0) {
    return errors::InvalidArgument("shard and num_shards must be scalars");
  }
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d", shard.data<int32_t>()[0],
                shards.data<int32_t>()[0]);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  *out->data<std::string>() = base + suffix;
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ShardedFilename")
                   .Input("basename", "string")
                   .Input("shard", "int32")
                   .Input("num_shards", "int32")
                   .Output("filename", "string")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ShardedFilenameKernel)
                   .NotDifferentiable()
                   .Doc("basename-SSSSS-of-NNNNN, the file name of one shard."));

Status DisableCopyOnReadKernel(KernelContext&) { return Status::OK(); }

FS_REGISTER_OP(OpBuilder("DisableCopyOnRead")
                   .Input("resource", "resource")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", DisableCopyOnReadKernel)
                   .NotDifferentiable()
                   .Doc("Accepted for TensorFlow 2's save functions: Flowstone's variables copy "
                        "on write, so reads never need to copy."));

}  // namespace
}  // namespace flowstone
