// TF1 TensorArray and stack ops -> TensorList ops. See tensor_array_v1.h.
#include "graph/tensor_array_v1.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "proto/graph.pb.h"

namespace flowstone {
namespace {

// Ops that pass a tensor on unchanged (TF1's control flow and Identity): a handle or a flow
// travels through them.
bool IsPassThrough(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Enter",  "RefEnter",  "Exit",          "RefExit",          "Merge",   "RefMerge",
      "Switch", "RefSwitch", "NextIteration", "RefNextIteration", "Identity"};
  return kOps.count(op) > 0;
}

// The TensorArray ops that take a handle as input 0, and the input that is their flow (-1: none).
int FlowInput(const std::string& op) {
  static const std::map<std::string, int> kOps = {
      {"TensorArrayWriteV3", 3},  {"TensorArrayReadV3", 2}, {"TensorArrayScatterV3", 3},
      {"TensorArrayGatherV3", 2}, {"TensorArraySizeV3", 1}, {"TensorArrayCloseV3", -1}};
  auto it = kOps.find(op);
  return it == kOps.end() ? -2 : it->second;
}

struct Input {
  std::string node;
  int index;  // -1: a control input
};

Input ParseInput(const std::string& input) {
  if (!input.empty() && input[0] == '^') return {input.substr(1), -1};
  size_t colon = input.rfind(':');
  if (colon == std::string::npos) return {input, 0};
  const std::string digits = input.substr(colon + 1);
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {input, 0};  // malformed: the importer reports it
  }
  return {input.substr(0, colon), std::stoi(digits)};
}

const proto::AttrValue* FindAttr(const proto::NodeDef& node, const char* name) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? nullptr : &it->second;
}

// An int32 Const of an element shape: -1 for an unknown rank, else the dims (-1 unknown).
proto::NodeDef ShapeConst(const std::string& name, const proto::AttrValue* shape) {
  proto::NodeDef node;
  node.set_name(name);
  node.set_op("Const");
  (*node.mutable_attr())["dtype"].set_type(proto::DT_INT32);
  proto::TensorProto* value = (*node.mutable_attr())["value"].mutable_tensor();
  value->set_dtype(proto::DT_INT32);
  if (shape == nullptr || !shape->has_shape() || shape->shape().unknown_rank()) {
    value->add_int_val(-1);
    return node;
  }
  value->mutable_tensor_shape()->add_dim()->set_size(shape->shape().dim_size());
  for (const auto& dim : shape->shape().dim()) {
    value->add_int_val(static_cast<int32_t>(std::max<int64_t>(dim.size(), -1)));
  }
  return node;
}

}  // namespace

bool HasTensorArraysV3(const proto::GraphDef& def) {
  return std::any_of(def.node().begin(), def.node().end(),
                     [](const proto::NodeDef& node) { return node.op() == "TensorArrayV3"; });
}

Status RewriteTensorArraysV3(proto::GraphDef* def) {
  const int n = def->node_size();
  std::unordered_map<std::string, int> index_of;
  for (int i = 0; i < n; ++i) index_of.emplace(def->node(i).name(), i);
  // (consumer, input position, producer's output index) per producer.
  std::vector<std::vector<std::tuple<int, int, int>>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < def->node(i).input_size(); ++k) {
      Input in = ParseInput(def->node(i).input(k));
      auto it = index_of.find(in.node);
      if (in.index >= 0 && it != index_of.end()) consumers[it->second].emplace_back(i, k, in.index);
    }
  }

  // Handles: from each TensorArrayV3's output 0 through pass-through ops to the ops that use them.
  std::vector<int> array_of(n, -1);  // the TensorArrayV3 whose handle an op takes
  std::set<int> carriers;            // pass-through nodes that carry a handle
  std::deque<int> queue;
  for (int i = 0; i < n; ++i) {
    if (def->node(i).op() != "TensorArrayV3") continue;
    array_of[i] = i;
    queue.push_back(i);
  }
  while (!queue.empty()) {
    const int p = queue.front();
    queue.pop_front();
    const bool is_array = def->node(p).op() == "TensorArrayV3";
    for (const auto& [c, position, index] : consumers[p]) {
      if (is_array && index != 0) continue;  // the flow
      const std::string& op = def->node(c).op();
      if (IsPassThrough(op)) {
        if (carriers.insert(c).second) {
          array_of[c] = array_of[p];
          queue.push_back(c);
        }
      } else if (FlowInput(op) >= -1 && position == 0) {
        array_of[c] = array_of[p];
      } else {
        // A handle used another way: leave the graph alone (the import names the op).
        return Status::OK();
      }
    }
  }

  // Flows: every output that was a TensorArray's float flow becomes a variant list.
  std::vector<proto::NodeDef> added;
  std::set<std::pair<int, int>> flows;  // (node, output) that carry a list
  for (int i = 0; i < n; ++i) {
    proto::NodeDef& node = *def->mutable_node(i);
    const std::string op = node.op();
    if (op == "TensorArrayV3") {
      flows.insert({i, 1});
      continue;
    }
    const int flow_input = FlowInput(op);
    if (flow_input < -1 || array_of[i] < 0 || carriers.count(i)) continue;
    const proto::NodeDef& array = def->node(array_of[i]);
    const proto::AttrValue* dtype = FindAttr(array, "dtype");
    if (dtype == nullptr) {
      return errors::InvalidArgument("TensorArrayV3 '", array.name(), "' has no dtype attr");
    }
    if (node.input_size() <= flow_input) {
      return errors::InvalidArgument("Node '", node.name(), "' (", op, ") has ", node.input_size(),
                                     " inputs; it needs ", flow_input + 1);
    }
    std::vector<std::string> in(node.input().begin(), node.input().end());
    std::vector<std::string> controls;
    for (const std::string& input : in) {
      if (!input.empty() && input[0] == '^') controls.push_back(input);
    }
    proto::NodeDef rewritten;
    rewritten.set_name(node.name());
    rewritten.set_device(node.device());
    auto& attrs = *rewritten.mutable_attr();
    if (op != "TensorArrayCloseV3" && op != "TensorArraySizeV3") {
      attrs["element_dtype"].set_type(dtype->type());
    }
    auto shape_input = [&](const proto::AttrValue* shape) {
      proto::NodeDef constant = ShapeConst(node.name() + "/_element_shape", shape);
      std::string name = constant.name();
      added.push_back(std::move(constant));
      return name;
    };
    if (op == "TensorArrayWriteV3") {
      rewritten.set_op("TensorListSetItem");
      for (const std::string& s : {in[3], in[1], in[2]}) rewritten.add_input(s);
      const proto::AttrValue* dynamic = FindAttr(array, "dynamic_size");
      attrs["resize_if_index_out_of_bounds"].set_b(dynamic != nullptr && dynamic->b());
      flows.insert({i, 0});
    } else if (op == "TensorArrayReadV3") {
      rewritten.set_op("TensorListGetItem");
      for (const std::string& s : {in[2], in[1], shape_input(nullptr)}) rewritten.add_input(s);
      attrs["Tshape"].set_type(proto::DT_INT32);
    } else if (op == "TensorArrayScatterV3") {
      rewritten.set_op("TensorListScatterIntoExistingList");
      for (const std::string& s : {in[3], in[2], in[1]}) rewritten.add_input(s);
      flows.insert({i, 0});
    } else if (op == "TensorArrayGatherV3") {
      rewritten.set_op("TensorListGather");
      for (const std::string& s : {in[2], in[1], shape_input(FindAttr(node, "element_shape"))}) {
        rewritten.add_input(s);
      }
    } else if (op == "TensorArraySizeV3") {
      rewritten.set_op("TensorListLength");
      rewritten.add_input(in[1]);
    } else {
      rewritten.set_op("NoOp");
    }
    for (const std::string& control : controls) rewritten.add_input(control);
    node = std::move(rewritten);
  }

  // The flows' pass-through ops now carry variants.
  std::deque<std::pair<int, int>> pending(flows.begin(), flows.end());
  while (!pending.empty()) {
    const auto [p, output] = pending.front();
    pending.pop_front();
    for (const auto& [c, position, index] : consumers[p]) {
      if (index != output || carriers.count(c) || !IsPassThrough(def->node(c).op())) continue;
      (*def->mutable_node(c)->mutable_attr())["T"].set_type(proto::DT_VARIANT);
      const int outputs = def->node(c).op().find("Switch") != std::string::npos ? 2 : 1;
      for (int k = 0; k < outputs; ++k) {
        if (flows.insert({c, k}).second) pending.push_back({c, k});
      }
    }
  }

  // Each TensorArrayV3 becomes the list its flow was; handles and their carriers go.
  for (int i = 0; i < n; ++i) {
    proto::NodeDef& node = *def->mutable_node(i);
    if (node.op() != "TensorArrayV3") continue;
    const proto::AttrValue* dtype = FindAttr(node, "dtype");
    proto::NodeDef list;
    list.set_name(node.name());
    list.set_op("TensorListReserve");
    list.set_device(node.device());
    list.add_input(node.name() + "/_element_shape");
    for (const std::string& input : node.input()) list.add_input(input);
    (*list.mutable_attr())["element_dtype"].set_type(dtype ? dtype->type() : proto::DT_INVALID);
    (*list.mutable_attr())["shape_type"].set_type(proto::DT_INT32);
    added.push_back(ShapeConst(node.name() + "/_element_shape", FindAttr(node, "element_shape")));
    node = std::move(list);
  }
  std::set<std::string> removed;
  for (int c : carriers) removed.insert(def->node(c).name());
  google::protobuf::RepeatedPtrField<proto::NodeDef> nodes;
  for (int i = 0; i < n; ++i) {
    if (carriers.count(i)) continue;
    proto::NodeDef* node = nodes.Add();
    *node = std::move(*def->mutable_node(i));
    auto* inputs = node->mutable_input();
    for (int k = inputs->size() - 1; k >= 0; --k) {
      Input in = ParseInput(inputs->Get(k));
      auto it = index_of.find(in.node);
      if (in.index < 0 && removed.count(in.node)) {
        inputs->DeleteSubrange(k, 1);
      } else if (in.index == 1 && it != index_of.end() && array_of[it->second] == it->second) {
        *inputs->Mutable(k) = in.node;  // a TensorArrayV3's flow is now the list, output 0
      }
    }
  }
  for (proto::NodeDef& node : added) *nodes.Add() = std::move(node);
  def->mutable_node()->Swap(&nodes);
  return Status::OK();
}

namespace {

// The names of the LoopConds of the TF1 loops, by frame: a loop variable's Enter feeds a Merge
// that feeds a Switch on the LoopCond.
std::map<std::string, std::string> LoopCondsByFrame(
    const proto::GraphDef& def, const std::unordered_map<std::string, int>& index_of,
    const std::vector<std::vector<std::tuple<int, int, int>>>& consumers) {
  std::map<std::string, std::string> loop_conds;
  for (int i = 0; i < def.node_size(); ++i) {
    const proto::NodeDef& enter = def.node(i);
    const proto::AttrValue* frame = FindAttr(enter, "frame_name");
    const proto::AttrValue* constant = FindAttr(enter, "is_constant");
    if (enter.op() != "Enter" || frame == nullptr || (constant != nullptr && constant->b())) {
      continue;
    }
    for (const auto& [merge, p1, i1] : consumers[i]) {
      if (def.node(merge).op() != "Merge") continue;
      for (const auto& [sw, p2, i2] : consumers[merge]) {
        if (def.node(sw).op() != "Switch" || p2 != 0 || def.node(sw).input_size() < 2) continue;
        Input pred = ParseInput(def.node(sw).input(1));
        auto it = index_of.find(pred.node);
        if (it != index_of.end() && def.node(it->second).op() == "LoopCond") {
          loop_conds.emplace(frame->s(), pred.node);
        }
      }
    }
  }
  return loop_conds;
}

proto::NodeDef PassThrough(const std::string& name, const char* op,
                           std::vector<std::string> inputs) {
  proto::NodeDef node;
  node.set_name(name);
  node.set_op(op);
  for (std::string& input : inputs) node.add_input(std::move(input));
  (*node.mutable_attr())["T"].set_type(proto::DT_VARIANT);
  if (std::string(op) == "Merge") (*node.mutable_attr())["N"].set_i(2);
  return node;
}

// Makes the stack's Enter into frame `frame` a loop variable of that loop: Enter -> Merge ->
// Switch(LoopCond) -> Identity (what `op_node` takes instead of the handle) and NextIteration
// (of `next`, the updated list) back into the Merge, plus an Exit when `exit` is named.
void ThreadThroughLoop(proto::GraphDef* def, int enter, const std::string& loop_cond,
                       const std::string& base, const std::string& next, bool exit,
                       std::vector<proto::NodeDef>* added) {
  proto::NodeDef& node = *def->mutable_node(enter);
  (*node.mutable_attr())["is_constant"].set_b(false);
  (*node.mutable_attr())["T"].set_type(proto::DT_VARIANT);
  added->push_back(PassThrough(base + "/_merge", "Merge", {node.name(), base + "/_next"}));
  added->push_back(PassThrough(base + "/_switch", "Switch", {base + "/_merge", loop_cond}));
  added->push_back(PassThrough(base + "/_list", "Identity", {base + "/_switch:1"}));
  added->push_back(PassThrough(base + "/_next", "NextIteration", {next}));
  if (exit) added->push_back(PassThrough(base + "/_exit", "Exit", {base + "/_switch"}));
}

// A stack's Enters into loops and the op (push or pop) that takes its handle, through the
// Switches (node, output used) of the conds inside the innermost loop that lead to that op. A
// value of a nested loop has its stack enter the outer loop, then the inner one, so `enters`
// holds a chain, outermost first.
struct StackUse {
  std::vector<int> enters;
  std::vector<std::pair<int, int>> switches;
  int op = -1;
};

// The name prefix of the nodes that carry a stack's list through loop `level` (0: outermost) of
// its `side` ("/_push" or "/_pop"). The outermost one's Exit, "<stack>/_push/_exit", is what the
// backward loops start from.
std::string LevelBase(const std::string& stack, const char* side, size_t level) {
  return level == 0 ? stack + side : StrCat(stack, side, level);
}

// Carries the list through the conds of `use` (each Switch now switches the list, and a new Merge
// after each joins the updated list of the branch taken with the untouched one of the other);
// returns the list after the outermost cond, given `updated` (the list the op returns).
std::string ThreadThroughConds(proto::GraphDef* def, const StackUse& use, const std::string& base,
                               std::string updated, std::vector<proto::NodeDef>* added) {
  if (use.switches.empty()) return updated;
  def->mutable_node(use.switches[0].first)->set_input(0, base + "/_list");
  for (int k = static_cast<int>(use.switches.size()) - 1; k >= 0; --k) {
    proto::NodeDef& sw = *def->mutable_node(use.switches[k].first);
    (*sw.mutable_attr())["T"].set_type(proto::DT_VARIANT);
    const std::string merge = StrCat(base, "/_cond_merge_", k);
    added->push_back(
        PassThrough(merge, "Merge", {updated, StrCat(sw.name(), ":", 1 - use.switches[k].second)}));
    updated = merge;
  }
  return updated;
}

}  // namespace

bool HasStacksV2(const proto::GraphDef& def) {
  return std::any_of(def.node().begin(), def.node().end(),
                     [](const proto::NodeDef& node) { return node.op() == "StackV2"; });
}

Status RewriteStacksV2(proto::GraphDef* def) {
  const int n = def->node_size();
  std::unordered_map<std::string, int> index_of;
  for (int i = 0; i < n; ++i) index_of.emplace(def->node(i).name(), i);
  std::vector<std::vector<std::tuple<int, int, int>>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < def->node(i).input_size(); ++k) {
      Input in = ParseInput(def->node(i).input(k));
      auto it = index_of.find(in.node);
      if (in.index >= 0 && it != index_of.end()) consumers[it->second].emplace_back(i, k, in.index);
    }
  }
  const std::map<std::string, std::string> loop_conds = LoopCondsByFrame(*def, index_of, consumers);
  // How Enter `enter` reaches the one op of `op_type` that takes its handle: directly, through
  // the Enters of loops nested in its loop, then through the Switches of conds inside the
  // innermost loop (each passing it on from one output).
  auto follow = [&](int enter, const char* op_type, StackUse* use) {
    use->enters = {enter};
    for (int current = enter, hops = 0; hops < n; ++hops) {
      const auto& users = consumers[current];
      if (users.size() != 1) return false;
      const auto& [user, position, index] = users[0];
      if (!use->switches.empty()) use->switches.back().second = index;
      if (position != 0) return false;
      const std::string& op = def->node(user).op();
      if (op == op_type) {
        use->op = user;
        return true;
      }
      if (op == "Enter" && use->switches.empty()) {
        use->enters.push_back(user);
      } else if (op == "Switch") {
        use->switches.push_back({user, -1});
      } else {
        return false;
      }
      current = user;
    }
    return false;
  };
  auto loop_cond_of = [&](int enter) -> const std::string* {
    const proto::AttrValue* frame = FindAttr(def->node(enter), "frame_name");
    if (frame == nullptr) return nullptr;
    auto it = loop_conds.find(frame->s());
    return it == loop_conds.end() ? nullptr : &it->second;
  };
  std::vector<proto::NodeDef> added;
  auto in_loops = [&](const StackUse& use) {
    return std::all_of(use.enters.begin(), use.enters.end(),
                       [&](int enter) { return loop_cond_of(enter) != nullptr; });
  };
  // Makes the list a loop variable of each loop of `use`, innermost first: `next` is the list the
  // innermost loop's body ends with; each outer loop's body ends with the inner loop's Exit, and
  // each inner Enter takes the list inside the loop around it.
  auto thread_through_loops = [&](const StackUse& use, const std::string& name, const char* side,
                                  std::string next, bool exit) {
    for (size_t level = use.enters.size(); level-- > 0;) {
      const std::string base = LevelBase(name, side, level);
      const bool inner = level + 1 < use.enters.size();
      ThreadThroughLoop(def, use.enters[level], *loop_cond_of(use.enters[level]), base, next,
                        exit || level > 0, &added);
      if (inner) def->mutable_node(use.enters[level + 1])->set_input(0, base + "/_list");
      next = base + "/_exit";
    }
  };
  std::map<std::string, std::string> popped;  // a pop's name -> its value's new name
  for (int s = 0; s < n; ++s) {
    if (def->node(s).op() != "StackV2") continue;
    // TF1's gradient stacks: pushed in one loop (the forward one) and popped in another (the
    // backward one), each through an Enter; any other use is left for the import to report.
    StackUse push_use, pop_use;
    bool other_use = consumers[s].size() != 2;
    for (const auto& [enter, position, index] : consumers[s]) {
      if (def->node(enter).op() != "Enter") other_use = true;
      StackUse push_try, pop_try;
      if (follow(enter, "StackPushV2", &push_try)) {
        push_use = push_try;
      } else if (follow(enter, "StackPopV2", &pop_try)) {
        pop_use = pop_try;
      }
    }
    const int push = push_use.op, pop = pop_use.op;
    if (other_use || push < 0 || pop < 0 || !in_loops(push_use) || !in_loops(pop_use)) continue;
    // The pushed value read back through the push: left as is.
    if (!consumers[push].empty()) continue;
    const proto::AttrValue* elem_attr = FindAttr(def->node(s), "elem_type");
    if (elem_attr == nullptr) {
      return errors::InvalidArgument("StackV2 '", def->node(s).name(), "' has no elem_type attr");
    }
    const proto::DataType elem_type = elem_attr->type();
    const std::string name = def->node(s).name();
    const std::string shape = name + "/_element_shape";
    added.push_back(ShapeConst(shape, nullptr));
    proto::NodeDef size = ShapeConst(name + "/_empty", nullptr);
    size.mutable_attr()->at("value").mutable_tensor()->set_int_val(0, 0);
    added.push_back(size);

    proto::NodeDef& stack = *def->mutable_node(s);
    const std::string device = stack.device();
    stack.Clear();
    stack.set_name(name);
    stack.set_op("TensorListReserve");
    stack.set_device(device);
    stack.add_input(shape);
    stack.add_input(name + "/_empty");
    (*stack.mutable_attr())["element_dtype"].set_type(elem_type);
    (*stack.mutable_attr())["shape_type"].set_type(proto::DT_INT32);

    proto::NodeDef& push_node = *def->mutable_node(push);
    const std::string push_name = push_node.name();
    std::vector<std::string> push_inputs(push_node.input().begin(), push_node.input().end());
    push_node.clear_input();
    push_node.clear_attr();
    push_node.set_op("TensorListPushBack");
    const std::string push_base = LevelBase(name, "/_push", push_use.enters.size() - 1);
    push_node.add_input(push_use.switches.empty() ? push_base + "/_list" : push_inputs[0]);
    for (size_t k = 1; k < push_inputs.size(); ++k) push_node.add_input(push_inputs[k]);
    (*push_node.mutable_attr())["element_dtype"].set_type(elem_type);
    thread_through_loops(push_use, name, "/_push",
                         ThreadThroughConds(def, push_use, push_base, push_name, &added),
                         /*exit=*/true);

    proto::NodeDef& pop_node = *def->mutable_node(pop);
    const std::string pop_handle = pop_node.input(0);
    std::vector<std::string> pop_controls(pop_node.input().begin() + 1, pop_node.input().end());
    pop_node.clear_input();
    pop_node.clear_attr();
    pop_node.set_op("TensorListPopBack");
    const std::string pop_base = LevelBase(name, "/_pop", pop_use.enters.size() - 1);
    pop_node.add_input(pop_use.switches.empty() ? pop_base + "/_list" : pop_handle);
    pop_node.add_input(shape);
    for (const std::string& control : pop_controls) pop_node.add_input(control);
    (*pop_node.mutable_attr())["element_dtype"].set_type(elem_type);
    const std::string pop_name = pop_node.name();
    def->mutable_node(pop_use.enters.front())->set_input(0, name + "/_push/_exit");
    thread_through_loops(pop_use, name, "/_pop",
                         ThreadThroughConds(def, pop_use, pop_base, pop_name + ":0", &added),
                         /*exit=*/false);
    popped[pop_name] = pop_name + ":1";
  }
  // A pop's value is now its output 1 (output 0 is the shorter list).
  for (proto::NodeDef& node : *def->mutable_node()) {
    for (std::string& input : *node.mutable_input()) {
      Input in = ParseInput(input);
      auto it = popped.find(in.node);
      if (it != popped.end() && in.index == 0) input = it->second;
    }
  }
  for (proto::NodeDef& node : added) *def->add_node() = std::move(node);
  return Status::OK();
}

}  // namespace flowstone
