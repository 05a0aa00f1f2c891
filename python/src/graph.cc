// Bindings for graphs, nodes, attrs and the op registry.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>

#include "common.h"
#include "flowstone/function.h"
#include "flowstone/gradients.h"
#include "flowstone/op_library.h"
#include "numpy_conversion.h"

namespace flowstone::python {
namespace {

Status AttrTypeError(const std::string& name, const char* expected, nb::handle value) {
  return errors::TypeError("Expected ", expected, " for attr '", name, "', got ",
                           nb::str(nb::repr(value)).c_str(), " of type ",
                           nb::str(value.type().attr("__name__")).c_str(), ".");
}

PartialShape ShapeFromPython(nb::handle value, const std::string& name) {
  if (value.is_none()) return PartialShape::Unknown();
  std::vector<int64_t> dims;
  try {
    for (nb::handle d : value) dims.push_back(d.is_none() ? -1 : nb::cast<int64_t>(d));
  } catch (const std::exception&) {
    throw StatusException{AttrTypeError(name, "a shape (a list of ints or None)", value)};
  }
  return PartialShape(dims);
}

Tensor TensorFromPython(nb::handle value, const std::string& name) {
  DType dtype = DTypeOfNumpy(value.ptr());
  if (dtype == DType::kInvalid) {
    throw StatusException{AttrTypeError(name, "a numpy array of a supported dtype", value)};
  }
  Tensor t;
  ThrowIfError(NumpyToTensor(value.ptr(), dtype, &t));
  return t;
}

template <typename T>
T Scalar(nb::handle value, const std::string& name, const char* expected) {
  try {
    return nb::cast<T>(value);
  } catch (const std::exception&) {
    throw StatusException{AttrTypeError(name, expected, value)};
  }
}

template <typename T, typename F>
std::vector<T> List(nb::handle value, const std::string& name, const char* expected, F&& convert) {
  // Only lists and tuples: iterating anything else (a bool, a dict, a string) either raises a
  // bare Python TypeError or gives a list of something else.
  if (!nb::isinstance<nb::list>(value) && !nb::isinstance<nb::tuple>(value)) {
    throw StatusException{AttrTypeError(name, expected, value)};
  }
  std::vector<T> out;
  for (nb::handle item : value) out.push_back(convert(item));
  return out;
}

AttrType GuessType(nb::handle value) {
  if (nb::isinstance<nb::bool_>(value)) return AttrType::kBool;
  if (nb::isinstance<nb::int_>(value)) return AttrType::kInt;
  if (nb::isinstance<nb::float_>(value)) return AttrType::kFloat;
  if (nb::isinstance<nb::str>(value)) return AttrType::kString;
  if (DTypeOfNumpy(value.ptr()) != DType::kInvalid) return AttrType::kTensor;
  // Lists take their element type from the first element; attrs without a schema entry are
  // underscored ones such as `_class` (a list of strings).
  if ((nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) && nb::len(value) > 0) {
    nb::object first = value[0];
    if (nb::isinstance<nb::str>(first)) return AttrType::kStringList;
    if (nb::isinstance<nb::float_>(first)) return AttrType::kFloatList;
  }
  return AttrType::kIntList;
}

}  // namespace

AttrValue AttrFromPython(nb::handle value, const AttrDef* def, const std::string& name) {
  AttrType type = def ? def->type : GuessType(value);
  switch (type) {
    case AttrType::kInt:
      return Scalar<int64_t>(value, name, "an int");
    case AttrType::kFloat:
      // TensorFlow stores float attrs in 32 bits (AttrValue.f): rounding here gives the values
      // TensorFlow computes with, in a graph and after a GraphDef round trip alike.
      return static_cast<double>(static_cast<float>(Scalar<double>(value, name, "a float")));
    case AttrType::kBool:
      return Scalar<bool>(value, name, "a bool");
    case AttrType::kString:
      return Scalar<std::string>(value, name, "a string");
    case AttrType::kType: {
      int64_t v = Scalar<int64_t>(value, name, "a dtype");
      if (v <= 0 || v >= kNumDTypes) throw StatusException{AttrTypeError(name, "a dtype", value)};
      return static_cast<DType>(v);
    }
    case AttrType::kShape:
      return ShapeFromPython(value, name);
    case AttrType::kTensor:
      return TensorFromPython(value, name);
    case AttrType::kIntList:
      return List<int64_t>(value, name, "a list of ints",
                           [&](nb::handle h) { return Scalar<int64_t>(h, name, "ints"); });
    case AttrType::kFloatList:
      return List<double>(value, name, "a list of floats", [&](nb::handle h) {
        return static_cast<double>(static_cast<float>(Scalar<double>(h, name, "floats")));
      });
    case AttrType::kTypeList:
      return List<DType>(value, name, "a list of dtypes", [&](nb::handle h) {
        int64_t v = Scalar<int64_t>(h, name, "dtypes");
        if (v <= 0 || v >= kNumDTypes) throw StatusException{AttrTypeError(name, "dtypes", h)};
        return static_cast<DType>(v);
      });
    case AttrType::kShapeList:
      return List<PartialShape>(value, name, "a list of shapes",
                                [&](nb::handle h) { return ShapeFromPython(h, name); });
    case AttrType::kStringList:
      return List<std::string>(value, name, "a list of strings", [&](nb::handle h) {
        return Scalar<std::string>(h, name, "strings");
      });
    case AttrType::kFunc:
      return FunctionRef{Scalar<std::string>(value, name, "a function name")};
  }
  throw StatusException{AttrTypeError(name, "a supported attr value", value)};
}

nb::object ShapeToPython(const PartialShape& shape) {
  if (!shape.known_rank()) return nb::none();
  nb::list dims;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dim(i) < 0) {
      dims.append(nb::none());
    } else {
      dims.append(nb::int_(shape.dim(i)));
    }
  }
  return dims;
}

nb::object AttrToPython(const AttrValue& value) {
  struct Visitor {
    nb::object operator()(int64_t v) const { return nb::int_(v); }
    nb::object operator()(double v) const { return nb::float_(v); }
    nb::object operator()(bool v) const { return nb::bool_(v); }
    nb::object operator()(const std::string& v) const { return nb::str(v.c_str()); }
    nb::object operator()(DType v) const { return nb::int_(static_cast<int>(v)); }
    nb::object operator()(const PartialShape& v) const { return ShapeToPython(v); }
    nb::object operator()(const Tensor& v) const {
      PyObject* array = TensorToNumpy(v);
      if (array == nullptr) throw nb::python_error();
      return nb::steal(array);
    }
    nb::object operator()(const std::vector<int64_t>& v) const { return nb::cast(v); }
    nb::object operator()(const std::vector<double>& v) const { return nb::cast(v); }
    nb::object operator()(const std::vector<DType>& v) const {
      nb::list out;
      for (DType t : v) out.append(nb::int_(static_cast<int>(t)));
      return out;
    }
    nb::object operator()(const std::vector<PartialShape>& v) const {
      nb::list out;
      for (const auto& s : v) out.append(ShapeToPython(s));
      return out;
    }
    nb::object operator()(const std::vector<std::string>& v) const { return nb::cast(v); }
    nb::object operator()(const FunctionRef& v) const { return nb::str(v.name.c_str()); }
  };
  return std::visit(Visitor{}, value);
}

void RegisterGraph(nb::module_& m) {
  nb::dict dtypes;
  for (int i = 1; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    dtypes[DTypeName(t)] = nb::make_tuple(i, DTypeSize(t), DTypeShortName(t), DTypeToTfEnum(t));
  }
  m.attr("DTYPES") = dtypes;

  nb::class_<NodeRef>(m, "Node")
      .def_prop_ro("id", [](const NodeRef& n) { return n.node->id(); })
      // The graph the node is in (a function body's nodes: that body).
      .def_prop_ro("graph", [](const NodeRef& n) { return n.graph; })
      .def_prop_ro("name", [](const NodeRef& n) { return n.node->name(); })
      .def_prop_ro("type", [](const NodeRef& n) { return n.node->type(); })
      .def_prop_ro("device", [](const NodeRef& n) { return n.node->requested_device(); })
      .def_prop_ro("creation_site", [](const NodeRef& n) { return n.node->creation_site(); })
      .def_prop_ro("num_outputs", [](const NodeRef& n) { return n.node->num_outputs(); })
      .def_prop_ro("num_inputs", [](const NodeRef& n) { return n.node->num_inputs(); })
      .def_prop_ro("is_stateful", [](const NodeRef& n) { return n.node->is_stateful(); })
      .def("output_dtype",
           [](const NodeRef& n, int i) { return static_cast<int>(n.node->output_type(i)); })
      .def("output_shape",
           [](const NodeRef& n, int i) { return ShapeToPython(n.node->output_shape(i)); })
      .def_prop_ro("inputs",
                   [](const NodeRef& n) {
                     nb::list out;
                     for (const Endpoint& e : n.node->inputs())
                       out.append(nb::make_tuple(NodeRef{n.graph, e.node}, e.index));
                     return out;
                   })
      .def_prop_ro("control_inputs",
                   [](const NodeRef& n) {
                     nb::list out;
                     for (Node* d : n.node->control_inputs()) out.append(NodeRef{n.graph, d});
                     return out;
                   })
      .def(
          "attr",
          [](const NodeRef& n, const std::string& name) -> nb::object {
            const AttrValue* v = n.node->attrs().Find(name);
            if (v == nullptr) {
              throw nb::value_error(
                  ("Operation '" + n.node->name() + "' has no attr named '" + name + "'.").c_str());
            }
            return AttrToPython(*v);
          })
      .def("attr_names",
           [](const NodeRef& n) {
             std::vector<std::string> names;
             for (const auto& e : n.node->attrs().entries()) names.push_back(e.first);
             return names;
           })
      .def("debug_string", [](const NodeRef& n) { return n.node->DebugString(); })
      .def("__eq__", [](const NodeRef& a, const NodeRef& b) { return a.node == b.node; })
      .def("__hash__", [](const NodeRef& n) { return reinterpret_cast<intptr_t>(n.node); });

  nb::class_<Graph>(m, "Graph")
      .def(nb::new_([] { return std::make_shared<Graph>(); }))
      .def_static(
          "function_body",
          [](const Graph& outer) { return std::make_shared<Graph>(outer.shared_library()); },
          "A graph for a function body, sharing `outer`'s function library.")
      .def(
          "add_function",
          [](Graph& graph, const std::string& name, std::shared_ptr<Graph> body,
             const std::vector<std::pair<NodeRef, int>>& args,
             const std::vector<std::pair<NodeRef, int>>& rets) {
            FunctionDef def;
            def.name = name;
            def.body = std::move(body);
            for (const auto& [ref, i] : args) def.args.push_back({ref.node, i});
            for (const auto& [ref, i] : rets) def.rets.push_back({ref.node, i});
            ThrowIfError(graph.library().Add(std::move(def)));
          },
          "Adds a function (a body graph, its input Placeholders and its outputs) to the "
          "library.")
      .def("unique_function_name",
           [](const Graph& g, const std::string& base) { return g.library().UniqueName(base); })
      .def(
          "has_function",
          [](const Graph& g, const std::string& name) { return g.library().Find(name) != nullptr; })
      .def("add_node",
           [](Graph& graph, const std::string& op, const std::string& name,
              const std::vector<std::pair<NodeRef, int>>& inputs,
              const std::vector<NodeRef>& control_inputs, nb::dict attrs, const std::string& device,
              const std::string& creation_site) {
             const OpDef* def = OpRegistry::Global().Find(op);
             NodeSpec spec;
             spec.name = name;
             spec.op = op;
             for (const auto& [ref, index] : inputs) spec.inputs.push_back({ref.node, index});
             for (const NodeRef& ref : control_inputs) spec.control_inputs.push_back(ref.node);
             for (auto [key, value] : attrs) {
               std::string attr_name = nb::cast<std::string>(key);
               const AttrDef* attr_def = def ? def->FindAttr(attr_name) : nullptr;
               spec.attrs.Set(attr_name, AttrFromPython(value, attr_def, attr_name));
             }
             spec.device = device;
             spec.creation_site = creation_site;
             StatusOr<Node*> node = graph.AddNode(std::move(spec));
             ThrowIfError(node.status());
             return NodeRef{graph.shared_from_this(), *node};
           })
      .def("set_device",
           [](Graph& g, const NodeRef& n, const std::string& device) {
             if (n.graph.get() != &g) throw nb::value_error("set_device: node of another graph");
             g.SetRequestedDevice(n.node, device);
           })
      .def("refine_output_shape",
           [](Graph& g, const NodeRef& n, int index, nb::handle shape) {
             if (n.graph.get() != &g) {
               throw nb::value_error("refine_output_shape: node of another graph");
             }
             ThrowIfError(g.RefineOutputShape(n.node, index, ShapeFromPython(shape, "shape")));
           })
      .def("unique_name", [](Graph& g, const std::string& base) { return g.UniqueName(base); })
      .def("find_node",
           [](Graph& g, const std::string& name) -> nb::object {
             Node* n = g.FindNode(name);
             if (n == nullptr) return nb::none();
             return nb::cast(NodeRef{g.shared_from_this(), n});
           })
      .def("node", [](Graph& g, int id) { return NodeRef{g.shared_from_this(), g.node(id)}; })
      .def_prop_ro("num_nodes", &Graph::num_nodes)
      .def("finalize", &Graph::Finalize)
      .def_prop_ro("finalized", &Graph::finalized)
      .def_prop_rw("seed", &Graph::seed, &Graph::set_seed);

  m.def(
      "add_gradients",
      [](Graph& graph, const std::vector<std::pair<NodeRef, int>>& ys,
         const std::vector<std::pair<NodeRef, int>>& xs, nb::list grad_ys,
         const std::vector<std::pair<NodeRef, int>>& stop_gradients, const std::string& scope,
         const std::string& creation_site, nb::object gradient_fn) {
        auto endpoints = [](const std::vector<std::pair<NodeRef, int>>& list) {
          std::vector<Endpoint> out;
          for (const auto& [ref, i] : list) out.push_back({ref.node, i});
          return out;
        };
        GradientOptions options;
        for (nb::handle g : grad_ys) {
          if (g.is_none()) {
            options.grad_ys.push_back(Endpoint{});
          } else {
            auto pair = nb::cast<std::pair<NodeRef, int>>(g);
            options.grad_ys.push_back({pair.first.node, pair.second});
          }
        }
        options.stop_gradients = endpoints(stop_gradients);
        options.name_scope = scope;
        options.creation_site = creation_site;
        // gradient_fn(gradient_type, node, output_grads) runs a tf.RegisterGradient function:
        // None when none has that name, else one (node, index) or None per input. A Python
        // exception it raises is re-raised once AddGradients has returned. The node is in the
        // graph being differentiated: this one, or the body of a loop, cond or function call
        // whose gradient is being built.
        std::exception_ptr python_error;
        options.external_gradient = [&](GradientContext& ctx, const std::string& type,
                                        bool* found) -> Status {
          std::shared_ptr<Graph> owner = ctx.graph()->shared_from_this();
          nb::list output_grads;
          for (int o = 0; o < ctx.num_outputs(); ++o) {
            // Like TensorFlow, a missing gradient is zeros for floating (and complex) outputs,
            // else None.
            const DType type = ctx.node().output_type(o);
            if (!ctx.has_output_grad(o) && !IsFloating(type) && !IsComplex(type)) {
              output_grads.append(nb::none());
              continue;
            }
            Endpoint g = ctx.output_grad(o);
            FS_RETURN_IF_ERROR(ctx.status());
            output_grads.append(nb::make_tuple(NodeRef{owner, g.node}, g.index));
          }
          try {
            nb::object result =
                gradient_fn(type, NodeRef{owner, const_cast<Node*>(&ctx.node())}, output_grads);
            *found = !result.is_none();
            if (!*found) return Status::OK();
            nb::list input_grads = nb::cast<nb::list>(result);
            for (size_t i = 0; i < input_grads.size() && i < size_t(ctx.num_inputs()); ++i) {
              if (input_grads[i].is_none()) continue;
              auto pair = nb::cast<std::pair<NodeRef, int>>(input_grads[i]);
              if (pair.first.graph.get() != ctx.graph()) {
                return errors::InvalidArgument(
                    "The gradient function registered as '", type, "' returned, for input ", i,
                    " of op '", ctx.node().name(), "', tensor '", pair.first.node->name(),
                    "' of another graph; a gradient must be built in the graph of its op");
              }
              ctx.SetInputGrad(static_cast<int>(i), Endpoint{pair.first.node, pair.second});
            }
            return Status::OK();
          } catch (const nb::python_error&) {
            python_error = std::current_exception();
            return errors::Cancelled("a tf.RegisterGradient function raised an exception");
          }
        };
        if (gradient_fn.is_none()) options.external_gradient = nullptr;
        std::vector<Endpoint> grads;
        Status status = AddGradients(&graph, endpoints(ys), endpoints(xs), options, &grads);
        if (python_error) std::rethrow_exception(python_error);
        ThrowIfError(status);
        nb::list out;
        for (const Endpoint& g : grads) {
          if (g.node == nullptr) {
            out.append(nb::none());
          } else {
            out.append(nb::make_tuple(NodeRef{graph.shared_from_this(), g.node}, g.index));
          }
        }
        return out;
      },
      "Adds the ops computing d(ys)/d(xs); returns (node, index) per x, or None.");

  m.def(
      "load_op_library",
      [](const std::string& path) {
        std::vector<std::string> names;
        ThrowIfError(LoadOpLibrary(path, &names));
        return names;
      },
      "Loads a custom op library; returns the names of the ops it registered.");
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (const OpDef* op : OpRegistry::Global().ListOps()) names.push_back(op->name);
    return names;
  });
  m.def("op_def", [](const std::string& name) -> nb::object {
    const OpDef* op = OpRegistry::Global().Find(name);
    if (op == nullptr) return nb::none();
    nb::dict out;
    auto args = [](const std::vector<ArgDef>& defs) {
      nb::list list;
      for (const ArgDef& a : defs) {
        list.append(nb::make_tuple(a.name, !a.number_attr.empty() || !a.type_list_attr.empty()));
      }
      return list;
    };
    out["name"] = op->name;
    out["inputs"] = args(op->inputs);
    out["outputs"] = args(op->outputs);
    nb::list attrs;
    for (const AttrDef& a : op->attrs)
      attrs.append(nb::make_tuple(a.name, AttrTypeName(a.type), a.has_default));
    out["attrs"] = attrs;
    // What a schema-driven generator (tests/fuzz) needs beyond names: each input's dtype source
    // (fixed, type attr, number attr, type-list attr), each output's (which ops make a resource or
    // variant input), each attr's default, and each type attr's allowed dtypes (dtypes as DTYPES
    // enum values).
    auto arg_types = [](const std::vector<ArgDef>& defs) {
      nb::list list;
      for (const ArgDef& a : defs) {
        list.append(nb::make_tuple(a.name, static_cast<int>(a.fixed_type), a.type_attr,
                                   a.number_attr, a.type_list_attr));
      }
      return list;
    };
    out["input_types"] = arg_types(op->inputs);
    out["output_types"] = arg_types(op->outputs);
    nb::dict attr_defaults, allowed_types;
    for (const AttrDef& a : op->attrs) {
      if (a.has_default) attr_defaults[a.name.c_str()] = AttrToPython(a.default_value);
      if (a.type == AttrType::kType) {
        nb::list allowed;
        for (DType t : a.allowed_types) allowed.append(static_cast<int>(t));
        allowed_types[a.name.c_str()] = allowed;
      }
    }
    out["attr_defaults"] = attr_defaults;
    out["allowed_types"] = allowed_types;
    out["stateful"] = op->stateful;
    out["has_gradient"] = static_cast<bool>(op->gradient);
    out["not_differentiable"] = op->not_differentiable;
    out["kernels"] = nb::cast(op->KernelDeviceTypes());
    return out;
  });
}

}  // namespace flowstone::python
