#define PY_ARRAY_UNIQUE_SYMBOL flowstone_numpy_api
#include "numpy_conversion.h"

#include <numpy/arrayobject.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace flowstone::python {
namespace {

int NumpyType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return NPY_FLOAT32;
    case DType::kFloat64:
      return NPY_FLOAT64;
    case DType::kInt32:
      return NPY_INT32;
    case DType::kInt64:
      return NPY_INT64;
    case DType::kUInt8:
      return NPY_UINT8;
    case DType::kBool:
      return NPY_BOOL;
    case DType::kFloat16:
      return NPY_FLOAT16;
    case DType::kBFloat16:
      return NPY_FLOAT32;
    case DType::kComplex64:
      return NPY_COMPLEX64;
    case DType::kComplex128:
      return NPY_COMPLEX128;
    case DType::kString:
      return NPY_OBJECT;
    default:
      return -1;
  }
}

// The pending Python exception's message, cleared: conversion failures become Status errors.
std::string TakePythonError() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  std::string message = "unknown error";
  if (value != nullptr) {
    PyObject* text = PyObject_Str(value);
    if (text != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(text);
      if (utf8 != nullptr) message = utf8;
      Py_DECREF(text);
    }
    PyErr_Clear();  // a failing str() must not leave an exception behind
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return message;
}

void ReleaseBuffer(PyObject* capsule) {
  static_cast<Buffer*>(PyCapsule_GetPointer(capsule, "flowstone.buffer"))->Unref();
}

// A string tensor as a numpy object array of bytes, as TensorFlow fetches it; a scalar is the
// bytes object itself (TensorFlow's sess.run returns b"..." for a scalar string).
PyObject* StringTensorToNumpy(const Tensor& tensor, int rank, npy_intp* dims) {
  if (rank == 0) {
    const std::string& value = *tensor.data<std::string>();
    return PyBytes_FromStringAndSize(value.data(), static_cast<Py_ssize_t>(value.size()));
  }
  // Object arrays start zeroed (NULL items, which numpy releases as None).
  PyObject* array = PyArray_SimpleNew(rank, dims, NPY_OBJECT);
  if (array == nullptr) return nullptr;
  PyObject** items = static_cast<PyObject**>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)));
  const std::string* strings = tensor.data<std::string>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    items[i] =
        PyBytes_FromStringAndSize(strings[i].data(), static_cast<Py_ssize_t>(strings[i].size()));
    if (items[i] == nullptr) {
      Py_DECREF(array);
      return nullptr;
    }
  }
  return array;
}

// Fills a string tensor from an object array: bytes are copied as they are, str is encoded as
// UTF-8 (as TensorFlow does), anything else is an error naming the element.
Status NumpyToStringTensor(PyArrayObject* src, Tensor* out) {
  PyObject* iterator = PyArray_IterNew(reinterpret_cast<PyObject*>(src));
  if (iterator == nullptr) {
    return errors::InvalidArgument("value cannot be converted to a string array: ",
                                   TakePythonError());
  }
  auto* it = reinterpret_cast<PyArrayIterObject*>(iterator);
  std::string* dst = out->data<std::string>();
  Status status;
  for (int64_t i = 0; it->index < it->size; ++i) {
    PyObject* item = PyArray_GETITEM(src, static_cast<char*>(it->dataptr));
    if (item == nullptr) {
      status = errors::InvalidArgument("value cannot be converted to a string array: ",
                                       TakePythonError());
      break;
    }
    if (PyBytes_Check(item)) {
      dst[i].assign(PyBytes_AS_STRING(item), static_cast<size_t>(PyBytes_GET_SIZE(item)));
    } else if (PyUnicode_Check(item)) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item, &size);
      if (utf8 == nullptr) {
        status = errors::InvalidArgument("string element ", i,
                                         " cannot be encoded as UTF-8: ", TakePythonError());
      } else {
        dst[i].assign(utf8, static_cast<size_t>(size));
      }
    } else {
      status = errors::InvalidArgument("value cannot be converted to a string array: element ", i,
                                       " is of type ", Py_TYPE(item)->tp_name,
                                       ", expected bytes or str");
    }
    Py_DECREF(item);
    if (!status.ok()) break;
    PyArray_ITER_NEXT(it);
  }
  Py_DECREF(iterator);
  if (!status.ok()) *out = Tensor();
  return status;
}

}  // namespace

bool InitNumpy() {
  if (_import_array() < 0) return false;
  return true;
}

DType DTypeOfNumpy(PyObject* object) {
  PyArray_Descr* descr = nullptr;
  if (PyArray_Check(object)) {
    descr = PyArray_DESCR(reinterpret_cast<PyArrayObject*>(object));
  } else if (PyArray_DescrCheck(object)) {
    descr = reinterpret_cast<PyArray_Descr*>(object);
  } else {
    return DType::kInvalid;
  }
  switch (descr->type_num) {
    case NPY_FLOAT32:
      return DType::kFloat32;
    case NPY_FLOAT64:
      return DType::kFloat64;
    case NPY_INT32:
      return DType::kInt32;
    case NPY_INT64:
      return DType::kInt64;
    case NPY_LONGLONG:
      return sizeof(long long) == 8 ? DType::kInt64 : DType::kInvalid;
    case NPY_UINT8:
      return DType::kUInt8;
    case NPY_BOOL:
      return DType::kBool;
    case NPY_FLOAT16:
      return DType::kFloat16;
    case NPY_COMPLEX64:
      return DType::kComplex64;
    case NPY_COMPLEX128:
      return DType::kComplex128;
    case NPY_OBJECT:
    case NPY_STRING:
    case NPY_UNICODE:
      return DType::kString;
    default:
      return DType::kInvalid;
  }
}

PyObject* FetchedValue(const Tensor& tensor) {
  PyObject* value = TensorToNumpy(tensor);
  if (value == nullptr || tensor.rank() != 0 || !PyArray_Check(value)) return value;
  return PyArray_Return(reinterpret_cast<PyArrayObject*>(value));  // consumes the 0-d array
}

Status CheckNumpyCanHold(const Tensor& tensor) {
  int64_t bytes = static_cast<int64_t>(std::max<size_t>(DTypeSize(tensor.dtype()), 1));
  for (int i = 0; i < tensor.rank(); ++i) {
    if (tensor.dim(i) == 0) continue;
    if (__builtin_mul_overflow(bytes, tensor.dim(i), &bytes)) {
      return errors::InvalidArgument(
          "cannot fetch a tensor of shape ", tensor.shape().ToString(),
          " as a numpy array: numpy requires the product of the non-zero dimensions and the item "
          "size to fit in 64 bits, even for an empty array");
    }
  }
  return Status::OK();
}

PyObject* TensorToNumpy(const Tensor& tensor, bool share) {
  int type = NumpyType(tensor.dtype());
  if (type < 0) {
    PyErr_Format(PyExc_TypeError, "cannot convert a %s tensor to numpy", DTypeName(tensor.dtype()));
    return nullptr;
  }
  const int rank = tensor.rank();
  npy_intp dims[NPY_MAXDIMS];
  if (rank > NPY_MAXDIMS) {
    PyErr_Format(PyExc_ValueError, "tensor of rank %d exceeds numpy's maximum rank", rank);
    return nullptr;
  }
  for (int i = 0; i < rank; ++i) dims[i] = static_cast<npy_intp>(tensor.dim(i));

  if (tensor.dtype() == DType::kString) return StringTensorToNumpy(tensor, rank, dims);
  if (tensor.dtype() == DType::kBFloat16) {
    PyObject* array = PyArray_SimpleNew(rank, dims, NPY_FLOAT32);
    if (array == nullptr) return nullptr;
    float* out = static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)));
    const BFloat16* in = tensor.data<BFloat16>();
    for (int64_t i = 0; i < tensor.num_elements(); ++i) out[i] = static_cast<float>(in[i]);
    return array;
  }
  if ((!share && !tensor.RefCountIsOne()) || tensor.buffer() == nullptr) {
    PyObject* array = PyArray_SimpleNew(rank, dims, type);
    if (array == nullptr) return nullptr;
    std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)), tensor.raw_data(),
                tensor.bytes());
    return array;
  }
  Buffer* buffer = tensor.buffer();
  PyObject* array = PyArray_New(&PyArray_Type, rank, dims, type, nullptr, tensor.raw_data(), 0,
                                NPY_ARRAY_CARRAY, nullptr);
  if (array == nullptr) return nullptr;
  PyObject* capsule = PyCapsule_New(buffer, "flowstone.buffer", ReleaseBuffer);
  if (capsule == nullptr) {
    Py_DECREF(array);
    return nullptr;
  }
  buffer->Ref();  // owned by the capsule from here on
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), capsule) < 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

Status NumpyToTensor(PyObject* object, DType dtype, Tensor* out) {
  int type = NumpyType(dtype);
  if (type < 0) return errors::InvalidArgument("cannot feed a ", DTypeName(dtype), " tensor");
  // Any array-like becomes an array of its own dtype first (an ndarray as it is: no copy). The
  // one copy into the tensor's memory below then handles strides (negative, zero), byte order,
  // read-only memory and the cast, so a strided view is never first made contiguous. Strings
  // become an object array (as TensorFlow's feeds do), which keeps bytes objects as they are.
  PyArray_Descr* as_objects = dtype == DType::kString ? PyArray_DescrFromType(NPY_OBJECT) : nullptr;
  PyObject* source = PyArray_FromAny(object, as_objects, 0, 0, 0, nullptr);
  if (source == nullptr) {
    return errors::InvalidArgument("value cannot be converted to a ", DTypeName(dtype),
                                   " array: ", TakePythonError());
  }
  PyArrayObject* src = reinterpret_cast<PyArrayObject*>(source);
  Dims dims;
  for (int i = 0; i < PyArray_NDIM(src); ++i) dims.push_back(PyArray_DIM(src, i));
  TensorShape shape(dims);
  Status s = Tensor::Allocate(CpuAllocator(), dtype, shape, out);
  if (!s.ok()) {
    Py_DECREF(source);
    return errors::ResourceExhausted("OOM when allocating a fed tensor with shape ",
                                     shape.ToString(), " and type ", DTypeShortName(dtype),
                                     " on the host");
  }
  if (dtype == DType::kString) {
    s = NumpyToStringTensor(src, out);
    Py_DECREF(source);
    return s;
  }
  // bfloat16 has no numpy type: the tensor's memory is filled from a float32 copy.
  std::vector<float> widened;
  if (dtype == DType::kBFloat16) widened.resize(out->num_elements());
  void* destination = dtype == DType::kBFloat16 ? widened.data() : out->raw_data();
  PyObject* view = PyArray_New(&PyArray_Type, PyArray_NDIM(src), PyArray_DIMS(src), type, nullptr,
                               destination, 0, NPY_ARRAY_CARRAY, nullptr);
  int copied = view == nullptr ? -1 : PyArray_CopyInto(reinterpret_cast<PyArrayObject*>(view), src);
  Py_XDECREF(view);
  Py_DECREF(source);
  if (copied < 0) {
    *out = Tensor();
    return errors::InvalidArgument("value cannot be converted to a ", DTypeName(dtype),
                                   " array: ", TakePythonError());
  }
  if (dtype == DType::kBFloat16) {
    BFloat16* dst = out->data<BFloat16>();
    for (int64_t i = 0; i < out->num_elements(); ++i) dst[i] = BFloat16(widened[i]);
  }
  return Status::OK();
}

}  // namespace flowstone::python
