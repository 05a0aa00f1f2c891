// Bindings for TFRecord files (flowstone/ops/record_io_ops.py: tf.io.TFRecordWriter and
// tf.io.tf_record_iterator). The framing, checksums and compression are io/record_io's; file
// I/O runs without the GIL.
#include "io/record_io.h"

#include <nanobind/stl/string.h>

#include "common.h"

namespace flowstone::python {
namespace {

io::Compression CompressionOf(const std::string& name) {
  io::Compression compression;
  ThrowIfError(io::ParseCompression(name, &compression));
  return compression;
}

class PyRecordWriter {
 public:
  PyRecordWriter(const std::string& path, const std::string& compression) {
    ThrowIfError(io::RecordWriter::Open(path, CompressionOf(compression), &writer_));
  }
  void Write(nb::bytes record) {
    std::string data(record.c_str(), record.size());
    Status s;
    {
      nb::gil_scoped_release release;
      s = writer_->Write(data);
    }
    ThrowIfError(s);
  }
  void Flush() { ThrowIfError(writer_->Flush()); }
  void Close() { ThrowIfError(writer_->Close()); }

 private:
  std::unique_ptr<io::RecordWriter> writer_;
};

class PyRecordReader {
 public:
  PyRecordReader(const std::string& path, const std::string& compression) {
    ThrowIfError(io::RecordReader::Open(path, CompressionOf(compression), &reader_));
  }
  // The next record, or None after the last.
  nb::object Next() {
    std::string record;
    bool end = false;
    Status s;
    {
      nb::gil_scoped_release release;
      s = reader_->Next(&record, &end);
    }
    ThrowIfError(s);
    if (end) return nb::none();
    return nb::bytes(record.data(), record.size());
  }

 private:
  std::unique_ptr<io::RecordReader> reader_;
};

}  // namespace

void RegisterRecordIO(nb::module_& m) {
  nb::class_<PyRecordWriter>(m, "RecordWriter")
      .def(nb::init<const std::string&, const std::string&>(), nb::arg("path"),
           nb::arg("compression"))
      .def("write", &PyRecordWriter::Write)
      .def("flush", &PyRecordWriter::Flush)
      .def("close", &PyRecordWriter::Close);
  nb::class_<PyRecordReader>(m, "RecordReader")
      .def(nb::init<const std::string&, const std::string&>(), nb::arg("path"),
           nb::arg("compression"))
      .def("next", &PyRecordReader::Next);
}

}  // namespace flowstone::python
