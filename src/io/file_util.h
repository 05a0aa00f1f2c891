// Files written crash-safely and I/O errors as Statuses, shared by the checkpoint formats
// (src/io/checkpoint.cc, src/io/tensor_bundle.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "flowstone/status.h"

namespace flowstone::io {

// An errno as a Status: NotFound, PermissionDenied, ResourceExhausted (disk full) or Unknown,
// with "<what> <file>: <strerror>" as the message.
Status IoError(const std::string& what, const std::string& file, int err);

// The directory part of `path` ("." when there is none).
std::string DirectoryOf(const std::string& path);

// Writes `path` through a temporary file in the same directory (so the rename cannot cross file
// systems). Until Commit succeeds, nothing exists at `path` that was not there before; the
// destructor removes the temporary file of an unfinished write.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path) : path_(std::move(path)) {}
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  // Creates `path + ".tmp-<pid>-<random>"`.
  Status Open();
  Status Append(const void* data, size_t size);
  // fsyncs the temporary file, renames it onto `path` and fsyncs the directory.
  Status Commit();

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Reads exactly `size` bytes at `offset`; DataLoss when the file ends first.
Status ReadAt(int fd, const std::string& path, uint64_t offset, void* out, size_t size);

}  // namespace flowstone::io
