// StatusError: how a C++ Status reaches Python. flowstone/errors.py turns it into the matching
// tf.errors class (or ValueError/TypeError/RuntimeError when the status says so).
#include "common.h"

namespace flowstone::python {
namespace {
PyObject* status_error_type = nullptr;
}  // namespace

void RegisterErrors(nb::module_& m) {
  status_error_type = PyErr_NewExceptionWithDoc(
      "flowstone._C.StatusError", "A failed C++ Status: args are (code, message, payloads dict).",
      PyExc_Exception, nullptr);
  m.attr("StatusError") = nb::handle(status_error_type);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusException& e) {
      nb::dict payloads;
      if (const auto* map = e.status.payloads()) {
        for (const auto& [k, v] : *map) payloads[nb::str(k.c_str())] = nb::str(v.c_str());
      }
      // Messages may quote user bytes (a string element, a corrupt record): bytes that are not
      // UTF-8 become \xNN escapes rather than a failed conversion.
      const std::string& text = e.status.message();
      nb::object message = nb::steal(PyUnicode_DecodeUTF8(
          text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace"));
      nb::tuple args = nb::make_tuple(static_cast<int>(e.status.code()), message, payloads);
      PyErr_SetObject(status_error_type, args.ptr());
    }
  });
}

}  // namespace flowstone::python
