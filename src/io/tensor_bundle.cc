// TensorFlow's tensor bundle (V2 checkpoints). See include/flowstone/tensor_bundle.h.
#include "flowstone/tensor_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <map>

#include "io/crc32c.h"
#include "io/file_util.h"
#include "io/table.h"
#include "proto/tensor_bundle.pb.h"

namespace flowstone {

static_assert(std::endian::native == std::endian::little,
              "bundle data is little-endian and copied as it lies in memory");

namespace {

using io::AtomicFileWriter;
using io::IoError;

// TensorFlow's kTensorBundleVersion: the version this writer produces and the newest whose
// files it can read.
constexpr int kBundleVersion = 1;
constexpr int kMaxRank = 254;

std::string IndexPath(const std::string& prefix) { return prefix + ".index"; }

std::string DataPath(const std::string& prefix, int shard, int num_shards) {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return prefix + suffix;
}

bool DTypeFromTfEnum(int value, DType* out) {
  for (int i = 1; i < kNumDTypes; ++i) {
    DType dtype = static_cast<DType>(i);
    // Plain-bytes types and strings (stored with their lengths first, see ReadStrings).
    if (dtype != DType::kVariant && dtype != DType::kResource && DTypeToTfEnum(dtype) == value) {
      *out = dtype;
      return true;
    }
  }
  return false;
}

Status ReadWholeFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return errors::NotFound(
          "Unsuccessful TensorSliceReader constructor: Failed to find any "
          "matching files for ",
          path);
    }
    return IoError("Cannot open checkpoint index", path, err);
  }
  struct stat st;
  Status s;
  if (fstat(fd, &st) != 0) {
    s = IoError("Cannot stat checkpoint index", path, errno);
  } else {
    out->resize(static_cast<size_t>(st.st_size));
    s = io::ReadAt(fd, path, 0, out->data(), out->size());
  }
  close(fd);
  return s;
}

// One whole tensor of the bundle, checked against the header.
struct Entry {
  proto::BundleEntryProto proto;
  DType dtype = DType::kInvalid;  // kInvalid: a dtype Flowstone lacks
  TensorShape shape;
};

class BundleReader {
 public:
  Status Open(const std::string& prefix) {
    prefix_ = prefix;
    index_path_ = IndexPath(prefix);
    std::string contents;
    FS_RETURN_IF_ERROR(ReadWholeFile(index_path_, &contents));
    std::vector<std::pair<std::string, std::string>> table;
    FS_RETURN_IF_ERROR(io::ReadTable(contents, index_path_, &table));
    if (table.empty() || !table[0].first.empty()) {
      return Damaged("it has no header entry");
    }
    proto::BundleHeaderProto header;
    if (!header.ParseFromString(table[0].second)) return Damaged("its header does not parse");
    if (header.num_shards() < 1) return Damaged("its header gives no data shards");
    if (header.endianness() != proto::BundleHeaderProto::LITTLE) {
      return errors::Unimplemented("Checkpoint ", prefix,
                                   " was written big-endian, which "
                                   "Flowstone cannot read");
    }
    if (header.version().min_consumer() > kBundleVersion) {
      return errors::Unimplemented("Checkpoint ", prefix, " needs a reader of bundle version ",
                                   header.version().min_consumer(), "; Flowstone reads version ",
                                   kBundleVersion);
    }
    num_shards_ = header.num_shards();
    for (size_t i = 1; i < table.size(); ++i) {
      const std::string& key = table[i].first;
      // Slices of partitioned variables are stored under encoded keys starting with a 0 byte.
      if (key[0] == '\0') continue;
      Entry entry;
      if (!entry.proto.ParseFromString(table[i].second)) {
        return Damaged(StrCat("the entry of '", key, "' does not parse"));
      }
      FS_RETURN_IF_ERROR(CheckEntry(key, &entry));
      entries_.emplace(key, std::move(entry));
    }
    return Status::OK();
  }

  const std::map<std::string, Entry>& entries() const { return entries_; }

  Status Find(const std::string& key, const Entry** entry) const {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      return errors::NotFound("Key ", key, " not found in checkpoint ", prefix_);
    }
    *entry = &it->second;
    return Status::OK();
  }

  Status Read(const std::string& key, const Entry& entry, Tensor* out) const {
    if (entry.proto.slices_size() > 0) {
      return errors::Unimplemented("Checkpoint ", prefix_, " stores '", key,
                                   "' as slices of a partitioned variable, which Flowstone "
                                   "cannot restore yet");
    }
    if (entry.dtype == DType::kInvalid) {
      return errors::Unimplemented(
          "Checkpoint ", prefix_, " stores '", key, "' as ",
          proto::DataType_Name(static_cast<proto::DataType>(entry.proto.dtype())),
          ", a dtype Flowstone does not support");
    }
    std::string path = DataPath(prefix_, entry.proto.shard_id(), num_shards_);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) {
        return errors::DataLoss("Checkpoint ", prefix_, " is incomplete: its data file ", path,
                                " is missing");
      }
      return IoError("Cannot open checkpoint data", path, err);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int err = errno;
      close(fd);
      return IoError("Cannot stat checkpoint data", path, err);
    }
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    const uint64_t offset = static_cast<uint64_t>(entry.proto.offset());
    const uint64_t size = static_cast<uint64_t>(entry.proto.size());
    if (offset > file_size || size > file_size - offset) {
      close(fd);
      return errors::DataLoss("Checkpoint ", prefix_, ": the index places '", key, "' at bytes [",
                              offset, ", ", offset + size, ") but the data file ", path, " has ",
                              file_size, " bytes");
    }
    if (entry.dtype == DType::kString) {
      std::string bytes(size, '\0');
      Status s = io::ReadAt(fd, path, offset, bytes.data(), size);
      close(fd);
      FS_RETURN_IF_ERROR(s);
      return ReadStrings(key, entry, bytes, out);
    }
    Tensor tensor = Tensor::Host(entry.dtype, entry.shape);
    Status s = io::ReadAt(fd, path, offset, tensor.raw_data(), size);
    close(fd);
    FS_RETURN_IF_ERROR(s);
    uint32_t crc = io::Crc32c(tensor.raw_data(), size);
    if (io::MaskCrc32c(crc) != entry.proto.crc32c()) {
      return errors::DataLoss("Checksum does not match: stored ", entry.proto.crc32c(),
                              " vs. calculated on the restored bytes ", io::MaskCrc32c(crc),
                              " for '", key, "' in checkpoint ", prefix_);
    }
    if (entry.dtype == DType::kBool) {
      // A byte other than 0 or 1 is no valid bool; TensorFlow reads it as true.
      auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
      for (uint64_t i = 0; i < size; ++i) bytes[i] = bytes[i] != 0;
    }
    *out = std::move(tensor);
    return Status::OK();
  }

 private:
  // TensorFlow's layout of a string tensor: each element's length as a varint64, a masked
  // CRC32C of the lengths (each taken as a little-endian uint32, or uint64 past 2^32 - 1), then
  // the elements' bytes. The entry's CRC32C covers the lengths the same way, the lengths'
  // checksum and the bytes.
  Status ReadStrings(const std::string& key, const Entry& entry, const std::string& bytes,
                     Tensor* out) const {
    const int64_t count = entry.shape.num_elements();
    std::vector<uint64_t> lengths(static_cast<size_t>(count));
    size_t pos = 0;
    uint32_t crc = 0;
    for (int64_t i = 0; i < count; ++i) {
      uint64_t length = 0;
      int shift = 0;
      while (true) {
        if (pos >= bytes.size() || shift > 63) {
          return errors::DataLoss("Checkpoint ", prefix_, ": the lengths of string tensor '", key,
                                  "' are damaged");
        }
        const unsigned char byte = static_cast<unsigned char>(bytes[pos++]);
        length |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) break;
        shift += 7;
      }
      lengths[i] = length;
      if (length <= std::numeric_limits<uint32_t>::max()) {
        const uint32_t small = static_cast<uint32_t>(length);
        crc = io::Crc32cExtend(crc, &small, sizeof(small));
      } else {
        crc = io::Crc32cExtend(crc, &length, sizeof(length));
      }
    }
    uint32_t stored = 0;
    if (bytes.size() - pos < sizeof(stored)) {
      return errors::DataLoss("Checkpoint ", prefix_, ": string tensor '", key, "' is truncated");
    }
    std::memcpy(&stored, bytes.data() + pos, sizeof(stored));
    pos += sizeof(stored);
    if (stored != io::MaskCrc32c(crc)) {
      return errors::DataLoss("Checkpoint ", prefix_, ": the lengths of string tensor '", key,
                              "' fail their checksum");
    }
    crc = io::Crc32cExtend(crc, &stored, sizeof(stored));
    Tensor tensor = Tensor::Host(DType::kString, entry.shape);
    std::string* strings = tensor.data<std::string>();
    for (int64_t i = 0; i < count; ++i) {
      if (lengths[i] > bytes.size() - pos) {
        return errors::DataLoss("Checkpoint ", prefix_, ": string tensor '", key,
                                "' is shorter than its lengths say");
      }
      strings[i].assign(bytes.data() + pos, lengths[i]);
      crc = io::Crc32cExtend(crc, strings[i].data(), strings[i].size());
      pos += lengths[i];
    }
    if (io::MaskCrc32c(crc) != entry.proto.crc32c()) {
      return errors::DataLoss("Checksum does not match for string tensor '", key,
                              "' in checkpoint ", prefix_);
    }
    *out = std::move(tensor);
    return Status::OK();
  }

  Status Damaged(const std::string& what) const {
    return errors::DataLoss("Checkpoint index ", index_path_, " is damaged: ", what);
  }

  // Checks the dtype, shape, shard, offset and size an entry claims.
  Status CheckEntry(const std::string& key, Entry* entry) const {
    const proto::BundleEntryProto& p = entry->proto;
    if (p.shard_id() < 0 || p.shard_id() >= num_shards_) {
      return Damaged(StrCat("'", key, "' is in shard ", p.shard_id(), " of ", num_shards_));
    }
    if (p.offset() < 0 || p.size() < 0) {
      return Damaged(StrCat("'", key, "' has a negative offset or size"));
    }
    if (p.slices_size() > 0) return Status::OK();
    if (!DTypeFromTfEnum(p.dtype(), &entry->dtype)) {
      if (!proto::DataType_IsValid(p.dtype()) || p.dtype() == proto::DT_INVALID) {
        return Damaged(StrCat("'", key, "' has the invalid dtype ", p.dtype()));
      }
      entry->dtype = DType::kInvalid;
      return Status::OK();
    }
    if (p.shape().dim_size() > kMaxRank || p.shape().unknown_rank()) {
      return Damaged(StrCat("'", key, "' has an invalid shape"));
    }
    int64_t count = 1;
    for (const auto& dim : p.shape().dim()) {
      if (dim.size() < 0) return Damaged(StrCat("'", key, "' has a negative dimension"));
      if (dim.size() != 0 && count > std::numeric_limits<int64_t>::max() / dim.size()) {
        return Damaged(StrCat("the shape of '", key, "' overflows"));
      }
      count *= dim.size();
      entry->shape.AddDim(dim.size());
    }
    if (entry->dtype == DType::kString) {
      // At least one length byte per element, and the lengths' 4-byte checksum.
      if (p.size() < 4 || count > p.size() - 4) {
        return Damaged(
            StrCat("'", key, "' is ", p.size(), " bytes, too few for ", count, " strings"));
      }
      return Status::OK();
    }
    const int64_t element_size = static_cast<int64_t>(DTypeSize(entry->dtype));
    if (count > std::numeric_limits<int64_t>::max() / element_size ||
        count * element_size != p.size()) {
      return Damaged(StrCat("'", key, "' is ", p.size(), " bytes, but a ", DTypeName(entry->dtype),
                            " tensor of shape ", entry->shape.ToString(), " has ", count,
                            " elements of ", element_size, " bytes"));
    }
    return Status::OK();
  }

  std::string prefix_;
  std::string index_path_;
  int num_shards_ = 1;
  std::map<std::string, Entry> entries_;
};

// A string tensor in the layout BundleReader::ReadStrings reads (TensorFlow's): varint64 lengths,
// their masked CRC32C, then the bytes; `crc` gets the entry's checksum over all three.
std::string EncodeStrings(const Tensor& t, uint32_t* crc) {
  const std::string* strings = t.data<std::string>();
  std::string out;
  *crc = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    uint64_t length = strings[i].size();
    if (length <= std::numeric_limits<uint32_t>::max()) {
      const uint32_t small = static_cast<uint32_t>(length);
      *crc = io::Crc32cExtend(*crc, &small, sizeof(small));
    } else {
      *crc = io::Crc32cExtend(*crc, &length, sizeof(length));
    }
    do {
      const unsigned char byte = static_cast<unsigned char>(length & 0x7f);
      length >>= 7;
      out.push_back(static_cast<char>(length ? byte | 0x80 : byte));
    } while (length);
  }
  const uint32_t lengths_crc = io::MaskCrc32c(*crc);
  out.append(reinterpret_cast<const char*>(&lengths_crc), sizeof(lengths_crc));
  *crc = io::Crc32cExtend(*crc, &lengths_crc, sizeof(lengths_crc));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    out += strings[i];
    *crc = io::Crc32cExtend(*crc, strings[i].data(), strings[i].size());
  }
  return out;
}

}  // namespace

bool IsTensorBundle(const std::string& prefix) {
  struct stat st;
  return stat(IndexPath(prefix).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status WriteTensorBundle(const std::vector<std::pair<std::string, Tensor>>& values,
                         const std::string& prefix) {
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& value : values) {
    const Tensor& t = value.second;
    if (value.first.empty()) return errors::InvalidArgument("Checkpoint keys must not be empty");
    if (!t.initialized() || t.dtype() == DType::kResource || t.dtype() == DType::kVariant) {
      return errors::InvalidArgument("Cannot save ", value.first,
                                     ": only numeric, bool and string tensors can be saved in a "
                                     "checkpoint");
    }
    order.push_back(&value);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->first == order[i - 1]->first) {
      return errors::InvalidArgument("Checkpoint key ", order[i]->first, " is given twice");
    }
  }

  io::TableBuilder index;
  proto::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(proto::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  FS_RETURN_IF_ERROR(index.Add("", header.SerializeAsString()));

  AtomicFileWriter data(DataPath(prefix, 0, 1));
  FS_RETURN_IF_ERROR(data.Open());
  int64_t offset = 0;
  for (const auto* value : order) {
    const Tensor& t = value->second;
    proto::BundleEntryProto entry;
    entry.set_dtype(static_cast<proto::DataType>(DTypeToTfEnum(t.dtype())));
    for (int64_t d : t.shape().dims()) entry.mutable_shape()->add_dim()->set_size(d);
    entry.set_shard_id(0);
    entry.set_offset(offset);
    if (t.dtype() == DType::kString) {
      uint32_t crc = 0;
      std::string bytes = EncodeStrings(t, &crc);
      entry.set_size(static_cast<int64_t>(bytes.size()));
      entry.set_crc32c(io::MaskCrc32c(crc));
      FS_RETURN_IF_ERROR(data.Append(bytes.data(), bytes.size()));
      offset += static_cast<int64_t>(bytes.size());
    } else {
      entry.set_size(static_cast<int64_t>(t.bytes()));
      entry.set_crc32c(io::MaskCrc32c(io::Crc32c(t.raw_data(), t.bytes())));
      FS_RETURN_IF_ERROR(data.Append(t.raw_data(), t.bytes()));
      offset += static_cast<int64_t>(t.bytes());
    }
    FS_RETURN_IF_ERROR(index.Add(value->first, entry.SerializeAsString()));
  }
  std::string index_bytes = index.Finish();
  AtomicFileWriter index_file(IndexPath(prefix));
  FS_RETURN_IF_ERROR(index_file.Open());
  FS_RETURN_IF_ERROR(index_file.Append(index_bytes.data(), index_bytes.size()));
  FS_RETURN_IF_ERROR(data.Commit());
  return index_file.Commit();
}

Status ListTensorBundle(const std::string& prefix, std::vector<CheckpointEntry>* entries) {
  BundleReader reader;
  FS_RETURN_IF_ERROR(reader.Open(prefix));
  entries->clear();
  for (const auto& [key, entry] : reader.entries()) {
    if (entry.dtype == DType::kInvalid || entry.proto.slices_size() > 0) {
      continue;
    }
    entries->push_back(CheckpointEntry{key, entry.dtype, entry.shape});
  }
  return Status::OK();
}

Status ReadTensorBundle(const std::string& prefix, const std::vector<std::string>& keys,
                        std::vector<Tensor>* values) {
  BundleReader reader;
  FS_RETURN_IF_ERROR(reader.Open(prefix));
  // Every key is looked up before any bytes are read: a missing key fails fast.
  std::vector<const Entry*> found(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) FS_RETURN_IF_ERROR(reader.Find(keys[i], &found[i]));
  values->assign(keys.size(), Tensor());
  for (size_t i = 0; i < keys.size(); ++i) {
    FS_RETURN_IF_ERROR(reader.Read(keys[i], *found[i], &(*values)[i]));
  }
  return Status::OK();
}

}  // namespace flowstone
