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
      nb::tuple args = nb::make_tuple(static_cast<int>(e.status.code()),
                                      nb::str(e.status.message().c_str()), payloads);
      PyErr_SetObject(status_error_type, args.ptr());
    }
  });
}

}  // namespace flowstone::python
