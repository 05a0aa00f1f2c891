// Checkpoint files: see include/flowstone/checkpoint.h for the format and the guarantees.
#include "flowstone/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <system_error>

#include "flowstone/allocator.h"
#include "flowstone/resource.h"
#include "flowstone/tensor_bundle.h"
#include "io/crc32c.h"
#include "io/file_util.h"

namespace flowstone {

using io::AtomicFileWriter;
using io::Crc32c;
using io::Crc32cExtend;
using io::IoError;
using io::ReadAt;

// Metadata is encoded byte by byte, but tensor bytes are copied as they lie in memory, so the
// data section is little-endian only on a little-endian host.
static_assert(std::endian::native == std::endian::little,
              "checkpoint data is stored in host byte order, which must be little-endian");

namespace {

// ---------------------------------------------------------------------------------------------
// Layout constants and little-endian encoding.

constexpr char kMagic[8] = {'F', 'S', 'T', 'N', 'C', 'K', 'P', 'T'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8;
constexpr size_t kFooterSize = 4 + 8;
// TensorFlow's limit; a larger rank in an index can only come from damage.
constexpr uint32_t kMaxRank = 254;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

std::string Hex32(uint32_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return out.str();
}

// Variables are stored in files by TensorFlow's DataType numbers, which never change, rather
// than by Flowstone's enum order.
bool DTypeFromTfEnum(uint32_t tf_enum, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    if (d != DType::kInvalid && d != DType::kResource &&
        static_cast<uint32_t>(DTypeToTfEnum(d)) == tf_enum) {
      *out = d;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Reading.

struct IndexEntry {
  CheckpointEntry entry;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t size = 0;
  uint32_t crc = 0;
};

// Parses the index of an index-CRC-checked checkpoint. The CRC only shows that the bytes are
// what a writer produced, so every field is still checked before it is used.
class IndexParser {
 public:
  IndexParser(const std::string& path, const std::string& index, uint64_t data_size)
      : path_(path), index_(index), data_size_(data_size) {}

  Status Parse(uint32_t count, std::vector<IndexEntry>* entries) {
    uint64_t expected_offset = 0;
    for (uint32_t i = 0; i < count; ++i) {
      IndexEntry e;
      uint64_t key_size = 0, tf_dtype = 0, rank = 0;
      FS_RETURN_IF_ERROR(Take(4, &key_size, i));
      if (key_size > index_.size() - pos_) return Malformed(i, "its key runs past the index");
      e.entry.key = index_.substr(pos_, key_size);
      pos_ += key_size;
      FS_RETURN_IF_ERROR(Take(4, &tf_dtype, i));
      if (!DTypeFromTfEnum(static_cast<uint32_t>(tf_dtype), &e.entry.dtype)) {
        return Malformed(i, StrCat("unknown dtype number ", tf_dtype));
      }
      FS_RETURN_IF_ERROR(Take(4, &rank, i));
      if (rank > kMaxRank) return Malformed(i, StrCat("rank ", rank));
      std::vector<int64_t> dims(rank);
      for (uint64_t d = 0; d < rank; ++d) {
        uint64_t dim = 0;
        FS_RETURN_IF_ERROR(Take(8, &dim, i));
        dims[d] = static_cast<int64_t>(dim);
      }
      if (!ValidateDims(dims).ok()) return Malformed(i, "invalid dimensions");
      e.entry.shape = TensorShape(dims);
      uint64_t crc = 0;
      FS_RETURN_IF_ERROR(Take(8, &e.offset, i));
      FS_RETURN_IF_ERROR(Take(8, &e.size, i));
      FS_RETURN_IF_ERROR(Take(4, &crc, i));
      e.crc = static_cast<uint32_t>(crc);
      uint64_t elements = static_cast<uint64_t>(e.entry.shape.num_elements());
      if (elements > UINT64_MAX / DTypeSize(e.entry.dtype) ||
          elements * DTypeSize(e.entry.dtype) != e.size) {
        return Malformed(i, "its byte size does not match its shape");
      }
      if (e.offset != expected_offset || e.size > data_size_ - e.offset) {
        return Malformed(i, "its bytes lie outside the data section");
      }
      expected_offset += e.size;
      entries->push_back(std::move(e));
    }
    if (pos_ != index_.size() || expected_offset != data_size_) {
      return errors::DataLoss("Checkpoint ", path_,
                              " is corrupted: its index does not account "
                              "for exactly the bytes the file holds");
    }
    return Status::OK();
  }

 private:
  Status Take(int bytes, uint64_t* out, uint32_t entry) {
    if (index_.size() - pos_ < static_cast<size_t>(bytes)) {
      return Malformed(entry, "it runs past the end of the index");
    }
    *out = GetLE(index_.data() + pos_, bytes);
    pos_ += bytes;
    return Status::OK();
  }

  Status Malformed(uint32_t entry, const std::string& why) {
    return errors::DataLoss("Checkpoint ", path_, " is corrupted: index entry ", entry,
                            " is malformed (", why, ")");
  }

  const std::string& path_;
  const std::string& index_;
  uint64_t data_size_;
  size_t pos_ = 0;
};

class CheckpointReader {
 public:
  CheckpointReader() = default;
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;
  ~CheckpointReader() {
    if (fd_ >= 0) close(fd_);
  }

  // Reads and checks everything but the tensor bytes.
  Status Open(const std::string& path) {
    path_ = path;
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      int err = errno;
      if (err == ENOENT) {
        return errors::NotFound("No checkpoint file at ", path, ": ",
                                std::generic_category().message(err));
      }
      return IoError("Cannot open checkpoint", path, err);
    }
    struct stat st;
    if (fstat(fd_, &st) != 0) return IoError("Cannot stat checkpoint", path, errno);
    if (S_ISDIR(st.st_mode)) {
      return errors::NotFound(path,
                              " is a directory, not a checkpoint file; pass a checkpoint "
                              "path such as tf.train.latest_checkpoint(\"",
                              path, "\")");
    }
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);

    char header[kHeaderSize];
    if (file_size < sizeof(kMagic)) return Truncated(file_size);
    FS_RETURN_IF_ERROR(ReadAt(fd_, path, 0, header, sizeof(kMagic)));
    if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
      return errors::DataLoss(path,
                              " is not a Flowstone checkpoint: it does not start with the "
                              "checkpoint magic bytes \"FSTNCKPT\"");
    }
    if (file_size < kHeaderSize + kFooterSize) return Truncated(file_size);
    char footer[kFooterSize];
    FS_RETURN_IF_ERROR(ReadAt(fd_, path, file_size - kFooterSize, footer, kFooterSize));
    if (std::memcmp(footer + 4, kMagic, sizeof(kMagic)) != 0) return Truncated(file_size);

    FS_RETURN_IF_ERROR(ReadAt(fd_, path, 0, header, kHeaderSize));
    const uint32_t version = static_cast<uint32_t>(GetLE(header + 8, 4));
    const uint32_t count = static_cast<uint32_t>(GetLE(header + 12, 4));
    const uint64_t index_size = GetLE(header + 16, 8);
    const uint64_t data_size = GetLE(header + 24, 8);
    const uint64_t body = file_size - kHeaderSize - kFooterSize;
    if (index_size > body || data_size != body - index_size) {
      return errors::DataLoss("Checkpoint ", path, " is corrupted: its header describes ",
                              index_size, " index bytes and ", data_size,
                              " data bytes, but the "
                              "file holds ",
                              body, " bytes between header and footer");
    }
    std::string index(index_size, '\0');
    FS_RETURN_IF_ERROR(ReadAt(fd_, path, kHeaderSize, index.data(), index.size()));
    uint32_t stored_crc = static_cast<uint32_t>(GetLE(footer, 4));
    uint32_t crc = Crc32cExtend(Crc32c(header, kHeaderSize), index.data(), index.size());
    if (crc != stored_crc) {
      return errors::DataLoss("Checkpoint ", path,
                              " is corrupted: its index fails the CRC32C "
                              "check (stored ",
                              Hex32(stored_crc), ", computed ", Hex32(crc), ")");
    }
    if (version != kFormatVersion) {
      return errors::Unimplemented("Checkpoint ", path, " has format version ", version,
                                   ", but this Flowstone reads version ", kFormatVersion,
                                   "; read it with the Flowstone release that wrote it");
    }
    data_start_ = kHeaderSize + index_size;
    FS_RETURN_IF_ERROR(IndexParser(path, index, data_size).Parse(count, &entries_));
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!by_key_.emplace(entries_[i].entry.key, i).second) {
        return errors::DataLoss("Checkpoint ", path, " is corrupted: key ", entries_[i].entry.key,
                                " appears twice in its index");
      }
    }
    return Status::OK();
  }

  const std::vector<IndexEntry>& entries() const { return entries_; }

  Status Find(const std::string& key, const IndexEntry** out) const {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
      return errors::NotFound("Key ", key, " not found in checkpoint ", path_);
    }
    *out = &entries_[it->second];
    return Status::OK();
  }

  Status Read(const IndexEntry& e, Tensor* out) const {
    Status s = Tensor::Allocate(CpuAllocator(), e.entry.dtype, e.entry.shape, out);
    if (!s.ok()) {
      return errors::ResourceExhausted("Out of memory reading ", e.entry.key, " (",
                                       e.entry.shape.ToString(), " ", DTypeName(e.entry.dtype),
                                       ", ", e.size, " bytes) from checkpoint ", path_);
    }
    FS_RETURN_IF_ERROR(ReadAt(fd_, path_, data_start_ + e.offset, out->raw_data(), e.size));
    uint32_t crc = Crc32c(out->raw_data(), e.size);
    if (crc != e.crc) {
      return errors::DataLoss("Checkpoint ", path_, " is corrupted: the data of ", e.entry.key,
                              " fails the CRC32C check (stored ", Hex32(e.crc), ", computed ",
                              Hex32(crc), ")");
    }
    return Status::OK();
  }

 private:
  Status Truncated(uint64_t file_size) const {
    return errors::DataLoss("Checkpoint ", path_, " is truncated (", file_size,
                            " bytes, and no end marker): it was not completely written");
  }

  std::string path_;
  int fd_ = -1;
  uint64_t data_start_ = 0;
  std::vector<IndexEntry> entries_;
  std::map<std::string, size_t> by_key_;
};

// ---------------------------------------------------------------------------------------------
// Variables.

DType VarDType(const Node& node) { return node.attrs().GetOr<DType>("dtype", DType::kFloat32); }

PartialShape VarShape(const Node& node) {
  return node.attrs().GetOr<PartialShape>("shape", PartialShape::Unknown());
}

Status CheckVarHandle(const std::string& key, const Node* node) {
  if (node == nullptr) return errors::InvalidArgument("No variable given for key ", key);
  if (node->type() != "VarHandleOp") {
    return errors::InvalidArgument("Checkpoint key ", key,
                                   " must name a variable (a VarHandleOp"
                                   "), but node ",
                                   node->name(), " is a ", node->type());
  }
  return Status::OK();
}

Status CheckSessionOpen(Session& session) {
  if (session.closed()) return errors::FailedPrecondition("Attempted to use a closed Session.");
  return Status::OK();
}

}  // namespace

Status SnapshotVariables(Session& session, const CheckpointVars& vars,
                         std::vector<std::pair<std::string, Tensor>>* values) {
  FS_RETURN_IF_ERROR(CheckSessionOpen(session));
  ResourceMgr* resources = session.resource_manager();
  values->clear();
  std::set<std::string> keys;
  for (const auto& [key, node] : vars) {
    FS_RETURN_IF_ERROR(CheckVarHandle(key, node));
    if (!keys.insert(key).second) {
      return errors::InvalidArgument("Checkpoint key ", key,
                                     " is given for two variables; "
                                     "every saved variable needs its own key");
    }
    std::string name = VarNameOf(*node);
    Tensor value;
    if (Var* var = resources->LookupVar(name)) {
      std::lock_guard<std::mutex> lock(var->mu());
      if (var->initialized()) value = var->value();
      if (value.initialized() && var->device() != nullptr) {
        FS_RETURN_IF_ERROR(var->device()->CopyToHost(value, &value));
      }
    }
    if (!value.initialized()) {
      return errors::FailedPrecondition(
          "Attempting to use uninitialized value ", name,
          " while saving it to a checkpoint. "
          "Initialize it first: run sess.run(tf.global_variables_initializer()) or restore it "
          "from a checkpoint.");
    }
    values->emplace_back(key, std::move(value));
  }
  return Status::OK();
}

Status WriteCheckpoint(const std::vector<std::pair<std::string, Tensor>>& values,
                       const std::string& path) {
  // Sorted by key, so that equal contents give byte-identical files.
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& value : values) {
    const Tensor& t = value.second;
    if (value.first.empty()) return errors::InvalidArgument("Checkpoint keys must not be empty");
    if (!t.initialized() || t.dtype() == DType::kResource) {
      return errors::InvalidArgument("Cannot save ", value.first,
                                     ": only numeric and bool "
                                     "tensors can be saved in a checkpoint");
    }
    order.push_back(&value);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->first == order[i - 1]->first) {
      return errors::InvalidArgument("Checkpoint key ", order[i]->first, " is given twice");
    }
  }

  std::string index;
  uint64_t data_size = 0;
  for (const auto* value : order) {
    const Tensor& t = value->second;
    PutU32(&index, static_cast<uint32_t>(value->first.size()));
    index += value->first;
    PutU32(&index, static_cast<uint32_t>(DTypeToTfEnum(t.dtype())));
    PutU32(&index, static_cast<uint32_t>(t.rank()));
    for (int64_t d : t.shape().dims()) PutU64(&index, static_cast<uint64_t>(d));
    PutU64(&index, data_size);
    PutU64(&index, t.bytes());
    PutU32(&index, Crc32c(t.raw_data(), t.bytes()));
    data_size += t.bytes();
  }
  std::string header(kMagic, sizeof(kMagic));
  PutU32(&header, kFormatVersion);
  PutU32(&header, static_cast<uint32_t>(order.size()));
  PutU64(&header, index.size());
  PutU64(&header, data_size);
  std::string footer;
  PutU32(&footer, Crc32cExtend(Crc32c(header.data(), header.size()), index.data(), index.size()));
  footer.append(kMagic, sizeof(kMagic));

  AtomicFileWriter file(path);
  FS_RETURN_IF_ERROR(file.Open());
  FS_RETURN_IF_ERROR(file.Append(header.data(), header.size()));
  FS_RETURN_IF_ERROR(file.Append(index.data(), index.size()));
  for (const auto* value : order) {
    FS_RETURN_IF_ERROR(file.Append(value->second.raw_data(), value->second.bytes()));
  }
  FS_RETURN_IF_ERROR(file.Append(footer.data(), footer.size()));
  return file.Commit();
}

Status SaveCheckpoint(Session& session, const CheckpointVars& vars, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> values;
  FS_RETURN_IF_ERROR(SnapshotVariables(session, vars, &values));
  return WriteCheckpoint(values, path);
}

Status ListCheckpoint(const std::string& path, std::vector<CheckpointEntry>* entries) {
  if (IsTensorBundle(path)) return ListTensorBundle(path, entries);
  CheckpointReader reader;
  FS_RETURN_IF_ERROR(reader.Open(path));
  entries->clear();
  for (const IndexEntry& e : reader.entries()) entries->push_back(e.entry);
  std::sort(entries->begin(), entries->end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.key < b.key; });
  return Status::OK();
}

Status ReadCheckpointTensors(const std::string& path, const std::vector<std::string>& keys,
                             std::vector<Tensor>* values) {
  if (IsTensorBundle(path)) return ReadTensorBundle(path, keys, values);
  CheckpointReader reader;
  FS_RETURN_IF_ERROR(reader.Open(path));
  // All keys are looked up before any bytes are read: a missing key fails fast.
  std::vector<const IndexEntry*> found(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) FS_RETURN_IF_ERROR(reader.Find(keys[i], &found[i]));
  values->assign(keys.size(), Tensor());
  for (size_t i = 0; i < keys.size(); ++i)
    FS_RETURN_IF_ERROR(reader.Read(*found[i], &(*values)[i]));
  return Status::OK();
}

namespace {

// InvalidArgument when the checkpoint's `stored` entry cannot restore the variable of `node`.
Status CheckStoredMatchesVariable(const std::string& path, const std::string& key, const Node& node,
                                  const CheckpointEntry& stored) {
  if (stored.dtype != VarDType(node)) {
    return errors::InvalidArgument("Cannot restore variable ", VarNameOf(node), " from checkpoint ",
                                   path, ": the variable has dtype ", DTypeName(VarDType(node)),
                                   " but the checkpoint stores key ", key, " as ",
                                   DTypeName(stored.dtype));
  }
  PartialShape shape = VarShape(node);
  if (!shape.IsCompatibleWith(stored.shape)) {
    return errors::InvalidArgument(
        "Cannot restore variable ", VarNameOf(node), " from checkpoint ", path,
        ": the variable has shape ", shape.ToString(), " but the checkpoint stores key ", key,
        " with shape ", stored.shape.ToString(),
        ". Build the model with the shapes it was saved with, or leave this variable out of the "
        "Saver's var_list.");
  }
  return Status::OK();
}

}  // namespace

Status ReadCheckpointForVariables(const CheckpointVars& vars, const std::string& path,
                                  std::vector<Tensor>* values) {
  for (const auto& [key, node] : vars) FS_RETURN_IF_ERROR(CheckVarHandle(key, node));
  if (IsTensorBundle(path)) {
    std::vector<CheckpointEntry> entries;
    FS_RETURN_IF_ERROR(ListTensorBundle(path, &entries));
    std::map<std::string, const CheckpointEntry*> by_key;
    for (const CheckpointEntry& e : entries) by_key[e.key] = &e;
    std::vector<std::string> keys;
    for (const auto& [key, node] : vars) {
      auto it = by_key.find(key);
      // A key the listing leaves out (missing, or of a dtype Flowstone lacks) is reported by
      // ReadTensorBundle with its reason.
      if (it != by_key.end()) {
        FS_RETURN_IF_ERROR(CheckStoredMatchesVariable(path, key, *node, *it->second));
      }
      keys.push_back(key);
    }
    return ReadTensorBundle(path, keys, values);
  }
  CheckpointReader reader;
  FS_RETURN_IF_ERROR(reader.Open(path));
  std::vector<const IndexEntry*> found(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    const auto& [key, node] = vars[i];
    FS_RETURN_IF_ERROR(reader.Find(key, &found[i]));
    FS_RETURN_IF_ERROR(CheckStoredMatchesVariable(path, key, *node, found[i]->entry));
  }
  values->assign(vars.size(), Tensor());
  for (size_t i = 0; i < vars.size(); ++i)
    FS_RETURN_IF_ERROR(reader.Read(*found[i], &(*values)[i]));
  return Status::OK();
}

Status AssignVariables(Session& session, const CheckpointVars& vars,
                       const std::vector<Tensor>& values) {
  FS_RETURN_IF_ERROR(CheckSessionOpen(session));
  if (vars.size() != values.size()) {
    return errors::InvalidArgument("AssignVariables got ", vars.size(), " variables but ",
                                   values.size(), " values");
  }
  ResourceMgr* resources = session.resource_manager();
  // A variable created earlier may differ from what this node declares (another VarHandleOp
  // with the same shared_name); check them all before changing any.
  for (size_t i = 0; i < vars.size(); ++i) {
    const auto& [key, node] = vars[i];
    FS_RETURN_IF_ERROR(CheckVarHandle(key, node));
    const Var* var = resources->LookupVar(VarNameOf(*node));
    if (var != nullptr && (var->dtype() != values[i].dtype() ||
                           !var->declared_shape().IsCompatibleWith(values[i].shape()))) {
      return errors::InvalidArgument("Cannot restore variable ", var->name(), " of ",
                                     DTypeName(var->dtype()), var->declared_shape().ToString(),
                                     " from a value of ", DTypeName(values[i].dtype()),
                                     values[i].shape().ToString());
    }
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    const Node& node = *vars[i].second;
    Var* var = resources->LookupOrCreateVar(VarNameOf(node), VarDType(node), VarShape(node));
    std::lock_guard<std::mutex> lock(var->mu());
    if (var->device() == nullptr) {
      var->value() = values[i];
    } else {
      FS_RETURN_IF_ERROR(var->device()->CopyFromHost(values[i], &var->value()));
    }
  }
  return Status::OK();
}

Status RestoreCheckpoint(Session& session, const CheckpointVars& vars, const std::string& path) {
  FS_RETURN_IF_ERROR(CheckSessionOpen(session));
  std::vector<Tensor> values;
  FS_RETURN_IF_ERROR(ReadCheckpointForVariables(vars, path, &values));
  return AssignVariables(session, vars, values);
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter file(path);
  FS_RETURN_IF_ERROR(file.Open());
  FS_RETURN_IF_ERROR(file.Append(contents.data(), contents.size()));
  return file.Commit();
}

}  // namespace flowstone
