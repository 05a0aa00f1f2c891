// TensorFlow's (and LevelDB's) immutable sorted string table: the format of a V2 checkpoint's
// .index file. Without compression: data blocks of prefix-compressed entries with restart
// points, each followed by a type byte and a masked CRC32C; an index block mapping each data
// block's last key to its handle; an empty metaindex block; and a 48-byte footer with both
// handles and the magic number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flowstone/status.h"

namespace flowstone::io {

// One block's entries: each key is stored as the length it shares with the previous key plus
// the rest, except at restart points (every `restart_interval` entries), which store it whole.
class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : restart_interval_(restart_interval) {}
  void Add(std::string_view key, std::string_view value);
  // The block's contents (entries, restart offsets, restart count); then the builder is empty.
  std::string Finish();
  bool empty() const { return data_.empty(); }
  size_t size() const { return data_.size(); }

 private:
  int restart_interval_;
  int since_restart_ = 0;
  std::string data_;
  std::string last_key_;
  std::vector<uint32_t> restarts_ = {0};
};

// Builds a table in memory. Keys must be added in strictly increasing (bytewise) order.
class TableBuilder {
 public:
  Status Add(std::string_view key, std::string_view value);
  // The finished table's bytes.
  std::string Finish();

 private:
  void FinishDataBlock();

  std::string file_;
  BlockBuilder block_{16};  // TensorFlow's restart interval for data blocks
  std::string last_key_;
  bool has_key_ = false;
  // (last key of a data block, encoded handle of that block)
  std::vector<std::pair<std::string, std::string>> index_;
};

// Reads every (key, value) of the table `contents` (the bytes of the file `name`), checking the
// footer, every block's CRC and bounds, and that keys increase. Damage is DataLoss naming the
// file; a compressed block is Unimplemented.
Status ReadTable(std::string_view contents, const std::string& name,
                 std::vector<std::pair<std::string, std::string>>* entries);

}  // namespace flowstone::io
