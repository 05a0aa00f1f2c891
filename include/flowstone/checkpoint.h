// Checkpoints: a session's variable values in one crash-safe file (what tf.train.Saver writes).
//
//   std::vector<std::pair<std::string, const Node*>> vars = {{"layer/w", w.handle.node}};
//   FS_RETURN_IF_ERROR(SaveCheckpoint(*session, vars, "/tmp/model.ckpt-100"));
//   ...
//   FS_RETURN_IF_ERROR(RestoreCheckpoint(*other_session, vars, "/tmp/model.ckpt-100"));
//
// Each pair is (checkpoint key, VarHandleOp node); the variable is the one the node's
// `shared_name` names in the session's ResourceMgr. No graph ops are involved, so saving in a
// loop never grows the graph.
//
// File format, version 1. All integers are little-endian; the CRCs are CRC32C (Castagnoli).
//
//   header   magic "FSTNCKPT" (8 bytes), u32 format version (1), u32 entry count,
//            u64 index size in bytes, u64 data size in bytes                        (32 bytes)
//   index    per entry: u32 key length, key bytes (UTF-8), u32 dtype (TensorFlow's DataType
//            number: DT_FLOAT = 1, ...), u32 rank, i64 dims[rank], u64 data offset (from the
//            start of the data section), u64 byte size, u32 CRC32C of those bytes
//   data     the entries' bytes, row-major, each entry's bytes contiguous
//   footer   u32 CRC32C of header + index, then magic "FSTNCKPT" again                (12 bytes)
//
// The footer's magic marks a completely written file; a file lacking it is truncated. Readers
// check the sizes the header promises against the file's size, the index CRC before trusting
// the index, and each entry's CRC before using its bytes, so damage is reported as DataLoss
// instead of being loaded as values.
//
// Crash safety: a checkpoint is written to `path + ".tmp-<pid>-<random>"`, fsynced, renamed onto
// `path`, and the directory is fsynced. A crash therefore leaves either the old file at `path`
// or the new one, never a partial one; at worst a stray ".tmp-" file stays behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flowstone/graph.h"
#include "flowstone/session.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

// (checkpoint key, VarHandleOp node) pairs.
using CheckpointVars = std::vector<std::pair<std::string, const Node*>>;

// What a checkpoint holds under one key.
struct CheckpointEntry {
  std::string key;
  DType dtype = DType::kInvalid;
  TensorShape shape;
};

// Saves the variables' current values to `path`. Fails with FailedPrecondition naming a variable
// that has no value yet, InvalidArgument for a key given twice or a node that is not a
// VarHandleOp; I/O errors name the file. Never leaves a partial file at `path`.
Status SaveCheckpoint(Session& session, const CheckpointVars& vars, const std::string& path);

// Sets the variables from the checkpoint at `path`, creating them in the session when no run has
// touched them yet (so restoring needs no initializer). Everything is read and checked before any
// variable changes, so a failed restore leaves the session as it was. Errors: NotFound for a
// missing file or key, InvalidArgument for a dtype or shape that differs from the variable's,
// DataLoss for a damaged or truncated file.
Status RestoreCheckpoint(Session& session, const CheckpointVars& vars, const std::string& path);

// The keys, dtypes and shapes in a checkpoint, sorted by key.
Status ListCheckpoint(const std::string& path, std::vector<CheckpointEntry>* entries);

// The two halves of SaveCheckpoint and RestoreCheckpoint, for callers that must not hold a lock
// during file I/O (the Python bindings release the GIL for the I/O only):
//
// Takes the variables' current values. The tensors share the variables' buffers; variables copy
// on write, so later updates do not change them.
Status SnapshotVariables(Session& session, const CheckpointVars& vars,
                         std::vector<std::pair<std::string, Tensor>>* values);
// Writes the tensors under their keys, atomically as described above.
Status WriteCheckpoint(const std::vector<std::pair<std::string, Tensor>>& values,
                       const std::string& path);
// Reads the tensors stored under `keys`, checking every CRC.
Status ReadCheckpointTensors(const std::string& path, const std::vector<std::string>& keys,
                             std::vector<Tensor>* values);
// Reads the values for `vars` and checks their dtypes and shapes against the VarHandleOp nodes;
// touches no session.
Status ReadCheckpointForVariables(const CheckpointVars& vars, const std::string& path,
                                  std::vector<Tensor>* values);
// Assigns values[i] to the variable of vars[i], after checking all of them against variables
// the session already holds.
Status AssignVariables(Session& session, const CheckpointVars& vars,
                       const std::vector<Tensor>& values);

// Replaces the file at `path` with `contents` the same crash-safe way (for the small
// "checkpoint" state file next to the checkpoints).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace flowstone
