// TensorFlow's V2 checkpoint format, the tensor bundle: what tf.train.Saver writes by default.
//
//   <prefix>.index                  a table (src/io/table.h) mapping "" to a BundleHeaderProto
//                                   and each key to a BundleEntryProto (proto/tensor_bundle.proto):
//                                   dtype, shape, shard, offset, size and masked CRC32C
//   <prefix>.data-00000-of-00001    the tensors' bytes, little-endian, one after another
//
// Files written here are read by TensorFlow and the other way round. Both files are written to
// temporary names, fsynced and renamed (data first, index last), so a crash never leaves a
// partial file under a checkpoint's name; checkpoints saved under other prefixes (Saver's
// model.ckpt-<step>) are untouched. Readers check everything an index claims against the data
// files (bounds, sizes, CRCs): damage is DataLoss, never a crash or an allocation larger than
// the data file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "flowstone/checkpoint.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

// Whether `prefix.index` exists.
bool IsTensorBundle(const std::string& prefix);

// Writes the tensors under their keys. InvalidArgument for an empty or repeated key or a
// resource/variant tensor.
Status WriteTensorBundle(const std::vector<std::pair<std::string, Tensor>>& values,
                         const std::string& prefix);

// The keys, dtypes and shapes of the bundle's whole tensors, sorted by key (an object-based
// checkpoint's "_CHECKPOINTABLE_OBJECT_GRAPH" string among them, as TensorFlow lists it). Entries
// of dtypes Flowstone lacks and slices of partitioned variables are left out.
Status ListTensorBundle(const std::string& prefix, std::vector<CheckpointEntry>* entries);

// Reads the tensors stored under `keys`. NotFound for a missing key (naming the checkpoint),
// Unimplemented for a partitioned variable or an unsupported dtype, DataLoss for damage.
Status ReadTensorBundle(const std::string& prefix, const std::vector<std::string>& keys,
                        std::vector<Tensor>* values);

}  // namespace flowstone
