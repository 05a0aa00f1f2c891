// Bindings for TensorBoard event files (flowstone/summary/writer.py: tf.summary.FileWriter).
// Events arrive serialized; naming, framing, queueing and the periodic flush are
// io/events_writer's, and every call that may wait or touch the file runs without the GIL.
#include <nanobind/stl/string.h>

#include "common.h"
#include "io/events_writer.h"

namespace flowstone::python {
namespace {

class PyEventFileWriter {
 public:
  PyEventFileWriter(const std::string& logdir, int max_queue, double flush_secs,
                    const std::string& suffix) {
    Status s;
    {
      nb::gil_scoped_release release;
      s = io::EventFileWriter::Open(logdir, max_queue, flush_secs, suffix, &writer_);
    }
    ThrowIfError(s);
  }
  const std::string& path() const { return writer_->path(); }
  void Add(nb::bytes event) {
    std::string data(event.c_str(), event.size());
    Status s;
    {
      nb::gil_scoped_release release;
      s = writer_->Add(std::move(data));
    }
    ThrowIfError(s);
  }
  void Flush() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = writer_->Flush();
    }
    ThrowIfError(s);
  }
  void Close() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = writer_->Close();
    }
    ThrowIfError(s);
  }

 private:
  std::unique_ptr<io::EventFileWriter> writer_;
};

}  // namespace

void RegisterSummary(nb::module_& m) {
  nb::class_<PyEventFileWriter>(m, "EventFileWriter")
      .def(nb::init<const std::string&, int, double, const std::string&>(), nb::arg("logdir"),
           nb::arg("max_queue"), nb::arg("flush_secs"), nb::arg("filename_suffix"))
      .def_prop_ro("path", &PyEventFileWriter::path)
      .def("add", &PyEventFileWriter::Add)
      .def("flush", &PyEventFileWriter::Flush)
      .def("close", &PyEventFileWriter::Close);
}

}  // namespace flowstone::python
