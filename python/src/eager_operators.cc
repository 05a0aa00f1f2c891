// EagerTensor's `+`, `-` and `*` on two eager tensors of one dtype, with no Python frame: the
// operator is a C function that reads the operands' handles from their slots, runs the op
// prepared once per dtype (EagerContext::Prepare) and builds the result EagerTensor directly.
// Every other case (a Python number, mixed dtypes, a tf.device scope, an error to raise) calls
// the Python operator it was made from (framework/eager.py), which handles it as before.
#include "eager_operators.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/eager.h"

// After Python.h (from nanobind): PyMember_SetOne.
#include <structmember.h>

namespace flowstone::python {
namespace {

// The Python EagerTensor class, its slots and the tf.DType objects by core enum, registered by
// framework/eager.py when it is imported.
struct TensorClass {
  PyTypeObject* type = nullptr;
  PyMemberDef* handle = nullptr;
  PyMemberDef* op = nullptr;
  PyMemberDef* value_index = nullptr;
  PyMemberDef* dtype = nullptr;
  PyMemberDef* shape = nullptr;
  PyObject* dtypes[kNumDTypes] = {};
};
TensorClass tensor_class;

// tf.device scopes open now (any thread, any graph). Operators take the fast path only when
// there are none, since then no op has a device requested.
std::atomic<int> open_device_scopes{0};

// Holders that need every op to go through apply_op (tf.debugging.enable_check_numerics, which
// checks each op's outputs there): the fast path is off while any holds.
std::atomic<int> fast_path_holds{0};

// Ops with more elements than this run with the GIL released; smaller ones are over before a
// release and reacquire would be.
constexpr int64_t kReleaseGilElements = 1 << 14;

// One operator: its op type, the Python operator for every other case, and the op prepared per
// dtype (filled on first use, then only read; CachedOps live for the process).
struct Operator {
  std::string op_type;
  nb::object fallback;
  std::atomic<EagerContext::CachedOp*> prepared[kNumDTypes] = {};
  PyMethodDef def{};
};

PyMemberDef* SlotOf(PyTypeObject* type, const char* name) {
  nb::object descr = nb::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name));
  if (!descr.is_valid()) throw nb::python_error();
  if (!PyObject_TypeCheck(descr.ptr(), &PyMemberDescr_Type)) {
    throw nb::type_error("EagerTensor's attributes must be __slots__");
  }
  // The descriptor stays in the class's __dict__, so its member definition outlives this.
  return reinterpret_cast<PyMemberDescrObject*>(descr.ptr())->d_member;
}

// The handle in an EagerTensor's `_handle` slot (borrowed), or nullptr.
const TensorHandle* HandleOf(PyObject* tensor) {
  PyObject* handle =
      *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(tensor) + tensor_class.handle->offset);
  const TensorHandle* out = nullptr;
  if (handle == nullptr || !nb::try_cast<const TensorHandle*>(nb::handle(handle), out)) {
    return nullptr;
  }
  return out;
}

// A new EagerTensor for `handle`, as EagerTensor.__init__ would make it.
PyObject* NewTensor(TensorHandle handle) {
  PyObject* dtype = tensor_class.dtypes[static_cast<int>(handle.tensor().dtype())];
  if (dtype == nullptr) return nullptr;
  nb::object py_handle = nb::cast(std::move(handle), nb::rv_policy::move);
  PyObject* tensor = tensor_class.type->tp_alloc(tensor_class.type, 0);
  if (tensor == nullptr) return nullptr;
  char* base = reinterpret_cast<char*>(tensor);
  static PyObject* const zero = PyLong_FromLong(0);
  if (PyMember_SetOne(base, tensor_class.handle, py_handle.ptr()) != 0 ||
      PyMember_SetOne(base, tensor_class.op, Py_None) != 0 ||
      PyMember_SetOne(base, tensor_class.value_index, zero) != 0 ||
      PyMember_SetOne(base, tensor_class.dtype, dtype) != 0 ||
      PyMember_SetOne(base, tensor_class.shape, Py_None) != 0) {
    Py_DECREF(tensor);
    return nullptr;
  }
  return tensor;
}

// The fast path; nullptr (with no Python error set) where the fallback must handle the call.
PyObject* TryFast(Operator& op, PyObject* a, PyObject* b) {
  if (open_device_scopes.load(std::memory_order_relaxed) != 0) return nullptr;
  if (fast_path_holds.load(std::memory_order_relaxed) != 0) return nullptr;
  if (Py_TYPE(a) != tensor_class.type || Py_TYPE(b) != tensor_class.type) return nullptr;
  const TensorHandle* x = HandleOf(a);
  const TensorHandle* y = HandleOf(b);
  if (x == nullptr || y == nullptr) return nullptr;
  const DType dtype = x->tensor().dtype();
  if (y->tensor().dtype() != dtype) return nullptr;
  EagerContext& ctx = EagerContext::Global();
  EagerContext::CachedOp* prepared =
      op.prepared[static_cast<int>(dtype)].load(std::memory_order_acquire);
  if (prepared == nullptr) {
    if (!ctx.Prepare(op.op_type, {dtype, dtype}, {}, "", &prepared).ok()) return nullptr;
    op.prepared[static_cast<int>(dtype)].store(prepared, std::memory_order_release);
  }
  // Reused by every call on this thread, so that a call allocates only its result.
  thread_local std::vector<const TensorHandle*> inputs(2);
  thread_local std::vector<TensorHandle> outputs;
  inputs[0] = x;
  inputs[1] = y;
  static const std::string no_name;
  Status s;
  if (std::max(x->tensor().num_elements(), y->tensor().num_elements()) >= kReleaseGilElements) {
    nb::gil_scoped_release release;
    s = ctx.Run(*prepared, inputs, no_name, &outputs);
  } else {
    s = ctx.Run(*prepared, inputs, no_name, &outputs);
  }
  // A failed op is run again by the fallback, which raises its tf.errors exception with the
  // user's line; these ops have no side effects.
  if (!s.ok() || outputs.size() != 1) return nullptr;
  return NewTensor(std::move(outputs[0]));
}

// The operators made so far; each is a method descriptor of EagerTensor calling
// CallOperator<its index>, so `x + y` reaches it with no bound-method object in between.
constexpr int kMaxOperators = 8;
Operator* operators[kMaxOperators] = {};
int num_operators = 0;

template <int kIndex>
PyObject* CallOperator(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Operator& op = *operators[kIndex];
  if (nargs == 1) {
    PyObject* result = TryFast(op, self, args[0]);
    if (result != nullptr || PyErr_Occurred()) return result;
  }
  std::vector<PyObject*> call_args{self};
  call_args.insert(call_args.end(), args, args + nargs);
  return PyObject_Vectorcall(op.fallback.ptr(), call_args.data(), call_args.size(), nullptr);
}

template <int... kIndex>
constexpr std::array<_PyCFunctionFast, sizeof...(kIndex)> Callers(
    std::integer_sequence<int, kIndex...>) {
  return {CallOperator<kIndex>...};
}
constexpr auto kCallers = Callers(std::make_integer_sequence<int, kMaxOperators>());

}  // namespace

void RegisterEagerOperators(nb::module_& m) {
  m.def(
      "eager_register_tensor_class",
      [](nb::handle cls, nb::list dtypes_by_enum) {
        if (!PyType_Check(cls.ptr())) throw nb::type_error("expected the EagerTensor class");
        auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
        TensorClass registered;
        registered.type = type;
        registered.handle = SlotOf(type, "_handle");
        registered.op = SlotOf(type, "_op");
        registered.value_index = SlotOf(type, "_value_index");
        registered.dtype = SlotOf(type, "_dtype");
        registered.shape = SlotOf(type, "_shape");
        for (size_t i = 0; i < dtypes_by_enum.size() && i < kNumDTypes; ++i) {
          nb::handle dtype = dtypes_by_enum[i];
          registered.dtypes[i] = dtype.is_none() ? nullptr : dtype.inc_ref().ptr();
        }
        Py_INCREF(cls.ptr());  // both live for the process
        tensor_class = registered;
      },
      "Registers EagerTensor (and tf.DType objects by core enum) for the C++ operators.");
  m.def(
      "eager_operator",
      [](const std::string& op_type, nb::object fallback) {
        if (tensor_class.type == nullptr) {
          throw nb::type_error("eager_register_tensor_class must be called first");
        }
        if (num_operators == kMaxOperators) throw nb::value_error("too many eager operators");
        // Operators live for the process (they are class attributes of EagerTensor).
        auto* op = new Operator();
        op->op_type = op_type;
        op->fallback = std::move(fallback);
        op->def.ml_name = "eager_operator";
        op->def.ml_meth =
            reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(kCallers[num_operators]));
        op->def.ml_flags = METH_FASTCALL;
        op->def.ml_doc = "An EagerTensor operator running its op in C++ (eager_operators.cc).";
        nb::object method = nb::steal(PyDescr_NewMethod(tensor_class.type, &op->def));
        if (!method.is_valid()) throw nb::python_error();
        operators[num_operators++] = op;
        return method;
      },
      nb::arg("op_type"), nb::arg("fallback"),
      "An EagerTensor method computing `op_type` of self and other in C++; `fallback` (the "
      "Python operator) handles what it does not.");
  m.def(
      "eager_device_scope",
      [](int delta) { open_device_scopes.fetch_add(delta, std::memory_order_relaxed); },
      "Counts tf.device scopes entered (+1) and left (-1).");
  m.def(
      "eager_device_scopes", [] { return open_device_scopes.load(std::memory_order_relaxed); },
      "tf.device scopes open now (0: no op has a device requested).");
  m.def(
      "eager_operators_hold",
      [](int delta) { fast_path_holds.fetch_add(delta, std::memory_order_relaxed); },
      "Turns the operators' fast path off (+1) while a caller needs every op through apply_op, "
      "and releases that hold (-1).");
}

}  // namespace flowstone::python
