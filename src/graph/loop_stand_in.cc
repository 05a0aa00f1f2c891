#include "graph/loop_stand_in.h"

#include <string>
#include <variant>

namespace flowstone {

std::unordered_map<int, int> RecordingLoopStandIns(const Graph& graph,
                                                   const std::vector<char>& needed) {
  std::unordered_map<int, int> stand_ins;
  for (int id = 0; id < static_cast<int>(needed.size()); ++id) {
    if (!needed[id]) continue;
    const Node* record = graph.node_unlocked(id);
    const AttrValue* marker = record->attrs().Find(kRecordsLoopAttr);
    if (marker == nullptr || !std::holds_alternative<std::string>(*marker)) continue;
    const Node* forward = graph.FindNodeUnlocked(std::get<std::string>(*marker));
    if (forward == nullptr || !needed[forward->id()] || !forward->control_inputs().empty() ||
        stand_ins.count(forward->id())) {
      continue;
    }
    // The recording loop's inputs start with the forward loop's, and it does not read the
    // forward loop (which would make the substitution a cycle).
    bool same_inputs = record->num_inputs() >= forward->num_inputs();
    for (int i = 0; same_inputs && i < forward->num_inputs(); ++i) {
      same_inputs = record->inputs()[i] == forward->inputs()[i];
    }
    for (int i = 0; same_inputs && i < record->num_inputs(); ++i) {
      same_inputs = record->inputs()[i].node != forward;
    }
    if (same_inputs) stand_ins[forward->id()] = id;
  }
  return stand_ins;
}

}  // namespace flowstone
