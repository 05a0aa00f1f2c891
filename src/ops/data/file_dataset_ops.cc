// Datasets that read files, one after another: TFRecordDataset (TFRecord framing, see
// io/record_io.h), TextLineDataset (lines without their "\n" or "\r\n") and
// FixedLengthRecordDatasetV2 (records of a fixed size between a header and a footer). Each takes
// "", "ZLIB" or "GZIP" compression. Elements are scalar strings.
#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "io/record_io.h"

namespace flowstone::data {
namespace {

// How one file is cut into records.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual Status Next(std::string* record, bool* end) = 0;
};

class TFRecordSource final : public RecordSource {
 public:
  explicit TFRecordSource(std::unique_ptr<io::RecordReader> reader) : reader_(std::move(reader)) {}
  Status Next(std::string* record, bool* end) override { return reader_->Next(record, end); }

 private:
  std::unique_ptr<io::RecordReader> reader_;
};

class LineSource final : public RecordSource {
 public:
  explicit LineSource(std::unique_ptr<io::InputStream> in) : in_(std::move(in)) {}
  Status Next(std::string* record, bool* end) override {
    while (true) {
      const size_t newline = buffer_.find('\n', scanned_);
      if (newline != std::string::npos) {
        size_t length = newline;
        if (length > 0 && buffer_[length - 1] == '\r') --length;
        record->assign(buffer_, 0, length);
        buffer_.erase(0, newline + 1);
        scanned_ = 0;
        *end = false;
        return Status::OK();
      }
      scanned_ = buffer_.size();
      const size_t before = buffer_.size();
      FS_RETURN_IF_ERROR(in_->Read(kReadSize, &buffer_));
      if (buffer_.size() == before) break;  // end of file
    }
    // A last line without "\n".
    *end = buffer_.empty();
    if (!*end) {
      if (buffer_.back() == '\r') buffer_.pop_back();
      *record = std::move(buffer_);
      buffer_.clear();
    }
    return Status::OK();
  }

 private:
  static constexpr size_t kReadSize = 64 * 1024;
  std::unique_ptr<io::InputStream> in_;
  std::string buffer_;
  size_t scanned_ = 0;
};

struct FixedLengthLayout {
  int64_t header = 0, record = 1, footer = 0;
};

class FixedLengthSource final : public RecordSource {
 public:
  FixedLengthSource(std::unique_ptr<io::InputStream> in, FixedLengthLayout layout)
      : in_(std::move(in)), layout_(layout) {}
  Status Next(std::string* record, bool* end) override {
    if (!header_skipped_) {
      std::string header;
      FS_RETURN_IF_ERROR(in_->Read(static_cast<size_t>(layout_.header), &header));
      header_skipped_ = true;
    }
    // A record is one only when the footer still fits after it.
    const size_t needed = static_cast<size_t>(layout_.record + layout_.footer);
    while (buffer_.size() < needed) {
      const size_t before = buffer_.size();
      FS_RETURN_IF_ERROR(in_->Read(needed - before, &buffer_));
      if (buffer_.size() == before) break;
    }
    *end = buffer_.size() < needed;
    if (*end) return Status::OK();
    record->assign(buffer_, 0, static_cast<size_t>(layout_.record));
    buffer_.erase(0, static_cast<size_t>(layout_.record));
    return Status::OK();
  }

 private:
  std::unique_ptr<io::InputStream> in_;
  FixedLengthLayout layout_;
  bool header_skipped_ = false;
  std::string buffer_;
};

enum class Format { kTFRecord, kTextLine, kFixedLength };

class FileDataset final : public DatasetBase {
 public:
  FileDataset(const char* op, const Node& node, Format format, std::vector<std::string> files,
              io::Compression compression, FixedLengthLayout layout)
      : DatasetBase(op, node.name(), {DType::kString}, {PartialShape(Dims{})}),
        format_(format),
        files_(std::move(files)),
        compression_(compression),
        layout_(layout) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const FileDataset>(self()));
  }

 private:
  Status OpenSource(const std::string& path, std::unique_ptr<RecordSource>* out) const {
    if (format_ == Format::kTFRecord) {
      std::unique_ptr<io::RecordReader> reader;
      FS_RETURN_IF_ERROR(io::RecordReader::Open(path, compression_, &reader));
      *out = std::make_unique<TFRecordSource>(std::move(reader));
      return Status::OK();
    }
    std::unique_ptr<io::InputStream> in;
    FS_RETURN_IF_ERROR(io::InputStream::Open(path, compression_, &in));
    if (format_ == Format::kTextLine) {
      *out = std::make_unique<LineSource>(std::move(in));
    } else {
      *out = std::make_unique<FixedLengthSource>(std::move(in), layout_);
    }
    return Status::OK();
  }

  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const FileDataset> dataset) : dataset_(std::move(dataset)) {}

    Status GetNext(KernelContext&, Element* out, bool* end) override {
      while (true) {
        if (source_ == nullptr) {
          if (next_file_ >= dataset_->files_.size()) {
            *end = true;
            return Status::OK();
          }
          FS_RETURN_IF_ERROR(
              dataset_->Annotate(dataset_->OpenSource(dataset_->files_[next_file_++], &source_)));
        }
        std::string record;
        FS_RETURN_IF_ERROR(dataset_->Annotate(source_->Next(&record, end)));
        if (!*end) {
          Tensor value;
          FS_RETURN_IF_ERROR(AllocateHost(DType::kString, TensorShape{}, &value));
          *value.data<std::string>() = std::move(record);
          *out = {std::move(value)};
          return Status::OK();
        }
        source_.reset();
      }
    }

   private:
    std::shared_ptr<const FileDataset> dataset_;
    size_t next_file_ = 0;
    std::unique_ptr<RecordSource> source_;
  };

  Format format_;
  std::vector<std::string> files_;
  io::Compression compression_;
  FixedLengthLayout layout_;
};

Status FileNames(KernelContext& ctx, std::vector<std::string>* out) {
  const Tensor& t = ctx.input(0);
  if (t.rank() > 1) {
    return errors::InvalidArgument("`filenames` must be a scalar or a vector, got shape ",
                                   t.shape().ToString());
  }
  out->assign(t.data<std::string>(), t.data<std::string>() + t.num_elements());
  return Status::OK();
}

Status CompressionInput(KernelContext& ctx, int index, io::Compression* out) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1) {
    return errors::InvalidArgument("compression_type must be a scalar string");
  }
  return io::ParseCompression(*t.data<std::string>(), out);
}

template <Format kFormat>
Status RecordFileKernel(KernelContext& ctx) {
  std::vector<std::string> files;
  FS_RETURN_IF_ERROR(FileNames(ctx, &files));
  io::Compression compression;
  FS_RETURN_IF_ERROR(CompressionInput(ctx, 1, &compression));
  const char* op = kFormat == Format::kTFRecord ? "TFRecordDataset" : "TextLineDataset";
  return SetOutputDataset(
      ctx, std::make_shared<FileDataset>(op, ctx.node(), kFormat, std::move(files), compression,
                                         FixedLengthLayout()));
}

OpBuilder FileDatasetOp(const char* name) {
  OpBuilder b(name);
  b.Input("filenames", "string");
  return b;
}

FS_REGISTER_OP(FileDatasetOp("TFRecordDataset")
                   .Input("compression_type", "string")
                   .Input("buffer_size", "int64")
                   .Output("handle", "variant")
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", RecordFileKernel<Format::kTFRecord>)
                   .NotDifferentiable()
                   .Doc("The records of TFRecord files, in order."));

FS_REGISTER_OP(FileDatasetOp("TextLineDataset")
                   .Input("compression_type", "string")
                   .Input("buffer_size", "int64")
                   .Output("handle", "variant")
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", RecordFileKernel<Format::kTextLine>)
                   .NotDifferentiable()
                   .Doc("The lines of text files, without their line ends."));

Status FixedLengthKernel(KernelContext& ctx) {
  std::vector<std::string> files;
  FS_RETURN_IF_ERROR(FileNames(ctx, &files));
  FixedLengthLayout layout;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "header_bytes", &layout.header));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 2, "record_bytes", &layout.record));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 3, "footer_bytes", &layout.footer));
  if (layout.header < 0 || layout.footer < 0) {
    return errors::InvalidArgument("header_bytes and footer_bytes must be >= 0, got ",
                                   layout.header, " and ", layout.footer);
  }
  if (layout.record <= 0) {
    return errors::InvalidArgument("record_bytes must be > 0, got ", layout.record);
  }
  io::Compression compression;
  FS_RETURN_IF_ERROR(CompressionInput(ctx, 5, &compression));
  return SetOutputDataset(ctx, std::make_shared<FileDataset>(
                                   "FixedLengthRecordDatasetV2", ctx.node(), Format::kFixedLength,
                                   std::move(files), compression, layout));
}

FS_REGISTER_OP(FileDatasetOp("FixedLengthRecordDatasetV2")
                   .Input("header_bytes", "int64")
                   .Input("record_bytes", "int64")
                   .Input("footer_bytes", "int64")
                   .Input("buffer_size", "int64")
                   .Input("compression_type", "string")
                   .Output("handle", "variant")
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", FixedLengthKernel)
                   .NotDifferentiable()
                   .Doc("Records of record_bytes bytes from files with a header and a footer."));

}  // namespace
}  // namespace flowstone::data
