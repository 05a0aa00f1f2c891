// Reader ops (TF1's readers over a queue of file names): TextLineReaderV2, TFRecordReaderV2,
// WholeFileReaderV2 and FixedLengthRecordReaderV2 make a reader in the session on first run;
// ReaderReadV2 and ReaderReadUpToV2 take records from the current file, dequeuing the next file
// name from a queue when it ends; ReaderNumRecordsProducedV2, ReaderNumWorkUnitsCompletedV2 and
// ReaderResetV2 report and reset its position. Files go through src/io/record_io.h.
#include <cstring>
#include <functional>

#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "io/record_io.h"
#include "ops/io/queue.h"
#include "ops/resource_slot.h"

namespace flowstone::io {
namespace {

// The records of one file: (key, value) pairs, keys as TF makes them ("file:line", ...).
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual Status Next(std::string* key, std::string* value, bool* end) = 0;
};

// A whole (decompressed) stream's bytes.
Status ReadAll(const std::string& path, Compression compression, std::string* out) {
  std::unique_ptr<InputStream> in;
  FS_RETURN_IF_ERROR(InputStream::Open(path, compression, &in));
  size_t before;
  do {
    before = out->size();
    FS_RETURN_IF_ERROR(in->Read(1 << 20, out));
  } while (out->size() > before);
  return Status::OK();
}

// Lines without their "\n" (or "\r\n"); keys are "file:N" with N counted from 1.
class TextLineSource final : public RecordSource {
 public:
  TextLineSource(std::string path, std::string contents, int64_t skip)
      : path_(std::move(path)), data_(std::move(contents)) {
    for (bool end = false; skip > 0 && !end; --skip) {
      std::string ignored;
      NextLine(&ignored, &end);
    }
  }
  Status Next(std::string* key, std::string* value, bool* end) override {
    NextLine(value, end);
    if (!*end) *key = path_ + ":" + std::to_string(line_);
    return Status::OK();
  }

 private:
  void NextLine(std::string* value, bool* end) {
    *end = pos_ >= data_.size();
    if (*end) return;
    size_t stop = data_.find('\n', pos_);
    if (stop == std::string::npos) stop = data_.size();
    size_t len = stop - pos_;
    if (len > 0 && data_[pos_ + len - 1] == '\r') --len;
    value->assign(data_, pos_, len);
    pos_ = stop + 1;
    ++line_;
  }
  std::string path_, data_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

// TFRecords; keys are "file:offset" (the record's offset in the decompressed stream).
class TFRecordSource final : public RecordSource {
 public:
  TFRecordSource(std::string path, std::unique_ptr<RecordReader> reader)
      : path_(std::move(path)), reader_(std::move(reader)) {}
  Status Next(std::string* key, std::string* value, bool* end) override {
    FS_RETURN_IF_ERROR(reader_->Next(value, end));
    if (*end) return Status::OK();
    *key = path_ + ":" + std::to_string(offset_);
    offset_ += 16 + value->size();  // 8-byte length, two 4-byte CRCs and the data
    return Status::OK();
  }

 private:
  std::string path_;
  std::unique_ptr<RecordReader> reader_;
  uint64_t offset_ = 0;
};

// The file as one record, keyed by its name.
class WholeFileSource final : public RecordSource {
 public:
  WholeFileSource(std::string path, std::string contents)
      : path_(std::move(path)), contents_(std::move(contents)) {}
  Status Next(std::string* key, std::string* value, bool* end) override {
    *end = done_;
    if (done_) return Status::OK();
    *key = path_;
    *value = std::move(contents_);
    done_ = true;
    return Status::OK();
  }

 private:
  std::string path_, contents_;
  bool done_ = false;
};

// Fixed-size records between a header and a footer, hop_bytes apart (record_bytes when 0); keys
// are "file:index" counted from 0.
class FixedLengthSource final : public RecordSource {
 public:
  struct Layout {
    int64_t header = 0, record = 0, footer = 0, hop = 0;
  };
  FixedLengthSource(std::string path, std::string contents, Layout layout)
      : path_(std::move(path)), data_(std::move(contents)), l_(layout), pos_(layout.header) {}
  Status Next(std::string* key, std::string* value, bool* end) override {
    const int64_t size = static_cast<int64_t>(data_.size());
    *end = pos_ + l_.record + l_.footer > size;
    if (*end) return Status::OK();
    value->assign(data_, pos_, l_.record);
    *key = path_ + ":" + std::to_string(index_++);
    pos_ += l_.hop > 0 ? l_.hop : l_.record;
    return Status::OK();
  }

 private:
  std::string path_, data_;
  Layout l_;
  int64_t pos_;
  int64_t index_ = 0;
};

using SourceFactory =
    std::function<Status(const std::string& path, std::unique_ptr<RecordSource>* out)>;

class ReaderResource {
 public:
  ReaderResource(std::string name, SourceFactory factory)
      : name_(std::move(name)), factory_(std::move(factory)) {}
  const std::string& name() const { return name_; }

  // The next record, dequeuing file names from `queue` as files end. OutOfRange (the queue's)
  // once the queue is closed and every file is read.
  Status Read(KernelContext& ctx, QueueResource& queue, std::string* key, std::string* value) {
    std::lock_guard<std::mutex> lock(mu_);
    while (true) {
      if (source_ == nullptr) {
        QueueTuple work;
        FS_RETURN_IF_ERROR(queue.Dequeue(ctx, -1, false, &work));
        if (work.size() != 1 || work[0].dtype() != DType::kString || work[0].rank() != 0) {
          return errors::InvalidArgument("Reader '", name_, "' needs a queue of scalar file ",
                                         "names (strings), but queue '", queue.options().name,
                                         "' gave another element");
        }
        FS_RETURN_IF_ERROR(factory_(*work[0].data<std::string>(), &source_));
      }
      bool end = false;
      FS_RETURN_IF_ERROR(source_->Next(key, value, &end));
      if (!end) {
        ++records_;
        return Status::OK();
      }
      source_.reset();
      ++work_units_;
    }
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    source_.reset();
    records_ = work_units_ = 0;
  }
  int64_t records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }
  int64_t work_units() {
    std::lock_guard<std::mutex> lock(mu_);
    return work_units_;
  }

 private:
  const std::string name_;
  const SourceFactory factory_;
  std::mutex mu_;
  std::unique_ptr<RecordSource> source_;
  int64_t records_ = 0, work_units_ = 0;
};

class ReaderHolder final : public VariantValue {
 public:
  explicit ReaderHolder(std::shared_ptr<ReaderResource> reader) : reader_(std::move(reader)) {}
  std::string TypeName() const override { return "tensorflow::ReaderInterface"; }
  std::string DebugString() const override { return "<reader " + reader_->name() + ">"; }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<ReaderHolder>(reader_);
  }
  const std::shared_ptr<ReaderResource>& reader() const { return reader_; }

 private:
  std::shared_ptr<ReaderResource> reader_;
};

Status ReaderFromHandle(const Tensor& handle, std::shared_ptr<ReaderResource>* out) {
  Var* slot = VarFromHandle(handle);
  std::lock_guard<std::mutex> lock(slot->mu());
  const ReaderHolder* holder = HeldInSlot<ReaderHolder>(slot);
  if (holder == nullptr) {
    return errors::FailedPrecondition("The resource '", slot->name(), "' is not a reader");
  }
  *out = holder->reader();
  return Status::OK();
}

// --- The reader ops: one row per kind, each with its attrs and how it opens a file ----------

using FactoryFromAttrs = Status (*)(const Node& node, SourceFactory* out);

Status TextLineFactory(const Node& node, SourceFactory* out) {
  const int64_t skip = node.attrs().GetOr<int64_t>("skip_header_lines", 0);
  *out = [skip](const std::string& path, std::unique_ptr<RecordSource>* source) {
    std::string contents;
    FS_RETURN_IF_ERROR(ReadAll(path, Compression::kNone, &contents));
    *source = std::make_unique<TextLineSource>(path, std::move(contents), skip);
    return Status::OK();
  };
  return Status::OK();
}

Status TFRecordFactory(const Node& node, SourceFactory* out) {
  Compression compression;
  FS_RETURN_IF_ERROR(
      ParseCompression(node.attrs().GetOr<std::string>("compression_type", ""), &compression));
  *out = [compression](const std::string& path, std::unique_ptr<RecordSource>* source) {
    std::unique_ptr<RecordReader> reader;
    FS_RETURN_IF_ERROR(RecordReader::Open(path, compression, &reader));
    *source = std::make_unique<TFRecordSource>(path, std::move(reader));
    return Status::OK();
  };
  return Status::OK();
}

Status WholeFileFactory(const Node&, SourceFactory* out) {
  *out = [](const std::string& path, std::unique_ptr<RecordSource>* source) {
    std::string contents;
    FS_RETURN_IF_ERROR(ReadFileToString(path, &contents));
    *source = std::make_unique<WholeFileSource>(path, std::move(contents));
    return Status::OK();
  };
  return Status::OK();
}

Status FixedLengthFactory(const Node& node, SourceFactory* out) {
  const AttrMap& attrs = node.attrs();
  FixedLengthSource::Layout layout;
  layout.header = attrs.GetOr<int64_t>("header_bytes", 0);
  layout.record = attrs.GetOr<int64_t>("record_bytes", 0);
  layout.footer = attrs.GetOr<int64_t>("footer_bytes", 0);
  layout.hop = attrs.GetOr<int64_t>("hop_bytes", 0);
  if (layout.record <= 0 || layout.header < 0 || layout.footer < 0 || layout.hop < 0) {
    return errors::InvalidArgument("FixedLengthRecordReaderV2 '", node.name(),
                                   "': record_bytes must be positive and header_bytes, "
                                   "footer_bytes and hop_bytes non-negative");
  }
  Compression compression;
  FS_RETURN_IF_ERROR(ParseCompression(attrs.GetOr<std::string>("encoding", ""), &compression));
  *out = [layout, compression](const std::string& path, std::unique_ptr<RecordSource>* source) {
    std::string contents;
    FS_RETURN_IF_ERROR(ReadAll(path, compression, &contents));
    *source = std::make_unique<FixedLengthSource>(path, std::move(contents), layout);
    return Status::OK();
  };
  return Status::OK();
}

class ReaderOpKernel final : public OpKernel {
 public:
  ReaderOpKernel(const Node& node, FactoryFromAttrs make) : OpKernel(node), make_(make) {}
  Status Init() override { return make_(node(), &factory_); }

  Status Compute(KernelContext& ctx) override {
    std::string name = node().attrs().GetOr<std::string>("shared_name", "");
    if (name.empty()) name = node().name();
    Var* slot =
        ctx.resources()->LookupOrCreateVar("reader:" + name, DType::kVariant, PartialShape(Dims{}));
    {
      std::lock_guard<std::mutex> lock(slot->mu());
      if (!slot->initialized()) {
        Tensor value = Tensor::Host(DType::kVariant, TensorShape{});
        value.data<Variant>()[0] = Variant(
            std::make_shared<ReaderHolder>(std::make_shared<ReaderResource>(name, factory_)));
        slot->value() = std::move(value);
      }
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
    std::memcpy(out->raw_data(), &slot, sizeof(slot));
    return Status::OK();
  }

 private:
  FactoryFromAttrs make_;
  SourceFactory factory_;
};

struct ReaderRow {
  const char* name;
  FactoryFromAttrs make;
  std::vector<std::pair<const char*, AttrValue>> attrs;
  const char* doc;
};

const bool kReadersRegistered = [] {
  const ReaderRow rows[] = {
      {"TextLineReaderV2",
       TextLineFactory,
       {{"skip_header_lines", int64_t{0}}},
       "A reader of a file's lines (tf.TextLineReader)."},
      {"TFRecordReaderV2",
       TFRecordFactory,
       {{"compression_type", std::string()}},
       "A reader of a file's TFRecords (tf.TFRecordReader)."},
      {"WholeFileReaderV2", WholeFileFactory, {}, "A reader of whole files (tf.WholeFileReader)."},
      {"FixedLengthRecordReaderV2",
       FixedLengthFactory,
       {{"header_bytes", int64_t{0}},
        {"record_bytes", int64_t{0}},
        {"footer_bytes", int64_t{0}},
        {"hop_bytes", int64_t{0}},
        {"encoding", std::string()}},
       "A reader of fixed-size records (tf.FixedLengthRecordReader)."},
  };
  for (const ReaderRow& row : rows) {
    OpBuilder b(row.name);
    b.Output("reader_handle", "resource").Attr("container", "").Attr("shared_name", "");
    for (const auto& [attr, value] : row.attrs) b.Attr(attr, value);
    const FactoryFromAttrs make = row.make;
    b.Stateful()
        .Shape(shape_fns::Scalar)
        .KernelFactory("CPU",
                       [make](const Node& node, std::unique_ptr<OpKernel>* out) {
                         auto kernel = std::make_unique<ReaderOpKernel>(node, make);
                         FS_RETURN_IF_ERROR(kernel->Init());
                         *out = std::move(kernel);
                         return Status::OK();
                       })
        .NotDifferentiable()
        .Doc(row.doc);
    OpRegistrar registrar(b);
  }
  return true;
}();

// --- Reading ----------------------------------------------------------------------------------

Status ReaderAndQueue(KernelContext& ctx, std::shared_ptr<ReaderResource>* reader,
                      std::shared_ptr<QueueResource>* queue) {
  FS_RETURN_IF_ERROR(ReaderFromHandle(ctx.input(0), reader));
  return QueueFromHandle(ctx.input(1), queue);
}

Status ReadKernel(KernelContext& ctx) {
  std::shared_ptr<ReaderResource> reader;
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(ReaderAndQueue(ctx, &reader, &queue));
  std::string key, value;
  FS_RETURN_IF_ERROR(reader->Read(ctx, *queue, &key, &value));
  ctx.SetOutput(0, Tensor::Scalar<std::string>(std::move(key)));
  ctx.SetOutput(1, Tensor::Scalar<std::string>(std::move(value)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReaderReadV2")
                   .Input("reader_handle", "resource")
                   .Input("queue_handle", "resource")
                   .Output("key", "string")
                   .Output("value", "string")
                   .Stateful()
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape(Dims{}));
                     ctx.set_output(1, PartialShape(Dims{}));
                     return Status::OK();
                   })
                   .Kernel("CPU", ReadKernel)
                   .NotDifferentiable()
                   .Doc("The reader's next (key, value) record, taking file names from the "
                        "queue; OutOfRange once the queue is closed and drained."));

Status ReadUpToKernel(KernelContext& ctx) {
  std::shared_ptr<ReaderResource> reader;
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(ReaderAndQueue(ctx, &reader, &queue));
  const Tensor& count = ctx.input(2);
  if (count.rank() != 0 || count.ElementAsInt64(0) <= 0) {
    return errors::InvalidArgument("ReaderReadUpToV2 '", ctx.node().name(),
                                   "': num_records must be a positive scalar");
  }
  const int64_t n = count.ElementAsInt64(0);
  std::vector<std::string> keys, values;
  while (static_cast<int64_t>(keys.size()) < n) {
    std::string key, value;
    Status s = reader->Read(ctx, *queue, &key, &value);
    // The end of the input ends a partial batch; the next call raises OutOfRange.
    if (s.code() == Code::kOutOfRange && !keys.empty()) break;
    FS_RETURN_IF_ERROR(s);
    keys.push_back(std::move(key));
    values.push_back(std::move(value));
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string>& from = i == 0 ? keys : values;
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(i, TensorShape{static_cast<int64_t>(from.size())}, &out));
    std::move(from.begin(), from.end(), out->data<std::string>());
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReaderReadUpToV2")
                   .Input("reader_handle", "resource")
                   .Input("queue_handle", "resource")
                   .Input("num_records", "int64")
                   .Output("keys", "string")
                   .Output("values", "string")
                   .Stateful()
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape{-1});
                     ctx.set_output(1, PartialShape{-1});
                     return Status::OK();
                   })
                   .Kernel("CPU", ReadUpToKernel)
                   .NotDifferentiable()
                   .Doc("Up to num_records records of the reader (fewer at the end of input)."));

template <int64_t (ReaderResource::*kCount)()>
Status CountKernel(KernelContext& ctx) {
  std::shared_ptr<ReaderResource> reader;
  FS_RETURN_IF_ERROR(ReaderFromHandle(ctx.input(0), &reader));
  ctx.SetOutput(0, Tensor::Scalar<int64_t>(((*reader).*kCount)()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReaderNumRecordsProducedV2")
                   .Input("reader_handle", "resource")
                   .Output("records_produced", "int64")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", CountKernel<&ReaderResource::records>)
                   .NotDifferentiable()
                   .Doc("How many records the reader has produced."));

FS_REGISTER_OP(OpBuilder("ReaderNumWorkUnitsCompletedV2")
                   .Input("reader_handle", "resource")
                   .Output("units_completed", "int64")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", CountKernel<&ReaderResource::work_units>)
                   .NotDifferentiable()
                   .Doc("How many files the reader has finished."));

Status ResetKernel(KernelContext& ctx) {
  std::shared_ptr<ReaderResource> reader;
  FS_RETURN_IF_ERROR(ReaderFromHandle(ctx.input(0), &reader));
  reader->Reset();
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReaderResetV2")
                   .Input("reader_handle", "resource")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", ResetKernel)
                   .NotDifferentiable()
                   .Doc("Restores the reader to its initial state (no file, counts 0)."));

}  // namespace
}  // namespace flowstone::io
