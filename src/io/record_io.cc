#include "io/record_io.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "io/crc32c.h"

namespace flowstone::io {
namespace {

constexpr size_t kChunk = 256 * 1024;

// TF's window bits: a zlib stream, or the same wrapped as gzip.
int WindowBits(Compression compression) {
  return compression == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
}

Status OpenError(const std::string& path, const char* mode) {
  const int error = errno;
  if (error == ENOENT) return errors::NotFound(path, "; No such file or directory");
  return errors::Unknown("could not open ", path, " for ", mode, ": ", std::strerror(error));
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

class PlainInput final : public InputStream {
 public:
  PlainInput(std::string path, File file) : InputStream(std::move(path)), file_(std::move(file)) {}
  Status Read(size_t n, std::string* out) override {
    const size_t start = out->size();
    out->resize(start + n);
    const size_t got = std::fread(out->data() + start, 1, n, file_.get());
    out->resize(start + got);
    offset_ += got;
    if (got < n && std::ferror(file_.get())) {
      return errors::DataLoss("error reading ", path_, " at offset ", offset_);
    }
    return Status::OK();
  }

 private:
  File file_;
};

class ZlibInput final : public InputStream {
 public:
  ZlibInput(std::string path, File file) : InputStream(std::move(path)), file_(std::move(file)) {}
  ~ZlibInput() override {
    if (initialized_) inflateEnd(&stream_);
  }
  Status Init(Compression compression) {
    if (inflateInit2(&stream_, WindowBits(compression)) != Z_OK) {
      return errors::Internal("zlib could not start inflating ", path_);
    }
    initialized_ = true;
    return Status::OK();
  }

  Status Read(size_t n, std::string* out) override {
    const size_t start = out->size();
    out->resize(start + n);
    stream_.next_out = reinterpret_cast<Bytef*>(out->data() + start);
    stream_.avail_out = static_cast<uInt>(n);
    while (stream_.avail_out > 0 && !finished_) {
      if (stream_.avail_in == 0) {
        const size_t got = std::fread(input_, 1, sizeof(input_), file_.get());
        if (got == 0) break;  // the file ends (a truncated stream reads as a short one)
        stream_.next_in = input_;
        stream_.avail_in = static_cast<uInt>(got);
      }
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        finished_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        out->resize(start);
        return errors::DataLoss("corrupted compressed data in ", path_, " after ", offset_,
                                " uncompressed bytes: ", stream_.msg ? stream_.msg : "zlib error");
      }
    }
    const size_t got = n - stream_.avail_out;
    out->resize(start + got);
    offset_ += got;
    return Status::OK();
  }

 private:
  File file_;
  z_stream stream_{};
  bool initialized_ = false;
  bool finished_ = false;
  Bytef input_[kChunk];
};

class PlainOutput final : public OutputStream {
 public:
  PlainOutput(std::string path, File file) : path_(std::move(path)), file_(std::move(file)) {}
  Status Append(const void* data, size_t size) override {
    if (file_ == nullptr) return errors::FailedPrecondition(path_, " is closed");
    if (std::fwrite(data, 1, size, file_.get()) != size) {
      return errors::Unknown("could not write to ", path_, ": ", std::strerror(errno));
    }
    return Status::OK();
  }
  Status Flush() override {
    if (file_ != nullptr && std::fflush(file_.get()) != 0) {
      return errors::Unknown("could not flush ", path_, ": ", std::strerror(errno));
    }
    return Status::OK();
  }
  Status Close() override {
    if (file_ == nullptr) return Status::OK();
    const int rc = std::fclose(file_.release());
    if (rc != 0) return errors::Unknown("could not close ", path_, ": ", std::strerror(errno));
    return Status::OK();
  }

 private:
  std::string path_;
  File file_;
};

class ZlibOutput final : public OutputStream {
 public:
  ZlibOutput(std::string path, File file) : path_(std::move(path)), file_(std::move(file)) {}
  ~ZlibOutput() override {
    Close();
    if (initialized_) deflateEnd(&stream_);
  }
  Status Init(Compression compression) {
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(compression), 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      return errors::Internal("zlib could not start deflating ", path_);
    }
    initialized_ = true;
    return Status::OK();
  }
  Status Append(const void* data, size_t size) override {
    if (file_ == nullptr) return errors::FailedPrecondition(path_, " is closed");
    stream_.next_in = static_cast<Bytef*>(const_cast<void*>(data));
    stream_.avail_in = static_cast<uInt>(size);
    return Deflate(Z_NO_FLUSH);
  }
  Status Flush() override {
    if (file_ == nullptr) return Status::OK();
    FS_RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
    std::fflush(file_.get());
    return Status::OK();
  }
  Status Close() override {
    if (file_ == nullptr) return Status::OK();
    Status s = Deflate(Z_FINISH);
    const int rc = std::fclose(file_.release());
    if (s.ok() && rc != 0) {
      s = errors::Unknown("could not close ", path_, ": ", std::strerror(errno));
    }
    return s;
  }

 private:
  Status Deflate(int flush) {
    Bytef buffer[16384];
    do {
      stream_.next_out = buffer;
      stream_.avail_out = sizeof(buffer);
      const int rc = deflate(&stream_, flush);
      if (rc == Z_STREAM_ERROR) return errors::Internal("zlib failed compressing ", path_);
      const size_t have = sizeof(buffer) - stream_.avail_out;
      if (have > 0 && std::fwrite(buffer, 1, have, file_.get()) != have) {
        return errors::Unknown("could not write to ", path_, ": ", std::strerror(errno));
      }
    } while (stream_.avail_out == 0);
    return Status::OK();
  }

  std::string path_;
  File file_;
  z_stream stream_{};
  bool initialized_ = false;
};

uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void EncodeFixed64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void EncodeFixed32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

Status ParseCompression(const std::string& name, Compression* out) {
  if (name.empty()) {
    *out = Compression::kNone;
  } else if (name == "ZLIB") {
    *out = Compression::kZlib;
  } else if (name == "GZIP") {
    *out = Compression::kGzip;
  } else {
    return errors::InvalidArgument("Unsupported compression_type: ", name,
                                   ". Use \"\" (none), \"ZLIB\" or \"GZIP\".");
  }
  return Status::OK();
}

Status InputStream::Open(const std::string& path, Compression compression,
                         std::unique_ptr<InputStream>* out) {
  File file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) return OpenError(path, "reading");
  if (compression == Compression::kNone) {
    *out = std::make_unique<PlainInput>(path, std::move(file));
    return Status::OK();
  }
  auto stream = std::make_unique<ZlibInput>(path, std::move(file));
  FS_RETURN_IF_ERROR(stream->Init(compression));
  *out = std::move(stream);
  return Status::OK();
}

Status OutputStream::Open(const std::string& path, Compression compression,
                          std::unique_ptr<OutputStream>* out) {
  File file(std::fopen(path.c_str(), "wb"));
  if (file == nullptr) return OpenError(path, "writing");
  if (compression == Compression::kNone) {
    *out = std::make_unique<PlainOutput>(path, std::move(file));
    return Status::OK();
  }
  auto stream = std::make_unique<ZlibOutput>(path, std::move(file));
  FS_RETURN_IF_ERROR(stream->Init(compression));
  *out = std::move(stream);
  return Status::OK();
}

Status RecordReader::Open(const std::string& path, Compression compression,
                          std::unique_ptr<RecordReader>* out) {
  std::unique_ptr<InputStream> in;
  FS_RETURN_IF_ERROR(InputStream::Open(path, compression, &in));
  out->reset(new RecordReader(std::move(in)));
  return Status::OK();
}

Status RecordReader::Next(std::string* record, bool* end) {
  const uint64_t start = in_->offset();
  std::string header;
  FS_RETURN_IF_ERROR(in_->Read(12, &header));
  *end = header.empty();
  if (*end) return Status::OK();
  if (header.size() < 12) {
    return errors::DataLoss("truncated record at ", start, " in ", in_->path(),
                            ": the file ends inside the record's header");
  }
  if (UnmaskCrc32c(DecodeFixed32(header.data() + 8)) != Crc32c(header.data(), 8)) {
    return errors::DataLoss("corrupted record at ", start, " in ", in_->path(),
                            ": the checksum of the length does not match");
  }
  const uint64_t length = DecodeFixed64(header.data());
  record->clear();
  // Read in pieces, so that a corrupt huge length cannot allocate more than the file holds.
  while (record->size() < length) {
    const size_t before = record->size();
    FS_RETURN_IF_ERROR(in_->Read(std::min<uint64_t>(length - before, 1 << 20), record));
    if (record->size() == before) break;
  }
  std::string footer;
  if (record->size() == length) FS_RETURN_IF_ERROR(in_->Read(4, &footer));
  if (record->size() < length || footer.size() < 4) {
    return errors::DataLoss("truncated record at ", start, " in ", in_->path(), ": ", length,
                            " data bytes expected");
  }
  if (UnmaskCrc32c(DecodeFixed32(footer.data())) != Crc32c(record->data(), record->size())) {
    return errors::DataLoss("corrupted record at ", start, " in ", in_->path(),
                            ": the checksum of the data does not match");
  }
  return Status::OK();
}

Status RecordWriter::Open(const std::string& path, Compression compression,
                          std::unique_ptr<RecordWriter>* out) {
  std::unique_ptr<OutputStream> stream;
  FS_RETURN_IF_ERROR(OutputStream::Open(path, compression, &stream));
  out->reset(new RecordWriter(std::move(stream)));
  return Status::OK();
}

Status RecordWriter::Write(const std::string& record) {
  char header[12];
  EncodeFixed64(record.size(), header);
  EncodeFixed32(MaskCrc32c(Crc32c(header, 8)), header + 8);
  char footer[4];
  EncodeFixed32(MaskCrc32c(Crc32c(record.data(), record.size())), footer);
  FS_RETURN_IF_ERROR(out_->Append(header, sizeof(header)));
  FS_RETURN_IF_ERROR(out_->Append(record.data(), record.size()));
  return out_->Append(footer, sizeof(footer));
}

Status RecordWriter::Flush() { return out_->Flush(); }
Status RecordWriter::Close() { return out_->Close(); }

Status ReadFileToString(const std::string& path, std::string* out) {
  std::unique_ptr<InputStream> in;
  FS_RETURN_IF_ERROR(InputStream::Open(path, Compression::kNone, &in));
  out->clear();
  while (true) {
    const size_t before = out->size();
    FS_RETURN_IF_ERROR(in->Read(kChunk, out));
    if (out->size() - before < kChunk) return Status::OK();
  }
}

Status WriteStringToFile(const std::string& path, const std::string& contents) {
  std::unique_ptr<OutputStream> out;
  FS_RETURN_IF_ERROR(OutputStream::Open(path, Compression::kNone, &out));
  FS_RETURN_IF_ERROR(out->Append(contents.data(), contents.size()));
  return out->Close();
}

}  // namespace flowstone::io
