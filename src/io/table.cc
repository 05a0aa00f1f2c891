// See table.h. Layout facts (block trailer, footer, magic number, restart points) are LevelDB's
// table format, which TensorFlow's tensor bundle uses unchanged.
#include "io/table.h"

#include <cstdint>
#include <cstring>

#include "io/crc32c.h"

namespace flowstone::io {
namespace {

constexpr uint64_t kTableMagicNumber = 0xdb4775248b80fb57ull;
// Two block handles of at most two 10-byte varints each, then the magic number.
constexpr size_t kFooterSize = 2 * 20 + 8;
// A block's trailer: the compression type byte and the masked CRC32C of contents + type.
constexpr size_t kBlockTrailerSize = 5;
constexpr char kNoCompression = 0;
// TensorFlow's defaults for the bundle's tables.
constexpr size_t kBlockSize = 256 * 1024;
constexpr int kRestartInterval = 16;

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

// Decodes a varint of at most `max_bits` bits from [*p, end); false when malformed.
bool GetVarint(const char** p, const char* end, int max_bits, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < max_bits && *p < end; shift += 7) {
    uint64_t byte = static_cast<unsigned char>(*(*p)++);
    v |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

std::string EncodeHandle(uint64_t offset, uint64_t size) {
  std::string out;
  PutVarint(&out, offset);
  PutVarint(&out, size);
  return out;
}

// Appends `contents` as a block with its trailer; returns its encoded handle.
std::string AppendBlock(std::string* file, const std::string& contents) {
  std::string handle = EncodeHandle(file->size(), contents.size());
  file->append(contents);
  uint32_t crc = Crc32cExtend(Crc32c(contents.data(), contents.size()), &kNoCompression, 1);
  file->push_back(kNoCompression);
  PutFixed32(file, MaskCrc32c(crc));
  return handle;
}

Status Damaged(const std::string& name, const std::string& what) {
  return errors::DataLoss("Checkpoint index ", name, " is damaged or not a table: ", what);
}

struct Handle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

bool DecodeHandle(const char** p, const char* end, Handle* handle) {
  return GetVarint(p, end, 64, &handle->offset) && GetVarint(p, end, 64, &handle->size);
}

// The contents of the block at `handle`, after checking its bounds, trailer and CRC.
Status ReadBlock(std::string_view file, const std::string& name, const Handle& handle,
                 std::string_view* contents) {
  if (handle.offset > file.size() || handle.size > file.size() - handle.offset ||
      kBlockTrailerSize > file.size() - handle.offset - handle.size) {
    return Damaged(name, "a block handle points past the end of the file");
  }
  const char* block = file.data() + handle.offset;
  char type = block[handle.size];
  uint32_t stored = UnmaskCrc32c(GetFixed32(block + handle.size + 1));
  uint32_t actual = Crc32cExtend(Crc32c(block, handle.size), &type, 1);
  if (stored != actual) return Damaged(name, "a block's checksum does not match its bytes");
  if (type != kNoCompression) {
    return errors::Unimplemented("Checkpoint index ", name,
                                 " has compressed blocks, which Flowstone cannot read");
  }
  *contents = std::string_view(block, handle.size);
  return Status::OK();
}

// Appends the entries of one block, whose keys must exceed `*last_key` and each other.
Status ParseBlock(std::string_view block, const std::string& name, std::string* last_key,
                  bool* has_key, std::vector<std::pair<std::string, std::string>>* entries) {
  if (block.size() < 4) return Damaged(name, "a block is too short");
  uint64_t restarts = GetFixed32(block.data() + block.size() - 4);
  if (restarts == 0 || restarts > (block.size() - 4) / 4) {
    return Damaged(name, "a block's restart count does not fit the block");
  }
  const char* p = block.data();
  const char* end = block.data() + block.size() - 4 - 4 * restarts;
  std::string key;
  while (p < end) {
    uint64_t shared, non_shared, value_size;
    if (!GetVarint(&p, end, 32, &shared) || !GetVarint(&p, end, 32, &non_shared) ||
        !GetVarint(&p, end, 32, &value_size)) {
      return Damaged(name, "an entry's lengths are malformed");
    }
    if (shared > key.size() || non_shared > static_cast<uint64_t>(end - p) ||
        value_size > static_cast<uint64_t>(end - p) - non_shared) {
      return Damaged(name, "an entry runs past its block");
    }
    key.resize(shared);
    key.append(p, non_shared);
    p += non_shared;
    if (*has_key && key <= *last_key) return Damaged(name, "keys are not in increasing order");
    entries->emplace_back(key, std::string(p, value_size));
    p += value_size;
    *last_key = key;
    *has_key = true;
  }
  return Status::OK();
}

}  // namespace

void BlockBuilder::Add(std::string_view key, std::string_view value) {
  size_t shared = 0;
  if (since_restart_ == restart_interval_) {
    restarts_.push_back(static_cast<uint32_t>(data_.size()));
    since_restart_ = 0;
  } else {
    while (shared < last_key_.size() && shared < key.size() && last_key_[shared] == key[shared]) {
      ++shared;
    }
  }
  PutVarint(&data_, shared);
  PutVarint(&data_, key.size() - shared);
  PutVarint(&data_, value.size());
  data_.append(key.substr(shared));
  data_.append(value);
  last_key_ = std::string(key);
  ++since_restart_;
}

std::string BlockBuilder::Finish() {
  std::string out = std::move(data_);
  for (uint32_t r : restarts_) PutFixed32(&out, r);
  PutFixed32(&out, static_cast<uint32_t>(restarts_.size()));
  data_.clear();
  last_key_.clear();
  restarts_ = {0};
  since_restart_ = 0;
  return out;
}

Status TableBuilder::Add(std::string_view key, std::string_view value) {
  if (has_key_ && key <= std::string_view(last_key_)) {
    return errors::Internal("table keys must be added in increasing order");
  }
  block_.Add(key, value);
  last_key_ = std::string(key);
  has_key_ = true;
  if (block_.size() >= kBlockSize) FinishDataBlock();
  return Status::OK();
}

void TableBuilder::FinishDataBlock() {
  if (block_.empty()) return;
  index_.emplace_back(last_key_, AppendBlock(&file_, block_.Finish()));
}

std::string TableBuilder::Finish() {
  FinishDataBlock();
  std::string metaindex_handle = AppendBlock(&file_, BlockBuilder(kRestartInterval).Finish());
  BlockBuilder index(1);
  for (const auto& [key, handle] : index_) index.Add(key, handle);
  std::string index_handle = AppendBlock(&file_, index.Finish());
  std::string footer = metaindex_handle + index_handle;
  footer.resize(kFooterSize - 8, '\0');
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagicNumber));
  PutFixed32(&footer, static_cast<uint32_t>(kTableMagicNumber >> 32));
  file_.append(footer);
  return std::move(file_);
}

Status ReadTable(std::string_view contents, const std::string& name,
                 std::vector<std::pair<std::string, std::string>>* entries) {
  entries->clear();
  if (contents.size() < kFooterSize) return Damaged(name, "the file is shorter than a footer");
  const char* footer = contents.data() + contents.size() - kFooterSize;
  uint64_t magic =
      GetFixed32(footer + kFooterSize - 8) | (uint64_t{GetFixed32(footer + kFooterSize - 4)} << 32);
  if (magic != kTableMagicNumber) return Damaged(name, "the footer's magic number is wrong");
  const char* p = footer;
  const char* handles_end = footer + kFooterSize - 8;
  Handle metaindex, index;
  if (!DecodeHandle(&p, handles_end, &metaindex) || !DecodeHandle(&p, handles_end, &index)) {
    return Damaged(name, "the footer's block handles are malformed");
  }
  std::string_view index_block;
  FS_RETURN_IF_ERROR(ReadBlock(contents, name, index, &index_block));
  std::vector<std::pair<std::string, std::string>> index_entries;
  std::string last_key;
  bool has_key = false;
  FS_RETURN_IF_ERROR(ParseBlock(index_block, name, &last_key, &has_key, &index_entries));
  last_key.clear();
  has_key = false;
  for (const auto& [separator, encoded] : index_entries) {
    const char* q = encoded.data();
    Handle handle;
    if (!DecodeHandle(&q, encoded.data() + encoded.size(), &handle)) {
      return Damaged(name, "an index entry's block handle is malformed");
    }
    std::string_view block;
    FS_RETURN_IF_ERROR(ReadBlock(contents, name, handle, &block));
    FS_RETURN_IF_ERROR(ParseBlock(block, name, &last_key, &has_key, entries));
    if (has_key && last_key > separator) {
      return Damaged(name, "a block holds keys beyond its index entry");
    }
  }
  return Status::OK();
}

}  // namespace flowstone::io
