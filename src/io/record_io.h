// Files of records, as TensorFlow writes them: plain or compressed byte streams (zlib's ZLIB and
// GZIP formats) and the TFRecord framing on top of them. Each TFRecord is
//
//   uint64 length (little-endian) | uint32 masked CRC-32C of length | data | uint32 masked CRC of
//   data
//
// so the files are byte-compatible with TensorFlow's TFRecordWriter and TFRecordDataset.
// Internal to the core (tf.data's file datasets, tf.io.TFRecordWriter, tf_record_iterator).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/status.h"

namespace flowstone::io {

enum class Compression { kNone, kZlib, kGzip };

// "" / "ZLIB" / "GZIP" (TF's compression_type strings), or InvalidArgument naming the value.
Status ParseCompression(const std::string& name, Compression* out);

// Reads a file's bytes in order, decompressing as it goes.
class InputStream {
 public:
  static Status Open(const std::string& path, Compression compression,
                     std::unique_ptr<InputStream>* out);
  virtual ~InputStream() = default;
  // Reads up to `n` bytes, appending them to *out; fewer only at the end of the stream.
  // Corrupt compressed data is DataLoss naming the file.
  virtual Status Read(size_t n, std::string* out) = 0;
  // Bytes of the (decompressed) stream read so far, for messages.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 protected:
  explicit InputStream(std::string path) : path_(std::move(path)) {}
  std::string path_;
  uint64_t offset_ = 0;
};

// Writes a file's bytes, compressing as it goes. Close (or destruction) finishes the file.
class OutputStream {
 public:
  static Status Open(const std::string& path, Compression compression,
                     std::unique_ptr<OutputStream>* out);
  virtual ~OutputStream() = default;
  virtual Status Append(const void* data, size_t size) = 0;
  virtual Status Flush() = 0;
  virtual Status Close() = 0;
};

// Reads the TFRecords of one file.
class RecordReader {
 public:
  static Status Open(const std::string& path, Compression compression,
                     std::unique_ptr<RecordReader>* out);
  // The next record's data, or *end = true after the last one. A truncated or corrupted record
  // is DataLoss naming the file and the record's offset.
  Status Next(std::string* record, bool* end);

 private:
  explicit RecordReader(std::unique_ptr<InputStream> in) : in_(std::move(in)) {}
  std::unique_ptr<InputStream> in_;
};

// Writes TFRecords to one file.
class RecordWriter {
 public:
  static Status Open(const std::string& path, Compression compression,
                     std::unique_ptr<RecordWriter>* out);
  Status Write(const std::string& record);
  Status Flush();
  Status Close();

 private:
  explicit RecordWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}
  std::unique_ptr<OutputStream> out_;
};

// A whole file's bytes (tf.io.read_file), NotFound naming it when it cannot be opened.
Status ReadFileToString(const std::string& path, std::string* out);
// Writes (replacing) a whole file (tf.io.write_file).
Status WriteStringToFile(const std::string& path, const std::string& contents);

}  // namespace flowstone::io
