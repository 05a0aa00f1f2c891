// See file_util.h.
#include "io/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <sstream>
#include <system_error>

namespace flowstone::io {

Status IoError(const std::string& what, const std::string& file, int err) {
  std::string message = StrCat(what, " ", file, ": ", std::generic_category().message(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return errors::NotFound(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return errors::PermissionDenied(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return errors::ResourceExhausted(message);
    default:
      return errors::Unknown(message);
  }
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (!tmp_path_.empty() && !committed_) unlink(tmp_path_.c_str());
}

Status AtomicFileWriter::Open() {
  std::random_device entropy;
  // A fresh random suffix per attempt: another writer may have picked the same name.
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t tag = (uint64_t{entropy()} << 32) ^ entropy();
    std::ostringstream name;
    name << path_ << ".tmp-" << getpid() << "-" << std::hex << tag;
    fd_ = open(name.str().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      tmp_path_ = name.str();
      return Status::OK();
    }
    if (errno != EEXIST) return IoError("Cannot create", name.str(), errno);
  }
  return errors::AlreadyExists("Cannot create a temporary file next to ", path_);
}

Status AtomicFileWriter::Append(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call; larger tensors take several.
    ssize_t n = write(fd_, p, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("Cannot write", tmp_path_, errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::OK();
}

// fsync before rename: otherwise a crash after the rename could leave `path` naming a file
// whose blocks never reached the disk. fsync of the directory makes the rename itself durable.
Status AtomicFileWriter::Commit() {
  if (fsync(fd_) != 0) return IoError("Cannot sync", tmp_path_, errno);
  int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return IoError("Cannot close", tmp_path_, errno);
  if (rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(StrCat("Cannot rename ", tmp_path_, " to"), path_, errno);
  }
  committed_ = true;
  std::string dir = DirectoryOf(path_);
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return IoError("Cannot open directory", dir, errno);
  int rc = fsync(dir_fd);
  int err = errno;
  close(dir_fd);
  // Some file systems cannot sync directories; the data itself is already durable there.
  if (rc != 0 && err != EINVAL && err != ENOTSUP) return IoError("Cannot sync", dir, err);
  return Status::OK();
}

Status ReadAt(int fd, const std::string& path, uint64_t offset, void* out, size_t size) {
  char* p = static_cast<char*>(out);
  while (size > 0) {
    ssize_t n = pread(fd, p, std::min<size_t>(size, size_t{1} << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("Cannot read", path, errno);
    }
    if (n == 0) {
      return errors::DataLoss("Checkpoint ", path, " is truncated: it ended while reading byte ",
                              offset, " (was it changed while being read?)");
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace flowstone::io
