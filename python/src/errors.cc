// StatusError: how a C++ Status reaches Python. flowstone/errors.py turns it into the matching
// tf.errors class (or ValueError/TypeError/RuntimeError when the status says so).
#include "common.h"

namespace flowstone::python {
namespace {
PyObject* status_error_type = nullptr;

// Messages may quote bytes from untrusted input (a GraphDef's string attr, a string element, a
// corrupt record) that are not UTF-8; they are shown with backslash escapes instead of failing the
// conversion.
nb::str Utf8Lossy(const std::string& text) {
  return nb::steal<nb::str>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace"));
}
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
        for (const auto& [k, v] : *map) payloads[Utf8Lossy(k)] = Utf8Lossy(v);
      }
      nb::tuple args = nb::make_tuple(static_cast<int>(e.status.code()),
                                      Utf8Lossy(e.status.message()), payloads);
      PyErr_SetObject(status_error_type, args.ptr());
    }
  });
}

}  // namespace flowstone::python
