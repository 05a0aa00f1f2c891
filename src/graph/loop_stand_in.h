// A While loop's gradient adds a recording loop: the same loop, which also records each
// iteration's loop variables for the backward pass (src/ops/control_flow/while_ops.cc). Its first
// outputs are the forward loop's outputs, so a run that needs both loops can run the recording
// loop alone and read the forward results from it: the forward values are then recorded during
// the forward pass rather than recomputed, and side effects in the body happen once.
#pragma once

#include <unordered_map>
#include <vector>

#include "flowstone/graph.h"

namespace flowstone {

// The attr that marks a recording loop, naming the forward While it records.
inline constexpr char kRecordsLoopAttr[] = "_records_loop";

// For the nodes marked in `needed` (indexed by node id) of `graph`, whose mutex the caller
// holds: the forward loops a needed recording loop can stand in for, as {forward id: recording
// id}. A forward loop qualifies when it has no control inputs and the recording loop reads the
// same inputs. The caller drops the forward loops from `needed` and reads their outputs from
// the recording loops' outputs of the same index.
std::unordered_map<int, int> RecordingLoopStandIns(const Graph& graph,
                                                   const std::vector<char>& needed);

}  // namespace flowstone
