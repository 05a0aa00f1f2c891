// While and StatelessWhile: run `body` on the loop variables while `cond` holds (TF's op defs:
// T, cond, body, output_shapes, parallel_iterations). Iterations run one after another; each
// calls two compiled plans whose run states are pooled, so a steady-state iteration does no graph
// work and no allocation beyond what the body's kernels allocate.
#include <algorithm>

#include "flowstone/op_registry.h"
#include "function_builder.h"
#include "function_call.h"
#include "function_gradient.h"
#include "graph/loop_stand_in.h"

namespace flowstone {
namespace {

Status WhileShape(InferenceContext& ctx) {
  std::vector<DType> types;
  FS_RETURN_IF_ERROR(ctx.GetAttr("T", &types));
  const FunctionDef* cond;
  const FunctionDef* body;
  FS_RETURN_IF_ERROR(CheckCallSignature(ctx, "cond", types, nullptr, &cond));
  FS_RETURN_IF_ERROR(CheckCallSignature(ctx, "body", types, &types, &body));
  if (cond->rets.size() != 1) {
    Status s = errors::InvalidArgument("the condition of a While must return one tensor; ",
                                       cond->Describe(), " returns ", cond->rets.size());
    s.SetPayload("py_type", "ValueError");
    return s;
  }
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("output_shapes", &shapes));
  if (shapes.size() == types.size()) {
    ctx.outputs() = shapes;
    return Status::OK();
  }
  // Without declared shapes, a dimension is known only when the body keeps it.
  std::vector<PartialShape> body_shapes = ReturnShapes(*body);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    ctx.set_output(i, MostSpecificCompatibleShape(ctx.input(i), body_shapes[i]));
  return Status::OK();
}

class WhileKernel final : public OpKernel {
 public:
  explicit WhileKernel(const Node& node)
      : OpKernel(node),
        cond_(node.attrs().GetOr<FunctionRef>("cond", {}).name),
        body_(node.attrs().GetOr<FunctionRef>("body", {}).name),
        shapes_(node.attrs().GetOr<std::vector<PartialShape>>("output_shapes", {})) {}

  Status Compute(KernelContext& ctx) override {
    const int n = ctx.num_inputs();
    std::vector<Tensor> vars(n), cond_args, cond_rets, next;
    for (int i = 0; i < n; ++i) vars[i] = ctx.input(i);
    for (int64_t iteration = 0;; ++iteration) {
      // An endless loop stays interruptible (a deadline, Session::Close) even when its cond and
      // body run no kernels at all.
      FS_RETURN_IF_ERROR(ctx.CheckCancelled());
      cond_args = vars;
      FS_RETURN_IF_ERROR(cond_.Call(ctx, cond_args, &cond_rets));
      bool keep_going;
      FS_RETURN_IF_ERROR(ToBool(cond_rets[0], &keep_going));
      if (!keep_going) break;
      FS_RETURN_IF_ERROR(body_.Call(ctx, vars, &next));
      FS_RETURN_IF_ERROR(CheckShapes(next, iteration));
      vars.swap(next);
    }
    for (int i = 0; i < n; ++i) ctx.SetOutput(i, std::move(vars[i]));
    return Status::OK();
  }

 private:
  // A loop variable whose shape leaves its declared invariant is an error, not a silent change.
  Status CheckShapes(const std::vector<Tensor>& values, int64_t iteration) const {
    if (shapes_.size() != values.size()) return Status::OK();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!shapes_[i].IsCompatibleWith(values[i].shape())) {
        return errors::InvalidArgument("Loop variable ", i, " has shape ",
                                       values[i].shape().ToString(), " after iteration ", iteration,
                                       ", which is not compatible with its shape "
                                       "invariant ",
                                       shapes_[i].ToString(),
                                       ". Pass a less specific shape in shape_invariants.");
      }
    }
    return Status::OK();
  }

  FunctionCaller cond_;
  FunctionCaller body_;
  std::vector<PartialShape> shapes_;
};

// --- Gradient -----------------------------------------------------------------------------------
//
// The forward While cannot be changed after the fact (graphs are append-only), so its gradient
// runs two loops:
//  1. a recording loop: the same cond, and a body that computes what the forward body computes
//     and also returns the intermediates, the forward values its gradient ops read
//     (SplitGradientFunction). Each iteration appends them, and the loop variables the gradient
//     reads, to one TensorList per value; the loop counts the iterations n. A variable's history
//     holds the inputs of every iteration and the final values ([n + 1, ...]).
//  2. a backward loop over k = n-1 .. 0: it reads iteration k's loop variables and intermediates
//     from the lists and calls the body's backward function (the gradient ops alone: nothing of
//     the forward iteration runs again) to carry the gradients of the loop variables back one
//     step. Loop invariants (variables the body passes through unchanged: captured tensors and
//     variables) keep no history; their gradients are summed over the iterations.
// The recording loop computes the forward loop's outputs too (its first outputs), so a run that
// needs both runs the recording loop alone and reads the forward outputs from it: the session
// makes that substitution when it compiles the run (RecordingLoopStandIns), and the forward
// values are recorded during the forward pass. Side effects happen once, and random values that
// the gradient reads are the forward pass's. A run that fetches only the forward results runs the
// plain loop and records nothing.
// Memory: the lists hold n x the intermediates and (n + 1) x the recorded variables, for the
// duration of the run that computes the gradient. A push shares the value's buffer, and is in
// place when the loop holds the list's only reference. It works for every dtype: variants
// (TensorArrays carried by the loop, a nested loop's lists) included.

struct LoopVars {
  std::vector<int> varying;      // loop variables the body changes
  std::vector<int> invariant;    // loop variables the body returns unchanged
  std::vector<int> grad_inputs;  // body inputs whose gradients the backward loop carries
  std::vector<DType> grad_types;
  std::vector<int> recorded;  // varying variables the backward function reads
};

AttrMap ElementDTypeAttr(DType dtype) {
  AttrMap attrs;
  attrs.Set("element_dtype", dtype);
  return attrs;
}

// Whether gradients flow through a loop variable of this dtype: floats, complex numbers, and
// variants (the TensorLists behind TensorArrays, whose gradients are lists).
bool CarriesGradient(DType dtype) {
  return IsFloating(dtype) || IsComplex(dtype) || dtype == DType::kVariant;
}

bool Contains(const std::vector<int>& list, int value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

DType TypeOf(const Endpoint& e) { return e.node->output_type(e.index); }

// The lists the recording loop fills, as outputs of the recording While.
struct Recording {
  std::vector<Endpoint> histories;      // per LoopVars::recorded
  std::vector<Endpoint> intermediates;  // per SplitGradient::intermediates
  Endpoint count;
};

Status RecordingLoop(GradientContext& ctx, const FunctionDef& cond, const FunctionDef& forward,
                     const LoopVars& vars, const SplitGradient& split, Recording* out) {
  const Node& w = ctx.node();
  const int n = w.num_inputs();
  const int num_lists = static_cast<int>(vars.recorded.size() + split.intermediates.size());
  std::string names[2];
  for (int f = 0; f < 2; ++f) {
    FunctionBuilder b(*ctx.graph(), (f == 0 ? cond.name : forward.name) + "_record");
    std::vector<Endpoint> x, lists;
    for (int j = 0; j < n; ++j) x.push_back(b.Arg(w.input_type(j), w.output_shape(j)));
    for (int l = 0; l < num_lists; ++l) lists.push_back(b.Arg(DType::kVariant, PartialShape{}));
    Endpoint iterations = b.Arg(DType::kInt32, PartialShape{});
    std::vector<Endpoint> rets;
    if (f == 0) {
      rets = b.Call(cond, x);
    } else {
      std::vector<Endpoint> values = b.Call(forward, x);
      rets.assign(values.begin(), values.begin() + n);
      // The values recorded: the varying variables' next values, then the intermediates.
      std::vector<Endpoint> pushed;
      for (int j : vars.recorded) pushed.push_back(values[j]);
      pushed.insert(pushed.end(), values.begin() + n, values.end());
      for (int l = 0; l < num_lists; ++l) {
        rets.push_back(
            b.Op("TensorListPushBack", {lists[l], pushed[l]}, ElementDTypeAttr(TypeOf(pushed[l]))));
      }
      rets.push_back(b.Op("AddV2", {iterations, b.ScalarInt32(1)}));
    }
    FS_ASSIGN_OR_RETURN(names[f], b.Finish(rets));
  }
  std::vector<Endpoint> inputs = w.inputs();
  auto int32_const = [&](int32_t value) {
    AttrMap attrs;
    attrs.Set("value", Tensor::Scalar<int32_t>(value));
    attrs.Set("dtype", DType::kInt32);
    return ctx.Op("Const", {}, attrs);
  };
  auto empty_list = [&](DType dtype) {
    AttrMap list_attrs = ElementDTypeAttr(dtype);
    list_attrs.Set("shape_type", DType::kInt32);
    return ctx.Op("EmptyTensorList", {int32_const(-1), int32_const(-1)}, list_attrs);
  };
  // A history starts with the loop's inputs; an intermediate's list starts empty.
  for (int j : vars.recorded) {
    inputs.push_back(ctx.Op("TensorListPushBack", {empty_list(w.input_type(j)), w.input(j)},
                            ElementDTypeAttr(w.input_type(j))));
  }
  for (const Endpoint& e : split.intermediates) inputs.push_back(empty_list(TypeOf(e)));
  inputs.push_back(int32_const(0));
  AttrMap attrs;
  attrs.Set("cond", FunctionRef{names[0]});
  attrs.Set("body", FunctionRef{names[1]});
  // Lets a run that needs both loops run only this one (see RecordingLoopStandIns).
  attrs.Set(kRecordsLoopAttr, w.name());
  Node* record = ctx.AddNode("While", inputs, attrs);
  if (record == nullptr) return ctx.status();
  int output = n;
  for (size_t r = 0; r < vars.recorded.size(); ++r)
    out->histories.push_back(Endpoint{record, output++});
  for (size_t i = 0; i < split.intermediates.size(); ++i)
    out->intermediates.push_back(Endpoint{record, output++});
  out->count = Endpoint{record, output};
  return Status::OK();
}

Status WhileGradient(GradientContext& ctx) {
  const Node& w = ctx.node();
  const FunctionLibrary& library = ctx.graph()->library();
  std::string cond_name, body_name;
  FS_RETURN_IF_ERROR(FunctionAttr(w, "cond", &cond_name));
  FS_RETURN_IF_ERROR(FunctionAttr(w, "body", &body_name));
  const FunctionDef* cond = library.Find(cond_name);
  const FunctionDef* body = library.Find(body_name);
  if (cond == nullptr || body == nullptr) {
    return errors::NotFound("the functions of While ", w.name(), " are not in the library");
  }
  const int n = w.num_inputs();
  LoopVars vars;
  for (int j = 0; j < n; ++j) {
    const bool passes_through = body->rets[j] == body->args[j];
    (passes_through ? vars.invariant : vars.varying).push_back(j);
    if (!passes_through && w.input_type(j) == DType::kResource) {
      return errors::Unimplemented("the gradient of While ", w.name(),
                                   " with a resource loop variable that changes");
    }
  }
  GradientBody grads;
  FS_RETURN_IF_ERROR(BuildGradientBody(*body, &grads));
  for (int j : vars.varying) {
    if (!CarriesGradient(w.input_type(j))) continue;
    vars.grad_inputs.push_back(j);
    vars.grad_types.push_back(w.input_type(j));
  }
  for (int j : vars.invariant) {
    const Endpoint& g = grads.grads[j];
    if (g.node == nullptr) continue;
    vars.grad_inputs.push_back(j);
    vars.grad_types.push_back(g.node->output_type(g.index));
  }
  // A float loop invariant also gets the gradient of its own (passed-through) output.
  auto passthrough_grad = [&](int j) {
    return ctx.has_output_grad(j) && CarriesGradient(w.input_type(j)) ? ctx.output_grad(j)
                                                                      : Endpoint{};
  };
  if (vars.grad_inputs.empty()) {
    for (int j : vars.invariant) ctx.SetInputGrad(j, passthrough_grad(j));
    return Status::OK();
  }
  FS_ASSIGN_OR_RETURN(SplitGradient split,
                      SplitGradientFunction(*body, grads, vars.grad_inputs, vars.grad_types));
  const FunctionDef* forward = library.Find(split.forward);
  const FunctionDef* body_grad = library.Find(split.backward);
  for (int j : vars.varying)
    if (Contains(split.reads_inputs, j)) vars.recorded.push_back(j);

  Recording recording;
  FS_RETURN_IF_ERROR(RecordingLoop(ctx, *cond, *forward, vars, split, &recording));

  // Backward loop variables: k, one gradient per grad input, the recorded lists, the invariants.
  const int num_grads = static_cast<int>(vars.grad_inputs.size());
  std::vector<Endpoint> lists = recording.histories;
  lists.insert(lists.end(), recording.intermediates.begin(), recording.intermediates.end());
  std::string names[2];
  for (int f = 0; f < 2; ++f) {
    FunctionBuilder b(*ctx.graph(), body->name + (f == 0 ? "_grad_cond" : "_grad_body"));
    Endpoint k = b.Arg(DType::kInt32, PartialShape{});
    std::vector<Endpoint> g, h, inv;
    for (int m = 0; m < num_grads; ++m) {
      g.push_back(b.Arg(vars.grad_types[m], w.output_shape(vars.grad_inputs[m])));
    }
    for (size_t l = 0; l < lists.size(); ++l) h.push_back(b.Arg(DType::kVariant, PartialShape{}));
    for (int j : vars.invariant) inv.push_back(b.Arg(w.input_type(j), w.output_shape(j)));
    std::vector<Endpoint> rets;
    if (f == 0) {
      rets.push_back(b.Op("GreaterEqual", {k, b.ScalarInt32(0)}));
    } else {
      // The loop variables at the start of iteration k (those the backward function reads).
      std::vector<Endpoint> x(n);
      for (size_t r = 0; r < vars.recorded.size(); ++r) {
        const int j = vars.recorded[r];
        x[j] = b.Op("TensorListGetItem", {h[r], k, b.ScalarInt32(-1)},
                    ElementDTypeAttr(w.input_type(j)));
      }
      for (size_t i = 0; i < vars.invariant.size(); ++i) x[vars.invariant[i]] = inv[i];
      std::vector<Endpoint> inputs;
      for (int j : split.reads_inputs) inputs.push_back(x[j]);
      // Iteration k's intermediates.
      for (size_t i = 0; i < split.intermediates.size(); ++i) {
        inputs.push_back(b.Op("TensorListGetItem",
                              {h[vars.recorded.size() + i], k, b.ScalarInt32(-1)},
                              ElementDTypeAttr(TypeOf(split.intermediates[i]))));
      }
      // Incoming gradients of the body's outputs: the carried ones. A pass-through output's
      // gradient reaches its input unchanged, so giving it the sum so far makes the function
      // return the new sum (no zeros to add, no second sum per iteration).
      std::vector<char> summed_in_call(num_grads, 0);
      for (int o : grads.dy_outputs) {
        const auto m = std::find(vars.grad_inputs.begin(), vars.grad_inputs.end(), o) -
                       vars.grad_inputs.begin();
        if (m == num_grads) {
          inputs.push_back(b.Op("ZerosLike", {x[o]}));
          continue;
        }
        inputs.push_back(g[m]);
        summed_in_call[m] = 1;
      }
      std::vector<Endpoint> step = b.Call(*body_grad, inputs);
      rets.push_back(b.Op("Sub", {k, b.ScalarInt32(1)}));
      for (int m = 0; m < num_grads; ++m) {
        if (summed_in_call[m] || Contains(vars.varying, vars.grad_inputs[m])) {
          rets.push_back(step[m]);
          continue;
        }
        // An invariant whose gradient the call does not sum (a variable's handle) is summed
        // here. Gradients of lists add up with AddN (element by element), others with AddV2.
        const char* add = vars.grad_types[m] == DType::kVariant ? "AddN" : "AddV2";
        rets.push_back(b.Op(add, {g[m], step[m]}));
      }
      rets.insert(rets.end(), h.begin(), h.end());
      rets.insert(rets.end(), inv.begin(), inv.end());
    }
    FS_ASSIGN_OR_RETURN(names[f], b.Finish(rets));
  }

  std::vector<Endpoint> inputs = {
      ctx.Op("Sub", {recording.count, ctx.ScalarLike(recording.count, 1)})};
  for (int m = 0; m < num_grads; ++m) {
    const int j = vars.grad_inputs[m];
    if (w.input_type(j) == DType::kResource) {
      AttrMap read;
      read.Set("dtype", vars.grad_types[m]);
      inputs.push_back(ctx.Op("ZerosLike", {ctx.Op("ReadVariableOp", {w.input(j)}, read)}));
    } else {
      inputs.push_back(ctx.output_grad(j));  // zeros when nothing flows into output j
    }
  }
  inputs.insert(inputs.end(), lists.begin(), lists.end());
  for (int j : vars.invariant) inputs.push_back(w.input(j));
  AttrMap attrs;
  attrs.Set("cond", FunctionRef{names[0]});
  attrs.Set("body", FunctionRef{names[1]});
  Node* backward = ctx.AddNode("While", inputs, attrs);
  if (backward == nullptr) return ctx.status();
  for (int m = 0; m < num_grads; ++m)
    ctx.SetInputGrad(vars.grad_inputs[m], Endpoint{backward, 1 + m});
  for (int j : vars.invariant) {
    if (!Contains(vars.grad_inputs, j)) ctx.SetInputGrad(j, passthrough_grad(j));
  }
  return Status::OK();
}

bool RegisterWhileOps() {
  for (const char* name : {"While", "StatelessWhile"}) {
    OpBuilder b(name);
    b.InputTypeList("input", "T")
        .OutputTypeList("output", "T")
        .RequiredAttr("cond", AttrType::kFunc)
        .RequiredAttr("body", AttrType::kFunc)
        .Attr("output_shapes", AttrValue(std::vector<PartialShape>{}))
        .Attr("parallel_iterations", 10)
        .Shape(WhileShape)
        .KernelClass<WhileKernel>("CPU")
        .Gradient(WhileGradient);
    // TF marks While stateful (its body may be) and StatelessWhile not.
    if (std::string(name) == "While") b.Stateful();
    OpRegistrar registrar(b);
  }
  return true;
}
const bool kWhileOpsRegistered = RegisterWhileOps();

}  // namespace
}  // namespace flowstone
