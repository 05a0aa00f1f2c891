// TF1 control flow -> functional If / While. See functionalize_control_flow.h.
#include "graph/functionalize_control_flow.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "flowstone/op_registry.h"
#include "proto/graph.pb.h"

namespace flowstone {
namespace {

bool OpIs(const proto::NodeDef& node, const char* op) {
  // The Ref* variants (reference-typed loop variables) behave alike once Flowstone's reference
  // variables are resource variables.
  return node.op() == op || node.op() == std::string("Ref") + op;
}
bool IsEnter(const proto::NodeDef& n) { return OpIs(n, "Enter"); }
bool IsExit(const proto::NodeDef& n) { return OpIs(n, "Exit"); }
bool IsMerge(const proto::NodeDef& n) { return OpIs(n, "Merge"); }
bool IsSwitch(const proto::NodeDef& n) { return OpIs(n, "Switch"); }
bool IsNextIteration(const proto::NodeDef& n) { return OpIs(n, "NextIteration"); }
bool IsLoopCond(const proto::NodeDef& n) { return n.op() == "LoopCond"; }

const proto::AttrValue* FindAttr(const proto::NodeDef& node, const char* name) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? nullptr : &it->second;
}

Status TypeAttr(const proto::NodeDef& node, proto::DataType* out) {
  const proto::AttrValue* t = FindAttr(node, "T");
  if (t == nullptr || t->value_case() != proto::AttrValue::kType) {
    return errors::InvalidArgument("Node '", node.name(), "' (", node.op(),
                                   ") needs a type attr 'T'");
  }
  *out = t->type();
  return Status::OK();
}

// The dtype of output `index` of `node`, from its op's definition and attrs; DT_INVALID when
// they do not say.
proto::DataType OutputType(const proto::NodeDef& node, int index) {
  const OpDef* op = OpRegistry::Global().Find(node.op());
  if (op == nullptr) return proto::DT_INVALID;
  auto attr = [&](const std::string& name) { return FindAttr(node, name.c_str()); };
  int start = 0;
  for (const ArgDef& arg : op->outputs) {
    if (!arg.type_list_attr.empty()) {
      const proto::AttrValue* types = attr(arg.type_list_attr);
      const int length = types ? types->list().type_size() : 0;
      if (index < start + length) return types->list().type(index - start);
      start += length;
      continue;
    }
    const proto::AttrValue* number = arg.number_attr.empty() ? nullptr : attr(arg.number_attr);
    const int length = arg.number_attr.empty() ? 1 : (number ? static_cast<int>(number->i()) : 0);
    if (index < start + length) {
      if (arg.fixed_type != DType::kInvalid) {
        return static_cast<proto::DataType>(DTypeToTfEnum(arg.fixed_type));
      }
      const proto::AttrValue* type = attr(arg.type_attr);
      return type != nullptr && type->value_case() == proto::AttrValue::kType ? type->type()
                                                                              : proto::DT_INVALID;
    }
    start += length;
  }
  return proto::DT_INVALID;
}

std::string TensorName(const std::string& node, int index) { return StrCat(node, ":", index); }

// One input of a node: output `index` of node `node`, or a control input when index is -1.
struct Ref {
  int node;
  int index;
};

// The GraphDef's nodes with their inputs resolved to indices and their consumers listed.
class GraphView {
 public:
  Status Init(const proto::GraphDef& def) {
    def_ = &def;
    const int n = def.node_size();
    inputs_.assign(n, {});
    consumers_.assign(n, {});
    for (int i = 0; i < n; ++i) {
      if (!index_.emplace(def.node(i).name(), i).second) {
        return errors::InvalidArgument("GraphDef has two nodes named '", def.node(i).name(),
                                       "'; node names must be unique");
      }
    }
    for (int i = 0; i < n; ++i) {
      for (const std::string& input : def.node(i).input()) {
        Ref ref;
        FS_RETURN_IF_ERROR(Parse(input, def.node(i).name(), &ref));
        consumers_[ref.node].push_back({i, static_cast<int>(inputs_[i].size())});
        inputs_[i].push_back(ref);
      }
    }
    return Status::OK();
  }

  int size() const { return def_->node_size(); }
  const proto::NodeDef& node(int i) const { return def_->node(i); }
  const std::string& name(int i) const { return def_->node(i).name(); }
  const std::vector<Ref>& inputs(int i) const { return inputs_[i]; }
  // (consumer, position in its inputs) pairs.
  const std::vector<std::pair<int, int>>& consumers(int i) const { return consumers_[i]; }
  bool Has(const std::string& name) const { return index_.count(name) > 0; }
  Ref input(int i, int position) const { return inputs_[i][position]; }
  // The data inputs of node i (control inputs come last in a NodeDef).
  int num_data_inputs(int i) const {
    int k = 0;
    for (const Ref& r : inputs_[i]) k += r.index >= 0;
    return k;
  }
  // A node without inputs that may be copied into any function that uses it.
  bool IsFreeConstant(int i) const { return inputs_[i].empty() && node(i).op() == "Const"; }

 private:
  Status Parse(const std::string& input, const std::string& node_name, Ref* out) const {
    std::string name = input;
    int index = 0;
    if (!name.empty() && name[0] == '^') {
      name = name.substr(1);
      index = -1;
    } else if (size_t colon = name.rfind(':'); colon != std::string::npos) {
      std::string digits = name.substr(colon + 1);
      if (digits.empty() || digits.size() > 9 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return errors::InvalidArgument("Node '", node_name, "': malformed input '", input, "'");
      }
      index = std::stoi(digits);
      name = name.substr(0, colon);
    }
    auto it = index_.find(name);
    if (it == index_.end()) {
      return errors::InvalidArgument("Node '", node_name, "': input '", input,
                                     "' names no node of the GraphDef");
    }
    *out = Ref{it->second, index};
    return Status::OK();
  }

  const proto::GraphDef* def_ = nullptr;
  std::unordered_map<std::string, int> index_;
  std::vector<std::vector<Ref>> inputs_;
  std::vector<std::vector<std::pair<int, int>>> consumers_;
};

// Unique names for the new nodes and functions.
class Namer {
 public:
  explicit Namer(std::function<bool(const std::string&)> function_taken)
      : function_taken_(std::move(function_taken)) {}

  std::string Function(const std::string& base) {
    std::string clean = base;
    for (char& c : clean) {
      if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    }
    std::string name = clean;
    for (int k = 1; function_taken_(name) || !functions_.insert(name).second; ++k) {
      name = StrCat(clean, "_", k);
    }
    return name;
  }

  static std::string Node(const GraphView& g, const std::string& base) {
    std::string name = base;
    for (int k = 1; g.Has(name); ++k) name = StrCat(base, "_", k);
    return name;
  }

 private:
  std::function<bool(const std::string&)> function_taken_;
  std::set<std::string> functions_;
};

// ---- building a function from nodes of the graph ----

// How a function body sees the graph: tensors and control inputs that become its arguments, and
// which other nodes it may copy.
struct BodySpec {
  std::vector<std::pair<std::string, proto::DataType>> args;  // Placeholder name, dtype
  std::map<std::pair<int, int>, int> data_args;               // (node, output) -> argument
  std::map<int, int> control_args;                            // node -> argument
  // OK when node i may be copied into the body; otherwise the error that explains why not.
  std::function<Status(int)> check;
  // When set, control inputs from nodes `check` rejects move to the calling node instead.
  std::set<int>* lifted_controls = nullptr;
};

// The body that computes `roots` from the arguments: the roots' ancestors up to the arguments.
// `used` (one flag per node) gains the nodes copied.
Status BuildBody(const GraphView& g, const BodySpec& spec, const std::vector<Ref>& roots,
                 const std::string& name, FunctionalizedBody* out, std::vector<bool>* used) {
  std::vector<bool> copied(g.size(), false);
  std::vector<int> stack;
  for (const Ref& r : roots) {
    if (!spec.data_args.count({r.node, r.index})) stack.push_back(r.node);
  }
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (copied[n]) continue;
    FS_RETURN_IF_ERROR(spec.check(n));
    copied[n] = true;
    (*used)[n] = true;
    for (const Ref& in : g.inputs(n)) {
      if (in.index >= 0 && spec.data_args.count({in.node, in.index})) continue;
      if (in.index < 0 && spec.control_args.count(in.node)) continue;
      if (in.index < 0 && spec.lifted_controls != nullptr && !spec.check(in.node).ok()) {
        spec.lifted_controls->insert(in.node);
        continue;
      }
      stack.push_back(in.node);
    }
  }
  out->name = name;
  out->body = std::make_shared<proto::GraphDef>();
  for (const auto& [arg, dtype] : spec.args) {
    proto::NodeDef* placeholder = out->body->add_node();
    placeholder->set_name(arg);
    placeholder->set_op("Placeholder");
    (*placeholder->mutable_attr())["dtype"].set_type(dtype);
    out->args.push_back(arg);
  }
  for (int n = 0; n < g.size(); ++n) {
    if (!copied[n]) continue;
    proto::NodeDef* copy = out->body->add_node();
    *copy = g.node(n);
    copy->clear_input();
    for (int k = 0; k < static_cast<int>(g.inputs(n).size()); ++k) {
      const Ref in = g.input(n, k);
      if (in.index >= 0) {
        auto arg = spec.data_args.find({in.node, in.index});
        copy->add_input(arg != spec.data_args.end() ? spec.args[arg->second].first
                                                    : g.node(n).input(k));
        continue;
      }
      auto arg = spec.control_args.find(in.node);
      if (arg != spec.control_args.end()) {
        copy->add_input("^" + spec.args[arg->second].first);
      } else if (copied[in.node]) {
        copy->add_input(g.node(n).input(k));
      }
    }
  }
  for (const Ref& r : roots) {
    auto arg = spec.data_args.find({r.node, r.index});
    out->rets.push_back(arg != spec.data_args.end() ? TensorName(spec.args[arg->second].first, 0)
                                                    : TensorName(g.name(r.node), r.index));
  }
  return Status::OK();
}

// An argument name unused by the graph's nodes.
std::string ArgName(const GraphView& g, const std::string& base, int k) {
  return Namer::Node(g, StrCat(base, "_", k));
}

// Replaces `def`'s nodes: drops those `remove` marks, turns each node of `identities` (node ->
// tensor) into an Identity of that tensor under the same name, and appends `added`.
void Rewrite(const GraphView& g, const std::vector<bool>& remove,
             const std::map<int, std::string>& identities, proto::NodeDef added,
             proto::GraphDef* def) {
  google::protobuf::RepeatedPtrField<proto::NodeDef> nodes;
  for (int n = 0; n < g.size(); ++n) {
    auto identity = identities.find(n);
    if (identity != identities.end()) {
      proto::NodeDef* node = nodes.Add();
      node->set_name(g.name(n));
      node->set_op("Identity");
      node->set_device(g.node(n).device());
      node->add_input(identity->second);
      (*node->mutable_attr())["T"] = g.node(n).attr().at("T");
      continue;
    }
    if (!remove[n]) *nodes.Add() = g.node(n);
  }
  *nodes.Add() = std::move(added);
  def->mutable_node()->Swap(&nodes);
}

void SetFunc(proto::NodeDef* node, const char* attr, const std::string& function) {
  (*node->mutable_attr())[attr].mutable_func()->set_name(function);
}

void SetTypes(proto::NodeDef* node, const char* attr, const std::vector<proto::DataType>& types) {
  auto* list = (*node->mutable_attr())[attr].mutable_list();
  for (proto::DataType t : types) list->add_type(t);
}

// A node the conversion leaves out (no result of the loop or cond needs it) that computes
// something: TF1 would have run it, so dropping it silently could change what a graph does.
// Unused pass-throughs and constants (TF's pivots, an unused loop variable's Identity) may go.
Status CheckDropped(const GraphView& g, const std::vector<bool>& candidates,
                    const std::vector<bool>& used, const std::string& where) {
  for (int n = 0; n < g.size(); ++n) {
    if (!candidates[n] || used[n] || !g.consumers(n).empty()) continue;
    const std::string& op = g.node(n).op();
    if (op == "Identity" || op == "Const" || op == "NoOp" || IsV1ControlFlowOp(op)) continue;
    return errors::Unimplemented("Node '", g.name(n), "' (", op, ") inside ", where,
                                 " computes a value that no result of it returns; Flowstone "
                                 "converts TF1 control flow whose inner nodes all feed its "
                                 "results");
  }
  return Status::OK();
}

// ---- conds ----

// The tensor a Switch's predicate is, looking through Identity (TF's cond switches its data on
// "cond/pred_id", an Identity of the predicate, and its pivot on the predicate itself).
Ref PredicateOf(const GraphView& g, int switch_node) {
  Ref pred = g.input(switch_node, 1);
  for (int hops = 0; hops < g.size() && g.node(pred.node).op() == "Identity" &&
                     !g.inputs(pred.node).empty() && g.input(pred.node, 0).index >= 0;
       ++hops) {
    pred = g.input(pred.node, 0);
  }
  return pred;
}

constexpr uint8_t kFalse = 1;  // reached from a Switch's output 0
constexpr uint8_t kTrue = 2;   // reached from output 1

struct CondRegion {
  std::vector<uint8_t> label;  // per node: kFalse, kTrue or 0 (outside)
  std::vector<int> merges;
  bool nested = false;  // it reaches another cond's Switch: convert that one first
};

Status FindRegion(const GraphView& g, const std::set<int>& switches, const std::string& pred,
                  CondRegion* region) {
  region->label.assign(g.size(), 0);
  std::deque<int> queue;
  auto reach = [&](int c, uint8_t label) -> Status {
    const proto::NodeDef& node = g.node(c);
    if (IsSwitch(node)) {
      if (switches.count(c)) {
        return errors::Unimplemented("Switch '", node.name(),
                                     "' switches a branch of the cond on '", pred,
                                     "' on the same predicate; Flowstone cannot convert it");
      }
      region->nested = true;
      return Status::OK();
    }
    if (IsMerge(node)) {
      if (std::find(region->merges.begin(), region->merges.end(), c) == region->merges.end()) {
        region->merges.push_back(c);
      }
      return Status::OK();
    }
    if ((region->label[c] & label) != 0) return Status::OK();
    region->label[c] |= label;
    if (region->label[c] == (kTrue | kFalse)) {
      return errors::Unimplemented("Node '", node.name(), "' (", node.op(),
                                   ") uses both branches of the cond on '", pred,
                                   "' without a Merge; Flowstone converts conds whose branches "
                                   "meet only in Merge nodes");
    }
    queue.push_back(c);
    return Status::OK();
  };
  for (int s : switches) {
    for (const auto& [c, position] : g.consumers(s)) {
      const Ref in = g.input(c, position);
      if (in.index < 0) {
        return errors::Unimplemented("Node '", g.name(c), "' has a control dependency on Switch '",
                                     g.name(s),
                                     "'; Flowstone converts conds whose branches use "
                                     "the Switch's outputs");
      }
      FS_RETURN_IF_ERROR(reach(c, in.index == 1 ? kTrue : kFalse));
    }
  }
  while (!queue.empty() && !region->nested) {
    int n = queue.front();
    queue.pop_front();
    for (const auto& [c, position] : g.consumers(n)) FS_RETURN_IF_ERROR(reach(c, region->label[n]));
  }
  return Status::OK();
}

// Converts the cond of `switches` (whose region has no other cond inside) into an If.
Status ConvertCond(const GraphView& g, const std::set<int>& switches, Ref pred,
                   const CondRegion& region, Namer* namer, proto::GraphDef* def,
                   std::vector<FunctionalizedBody>* bodies) {
  const std::string pred_name = TensorName(g.name(pred.node), pred.index);
  if (region.merges.empty()) {
    return errors::Unimplemented("Switch '", g.name(*switches.begin()), "' (cond on '", pred_name,
                                 "') reaches no Merge; Flowstone converts conds whose branches "
                                 "end in Merge nodes");
  }
  auto label_of = [&](Ref in) -> uint8_t {
    if (switches.count(in.node)) return in.index == 1 ? kTrue : kFalse;
    return region.label[in.node];
  };
  std::vector<Ref> then_rets, else_rets;
  std::vector<proto::DataType> tout;
  for (int m : region.merges) {
    if (g.num_data_inputs(m) != 2) {
      return errors::InvalidArgument("Merge '", g.name(m), "' of the cond on '", pred_name,
                                     "' has ", g.num_data_inputs(m),
                                     " data inputs; a cond's Merge joins its two branches");
    }
    Ref a = g.input(m, 0), b = g.input(m, 1);
    if (label_of(a) == 0 || label_of(b) == 0) {
      return errors::Unimplemented("Merge '", g.name(m), "' takes '",
                                   g.node(m).input(label_of(a) == 0 ? 0 : 1),
                                   "' from outside the cond on '", pred_name,
                                   "'; Flowstone converts Merges that join the two branches");
    }
    if (label_of(a) == label_of(b)) {
      return errors::Unimplemented("Merge '", g.name(m),
                                   "' joins two tensors of the same branch "
                                   "of the cond on '",
                                   pred_name, "'");
    }
    for (const auto& [c, position] : g.consumers(m)) {
      if (g.input(c, position).index == 1) {
        return errors::Unimplemented("Node '", g.name(c),
                                     "' uses the value_index output of Merge '", g.name(m),
                                     "', which an If does not have");
      }
    }
    then_rets.push_back(label_of(a) == kTrue ? a : b);
    else_rets.push_back(label_of(a) == kTrue ? b : a);
    proto::DataType t;
    FS_RETURN_IF_ERROR(TypeAttr(g.node(m), &t));
    tout.push_back(t);
  }

  // New names come from the cond's name scope ("cond" for "cond/Merge").
  const std::string& merge_name = g.name(region.merges[0]);
  const size_t slash = merge_name.rfind('/');
  const std::string scope = slash == std::string::npos ? merge_name : merge_name.substr(0, slash);
  // Tensors from outside that branch nodes use without a Switch (TF1 does this with a loop's
  // invariants, which are alive in every iteration) become extra inputs of both branches.
  std::vector<std::pair<Ref, proto::DataType>> captures;
  for (int n = 0; n < g.size(); ++n) {
    if (region.label[n] == 0) continue;
    for (const Ref& in : g.inputs(n)) {
      if (in.index < 0 || region.label[in.node] != 0 || switches.count(in.node) ||
          g.IsFreeConstant(in.node)) {
        continue;
      }
      if (std::any_of(captures.begin(), captures.end(), [&](const auto& c) {
            return c.first.node == in.node && c.first.index == in.index;
          })) {
        continue;
      }
      const proto::DataType t = OutputType(g.node(in.node), in.index);
      if (t == proto::DT_INVALID) {
        return errors::Unimplemented("Node '", g.name(n), "' inside the cond on '", pred_name,
                                     "' uses '", g.node(n).input(&in - g.inputs(n).data()),
                                     "' from outside without a Switch, and Flowstone cannot tell "
                                     "its dtype to pass it to the If");
      }
      captures.push_back({in, t});
    }
  }
  std::set<int> lifted;
  std::vector<bool> used(g.size(), false);
  std::vector<proto::DataType> tin;
  std::vector<FunctionalizedBody> branches(2);
  for (int branch = 0; branch < 2; ++branch) {
    const uint8_t label = branch == 0 ? kTrue : kFalse;
    BodySpec spec;
    int k = 0;
    for (int s : switches) {
      proto::DataType t;
      FS_RETURN_IF_ERROR(TypeAttr(g.node(s), &t));
      if (branch == 0) tin.push_back(t);
      spec.data_args[{s, branch == 0 ? 1 : 0}] = k;
      spec.args.emplace_back(ArgName(g, "cond_input", k), t);
      ++k;
    }
    for (const auto& [ref, t] : captures) {
      if (branch == 0) tin.push_back(t);
      spec.data_args[{ref.node, ref.index}] = k;
      spec.args.emplace_back(ArgName(g, "cond_input", k), t);
      ++k;
    }
    spec.check = [&](int n) -> Status {
      if (region.label[n] == label || g.IsFreeConstant(n)) return Status::OK();
      return errors::Unimplemented("Node '", g.name(n), "' (", g.node(n).op(),
                                   ") is used inside the cond on '", pred_name,
                                   "' without passing through its Switch; Flowstone converts "
                                   "conds whose branches take outside tensors through Switch "
                                   "nodes");
    };
    spec.lifted_controls = &lifted;
    const std::string base = scope + (branch == 0 ? "_true" : "_false");
    FS_RETURN_IF_ERROR(BuildBody(g, spec, branch == 0 ? then_rets : else_rets,
                                 namer->Function(base), &branches[branch], &used));
  }
  std::vector<bool> in_region(g.size(), false);
  for (int n = 0; n < g.size(); ++n) in_region[n] = region.label[n] != 0;
  FS_RETURN_IF_ERROR(CheckDropped(g, in_region, used, "the cond on '" + pred_name + "'"));

  proto::NodeDef if_node;
  if_node.set_name(Namer::Node(g, scope + "/If"));
  if_node.set_op("If");
  if_node.set_device(g.node(region.merges[0]).device());
  if_node.add_input(pred_name);
  for (int s : switches) if_node.add_input(g.node(s).input(0));
  for (const auto& [ref, t] : captures) if_node.add_input(TensorName(g.name(ref.node), ref.index));
  for (int n : lifted) if_node.add_input("^" + g.name(n));
  (*if_node.mutable_attr())["Tcond"].set_type(proto::DT_BOOL);
  SetTypes(&if_node, "Tin", tin);
  SetTypes(&if_node, "Tout", tout);
  SetFunc(&if_node, "then_branch", branches[0].name);
  SetFunc(&if_node, "else_branch", branches[1].name);

  std::vector<bool> remove(g.size(), false);
  for (int n = 0; n < g.size(); ++n) remove[n] = region.label[n] != 0 || switches.count(n) > 0;
  std::map<int, std::string> identities;
  for (size_t k = 0; k < region.merges.size(); ++k) {
    identities[region.merges[k]] = TensorName(if_node.name(), static_cast<int>(k));
  }
  for (auto& branch : branches) bodies->push_back(std::move(branch));
  Rewrite(g, remove, identities, std::move(if_node), def);
  return Status::OK();
}

// Converts the conds of `def` (which has no loops left), innermost first.
Status FunctionalizeConds(proto::GraphDef* def, Namer* namer,
                          std::vector<FunctionalizedBody>* bodies) {
  for (;;) {
    GraphView g;
    FS_RETURN_IF_ERROR(g.Init(*def));
    // Switches grouped by predicate, in graph order.
    std::vector<std::pair<std::pair<int, int>, std::set<int>>> groups;
    for (int n = 0; n < g.size(); ++n) {
      if (!IsSwitch(g.node(n))) continue;
      if (g.num_data_inputs(n) != 2) {
        return errors::InvalidArgument("Switch '", g.name(n), "' has ", g.num_data_inputs(n),
                                       " data inputs; a Switch takes data and a predicate");
      }
      Ref pred = PredicateOf(g, n);
      auto key = std::make_pair(pred.node, pred.index);
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& group) { return group.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {}});
        it = groups.end() - 1;
      }
      it->second.insert(n);
    }
    if (groups.empty()) break;
    bool converted = false;
    for (const auto& [key, switches] : groups) {
      const Ref pred{key.first, key.second};
      CondRegion region;
      FS_RETURN_IF_ERROR(
          FindRegion(g, switches, TensorName(g.name(pred.node), pred.index), &region));
      if (region.nested) continue;
      FS_RETURN_IF_ERROR(ConvertCond(g, switches, pred, region, namer, def, bodies));
      converted = true;
      break;
    }
    if (!converted) {
      return errors::Unimplemented("Switch '", g.name(*groups[0].second.begin()),
                                   "': the conds of this graph branch into each other in a "
                                   "pattern Flowstone cannot convert to If");
    }
  }
  for (proto::NodeDef& node : *def->mutable_node()) {
    if (IsMerge(node)) {
      return errors::Unimplemented(
          "Merge '", node.name(),
          "' joins no cond's branches and no loop's iterations that "
          "Flowstone recognizes, so it cannot be converted to If or While");
    }
    if (IsEnter(node) || IsExit(node) || IsNextIteration(node) || IsLoopCond(node)) {
      return errors::InvalidArgument("Node '", node.name(), "' (", node.op(),
                                     ") is not part of a well-formed TF1 while loop");
    }
    // ControlTrigger only orders nodes; Flowstone runs no dead branches, so NoOp does the same.
    if (node.op() == "ControlTrigger") node.set_op("NoOp");
  }
  return Status::OK();
}

// ---- loops ----

// The frame of every node (TF1's Enter frame_name; "" outside loops) and each frame's parent.
struct Frames {
  std::vector<std::string> of;
  std::map<std::string, std::string> parent;
};

Status AssignFrames(const GraphView& g, Frames* frames) {
  const int n = g.size();
  frames->of.assign(n, "");
  std::vector<bool> known(n, false);
  std::deque<int> queue;
  auto frame_name = [&](int i) -> Status {
    const proto::AttrValue* name = FindAttr(g.node(i), "frame_name");
    if (name == nullptr || name->value_case() != proto::AttrValue::kS || name->s().empty()) {
      return errors::InvalidArgument("Enter '", g.name(i), "' has no frame_name");
    }
    return Status::OK();
  };
  // The frame of the tensors node i outputs: an Exit's leave its loop.
  auto out_frame = [&](int i) -> StatusOr<std::string> {
    if (!IsExit(g.node(i))) return frames->of[i];
    if (frames->of[i].empty()) {
      return errors::InvalidArgument("Exit '", g.name(i), "' is not inside a while loop");
    }
    return frames->parent[frames->of[i]];
  };
  std::vector<bool> only_free_inputs(n, true);
  for (int i = 0; i < n; ++i) {
    for (const Ref& in : g.inputs(i)) {
      if (!g.IsFreeConstant(in.node)) only_free_inputs[i] = false;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!g.inputs(i).empty()) continue;
    if (IsEnter(g.node(i))) {
      return errors::InvalidArgument("Enter '", g.name(i), "' has no input");
    }
    known[i] = true;
    queue.push_back(i);
  }
  while (!queue.empty()) {
    int p = queue.front();
    queue.pop_front();
    StatusOr<std::string> from = out_frame(p);
    FS_RETURN_IF_ERROR(from.status());
    for (const auto& [c, position] : g.consumers(p)) {
      // Constants without inputs are used from any frame: the node's other inputs say where it
      // is.
      if (g.IsFreeConstant(p) && !only_free_inputs[c]) continue;
      std::string frame = *from;
      if (IsEnter(g.node(c))) {
        FS_RETURN_IF_ERROR(frame_name(c));
        frame = FindAttr(g.node(c), "frame_name")->s();
        // A constant without inputs says nothing about where the frame is.
        if (!g.IsFreeConstant(p)) {
          auto [it, added] = frames->parent.emplace(frame, *from);
          if (!added && it->second != *from) {
            return errors::InvalidArgument("Enter '", g.name(c), "' enters frame '", frame,
                                           "' from frame '", *from,
                                           "', but other Enters enter "
                                           "it from frame '",
                                           it->second, "'");
          }
        }
      }
      if (known[c]) {
        if (frames->of[c] != frame) {
          return errors::InvalidArgument(
              "Node '", g.name(c), "' (", g.node(c).op(), ") has inputs from two frames: '", frame,
              "' (through '", g.name(p), "') and '", frames->of[c],
              "'; TF1 loops take tensors in through Enter and out through Exit");
        }
        continue;
      }
      known[c] = true;
      frames->of[c] = frame;
      queue.push_back(c);
    }
  }
  return Status::OK();
}

int Depth(const Frames& frames, const std::string& frame) {
  int depth = 0;
  for (std::string f = frame; !f.empty() && depth <= static_cast<int>(frames.parent.size());
       ++depth) {
    auto it = frames.parent.find(f);
    f = it == frames.parent.end() ? "" : it->second;
  }
  return depth;
}

struct LoopVar {
  int enter = -1, merge = -1, next = -1, sw = -1, exit = -1;
  proto::DataType dtype = proto::DT_INVALID;
};

Status ConvertLoop(const GraphView& g, const Frames& frames, const std::string& frame, Namer* namer,
                   proto::GraphDef* def, std::vector<FunctionalizedBody>* bodies) {
  std::vector<int> members, loop_conds, invariants;
  for (int n = 0; n < g.size(); ++n) {
    if (frames.of[n] != frame) continue;
    members.push_back(n);
    if (IsLoopCond(g.node(n))) loop_conds.push_back(n);
  }
  if (loop_conds.size() != 1) {
    return errors::InvalidArgument("While loop frame '", frame, "' has ", loop_conds.size(),
                                   " LoopCond nodes; a TF1 loop has exactly one");
  }
  const int loop_cond = loop_conds[0];
  if (g.num_data_inputs(loop_cond) != 1) {
    return errors::InvalidArgument("LoopCond '", g.name(loop_cond), "' needs one input");
  }
  const Ref pred = g.input(loop_cond, 0);
  std::vector<LoopVar> vars;
  int64_t parallel_iterations = 10;
  std::set<int> loop_switches, next_iterations;
  for (int e : members) {
    const proto::NodeDef& enter = g.node(e);
    if (!IsEnter(enter)) continue;
    if (g.num_data_inputs(e) != 1 || g.input(e, 0).index < 0) {
      return errors::InvalidArgument("Enter '", enter.name(), "' needs one data input");
    }
    if (const proto::AttrValue* p = FindAttr(enter, "parallel_iterations")) {
      parallel_iterations = p->i();
    }
    const proto::AttrValue* constant = FindAttr(enter, "is_constant");
    if (constant != nullptr && constant->b()) {
      invariants.push_back(e);
      continue;
    }
    LoopVar var;
    var.enter = e;
    FS_RETURN_IF_ERROR(TypeAttr(enter, &var.dtype));
    if (g.consumers(e).size() != 1 || !IsMerge(g.node(g.consumers(e)[0].first))) {
      return errors::Unimplemented("Enter '", enter.name(), "' of while loop '", frame,
                                   "' is a loop variable (is_constant=false) that does not feed "
                                   "exactly one Merge; Flowstone converts loops whose variables "
                                   "go Enter -> Merge -> Switch");
    }
    var.merge = g.consumers(e)[0].first;
    if (g.num_data_inputs(var.merge) != 2) {
      return errors::InvalidArgument("Merge '", g.name(var.merge), "' of while loop '", frame,
                                     "' must merge its Enter with a NextIteration");
    }
    for (int k = 0; k < 2; ++k) {
      const Ref in = g.input(var.merge, k);
      if (in.node != e) var.next = in.node;
    }
    if (var.next < 0 || !IsNextIteration(g.node(var.next)) || g.num_data_inputs(var.next) != 1) {
      return errors::InvalidArgument("Merge '", g.name(var.merge), "' of while loop '", frame,
                                     "' must merge its Enter with a NextIteration");
    }
    for (const auto& [c, position] : g.consumers(var.merge)) {
      if (IsSwitch(g.node(c)) && position == 0 && g.num_data_inputs(c) == 2 &&
          g.input(c, 1).node == loop_cond) {
        if (var.sw >= 0) {
          return errors::Unimplemented("Merge '", g.name(var.merge), "' of while loop '", frame,
                                       "' feeds two Switches on the LoopCond");
        }
        var.sw = c;
      }
    }
    if (var.sw < 0) {
      return errors::InvalidArgument("Merge '", g.name(var.merge), "' of while loop '", frame,
                                     "' feeds no Switch on LoopCond '", g.name(loop_cond), "'");
    }
    for (const auto& [c, position] : g.consumers(var.sw)) {
      if (g.input(c, position).index != 0) continue;
      if (!IsExit(g.node(c)) || var.exit >= 0) {
        return errors::Unimplemented("Node '", g.name(c), "' uses the exit output of loop Switch '",
                                     g.name(var.sw),
                                     "'; Flowstone converts loops whose Switches "
                                     "leave only through one Exit");
      }
      var.exit = c;
      proto::DataType exit_type;
      FS_RETURN_IF_ERROR(TypeAttr(g.node(c), &exit_type));
    }
    loop_switches.insert(var.sw);
    next_iterations.insert(var.next);
    vars.push_back(var);
  }

  // Cond and body see the same arguments: the loop variables, then the invariants.
  BodySpec cond, body;
  for (size_t k = 0; k < vars.size(); ++k) {
    const std::string arg = ArgName(g, "loop_var", static_cast<int>(k));
    for (BodySpec* spec : {&cond, &body}) {
      spec->args.emplace_back(arg, vars[k].dtype);
      spec->data_args[{vars[k].merge, 0}] = static_cast<int>(k);
      spec->control_args[vars[k].merge] = static_cast<int>(k);
    }
    body.data_args[{vars[k].sw, 1}] = static_cast<int>(k);
    body.control_args[vars[k].sw] = static_cast<int>(k);
  }
  std::vector<proto::DataType> types;
  for (const LoopVar& var : vars) types.push_back(var.dtype);
  for (size_t j = 0; j < invariants.size(); ++j) {
    proto::DataType t;
    FS_RETURN_IF_ERROR(TypeAttr(g.node(invariants[j]), &t));
    types.push_back(t);
    const int k = static_cast<int>(vars.size() + j);
    for (BodySpec* spec : {&cond, &body}) {
      spec->args.emplace_back(ArgName(g, "loop_invariant", static_cast<int>(j)), t);
      spec->data_args[{invariants[j], 0}] = k;
      spec->control_args[invariants[j]] = k;
    }
  }
  auto check = [&](int n) -> Status {
    const proto::NodeDef& node = g.node(n);
    if (g.IsFreeConstant(n)) return Status::OK();
    if (frames.of[n] != frame) {
      return errors::InvalidArgument("Node '", node.name(), "' is used inside while loop '", frame,
                                     "' without an Enter");
    }
    if (IsEnter(node) || IsExit(node) || IsNextIteration(node) || IsLoopCond(node) ||
        loop_switches.count(n)) {
      return errors::Unimplemented("Node '", node.name(), "' (", node.op(), ") of while loop '",
                                   frame,
                                   "' is used as a value inside the loop; Flowstone "
                                   "converts loops whose cond reads the Merges and whose body "
                                   "reads the Switches' true outputs");
    }
    return Status::OK();
  };
  cond.check = body.check = check;

  const std::string base = frame.size() > 14 && frame.substr(frame.size() - 14) == "/while_context"
                               ? frame.substr(0, frame.size() - 14)
                               : frame;
  FunctionalizedBody cond_fn, body_fn;
  std::vector<bool> used(g.size(), false);
  FS_RETURN_IF_ERROR(BuildBody(g, cond, {pred}, namer->Function(base + "_cond"), &cond_fn, &used));
  std::vector<Ref> body_rets;
  for (const LoopVar& var : vars) body_rets.push_back(g.input(var.next, 0));
  for (int e : invariants) body_rets.push_back(Ref{e, 0});
  FS_RETURN_IF_ERROR(
      BuildBody(g, body, body_rets, namer->Function(base + "_body"), &body_fn, &used));
  std::vector<bool> in_frame(g.size(), false);
  for (int n : members) in_frame[n] = true;
  FS_RETURN_IF_ERROR(CheckDropped(g, in_frame, used, "while loop '" + frame + "'"));
  // Conds inside the loop become Ifs inside its functions.
  for (FunctionalizedBody* fn : {&cond_fn, &body_fn}) {
    FS_RETURN_IF_ERROR(FunctionalizeConds(fn->body.get(), namer, bodies));
  }

  proto::NodeDef loop;
  loop.set_name(Namer::Node(g, base + "/While"));
  loop.set_op("While");
  std::set<std::string> controls;
  for (const LoopVar& var : vars) loop.add_input(g.node(var.enter).input(0));
  for (int e : invariants) loop.add_input(g.node(e).input(0));
  for (int e : members) {
    if (!IsEnter(g.node(e))) continue;
    loop.set_device(g.node(e).device());
    for (const Ref& in : g.inputs(e)) {
      if (in.index < 0) controls.insert(g.name(in.node));
    }
  }
  for (const std::string& c : controls) loop.add_input("^" + c);
  SetTypes(&loop, "T", types);
  SetFunc(&loop, "cond", cond_fn.name);
  SetFunc(&loop, "body", body_fn.name);
  (*loop.mutable_attr())["parallel_iterations"].set_i(parallel_iterations);

  std::vector<bool> remove(g.size(), false);
  for (int n : members) remove[n] = true;
  std::map<int, std::string> identities;
  for (size_t k = 0; k < vars.size(); ++k) {
    if (vars[k].exit >= 0) identities[vars[k].exit] = TensorName(loop.name(), static_cast<int>(k));
  }
  bodies->push_back(std::move(cond_fn));
  bodies->push_back(std::move(body_fn));
  Rewrite(g, remove, identities, std::move(loop), def);
  return Status::OK();
}

}  // namespace

bool IsV1ControlFlowOp(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {
      "Switch", "RefSwitch", "Merge",         "RefMerge",         "Enter",    "RefEnter",
      "Exit",   "RefExit",   "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"};
  return kOps.count(op) > 0;
}

bool HasV1ControlFlow(const proto::GraphDef& def) {
  return std::any_of(def.node().begin(), def.node().end(),
                     [](const proto::NodeDef& node) { return IsV1ControlFlowOp(node.op()); });
}

Status FunctionalizeControlFlow(proto::GraphDef* def,
                                const std::function<bool(const std::string&)>& name_taken,
                                std::vector<FunctionalizedBody>* bodies) {
  Namer namer(name_taken);
  // Each round removes one frame's Enters, so the rounds are bounded by the node count.
  for (int round = 0; round <= def->node_size(); ++round) {
    GraphView g;
    FS_RETURN_IF_ERROR(g.Init(*def));
    Frames frames;
    FS_RETURN_IF_ERROR(AssignFrames(g, &frames));
    std::string deepest;
    int depth = 0;
    for (int n = 0; n < g.size(); ++n) {
      if (frames.of[n].empty()) continue;
      int d = Depth(frames, frames.of[n]);
      if (d > static_cast<int>(frames.parent.size())) {
        return errors::InvalidArgument("While loop frame '", frames.of[n],
                                       "' is nested inside itself");
      }
      if (d > depth) {
        depth = d;
        deepest = frames.of[n];
      }
    }
    if (depth == 0) break;
    FS_RETURN_IF_ERROR(ConvertLoop(g, frames, deepest, &namer, def, bodies));
  }
  return FunctionalizeConds(def, &namer, bodies);
}

}  // namespace flowstone
