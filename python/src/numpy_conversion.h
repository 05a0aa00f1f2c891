// Conversions between numpy arrays and Tensors. Only numpy_conversion.cc touches NumPy's C API.
#pragma once

#include <Python.h>

#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone::python {

// Imports NumPy's C API; call once from module init. Returns false with a Python error set.
bool InitNumpy();

// A new numpy array holding the tensor's values. A buffer nobody else holds is handed over
// without a copy (the array keeps it alive); a shared one (a constant, a variable's value) is
// copied, so writing to the array can never change the graph or the session's state.
// bfloat16 is returned as float32, since numpy has no bfloat16. Strings are object arrays of
// bytes, and a scalar string is a bytes object. With `share`, the array always shares the buffer
// (eager tensors, whose values never change, as TensorFlow's .numpy() does).
PyObject* TensorToNumpy(const Tensor& tensor, bool share = false);

// A fetched tensor as sess.run returns it, as TensorFlow's session does: TensorToNumpy's array,
// but a numpy scalar (np.float32, np.bool_, ...) for a rank-0 tensor (bytes for a string).
PyObject* FetchedValue(const Tensor& tensor);

// Whether numpy can represent the tensor's shape: numpy multiplies the non-zero dimensions and
// the item size even for an empty array, so an empty tensor of shape [0, 2^40, 2^40] has no
// numpy equivalent. The error names the shape.
Status CheckNumpyCanHold(const Tensor& tensor);

// Copies a numpy array (or anything np.asarray accepts) into a tensor of `dtype`, casting as
// numpy's astype does. Returns a Status with numpy's message when the value cannot be converted.
Status NumpyToTensor(PyObject* object, DType dtype, Tensor* out);

// The DType of a numpy array or numpy dtype object, or kInvalid.
DType DTypeOfNumpy(PyObject* array);

}  // namespace flowstone::python
