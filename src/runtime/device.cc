#include "flowstone/device.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

namespace flowstone {
namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.push_back("");
  return parts;
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// Parses a non-negative id or "*" (-1).
bool ParseId(const std::string& text, int* out) {
  if (text == "*") {
    *out = -1;
    return true;
  }
  if (text.empty() || text.size() > 9) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::stoi(text);
  return true;
}

bool ValidName(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '*') {
      return false;
    }
  }
  return true;
}

}  // namespace

Status DeviceSpec::Parse(const std::string& text, DeviceSpec* out) {
  DeviceSpec spec;
  auto malformed = [&text]() {
    Status s = errors::InvalidArgument(
        "Malformed device specification '", text,
        "'. Expected /job:<name>/replica:<int>/task:<int>/device:<TYPE>:<id>, every part "
        "optional and '*' allowed for any, e.g. '/gpu:0', '/device:CPU:0', "
        "'/job:localhost/replica:0/task:0/device:GPU:1'.");
    s.SetPayload("py_type", "ValueError");
    return s;
  };
  for (const std::string& part : Split(text, '/')) {
    if (part.empty()) continue;
    std::vector<std::string> fields = Split(part, ':');
    std::string key = fields[0];
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "job" && fields.size() == 2 && ValidName(fields[1])) {
      spec.job = fields[1] == "*" ? "" : fields[1];
    } else if (lower == "replica" && fields.size() == 2 && ParseId(fields[1], &spec.replica)) {
    } else if (lower == "task" && fields.size() == 2 && ParseId(fields[1], &spec.task)) {
    } else if (lower == "device" && fields.size() >= 2 && fields.size() <= 3 &&
               ValidName(fields[1])) {
      spec.type = fields[1] == "*" ? "" : Upper(fields[1]);
      spec.id = -1;
      if (fields.size() == 3 && !ParseId(fields[2], &spec.id)) return malformed();
    } else if ((lower == "cpu" || lower == "gpu") && fields.size() <= 2) {
      // Legacy "/cpu:0" and "/gpu:1".
      spec.type = Upper(lower);
      spec.id = -1;
      if (fields.size() == 2 && !ParseId(fields[1], &spec.id)) return malformed();
    } else {
      return malformed();
    }
  }
  *out = spec;
  return Status::OK();
}

DeviceSpec DeviceSpec::Merge(const DeviceSpec& outer, const DeviceSpec& inner) {
  DeviceSpec out = outer;
  if (!inner.job.empty()) out.job = inner.job;
  if (inner.replica >= 0) out.replica = inner.replica;
  if (inner.task >= 0) out.task = inner.task;
  if (!inner.type.empty()) {
    // A new device type without an id does not inherit the outer id.
    if (inner.type != out.type) out.id = -1;
    out.type = inner.type;
  }
  if (inner.id >= 0) out.id = inner.id;
  return out;
}

bool DeviceSpec::Matches(const DeviceSpec& device) const {
  if (!job.empty() && job != device.job) return false;
  if (replica >= 0 && replica != device.replica) return false;
  if (task >= 0 && task != device.task) return false;
  if (!type.empty() && type != device.type) return false;
  if (id >= 0 && id != device.id) return false;
  return true;
}

bool DeviceSpec::empty() const {
  return job.empty() && replica < 0 && task < 0 && type.empty() && id < 0;
}

std::string DeviceSpec::ToString() const {
  std::string out;
  if (!job.empty()) out += "/job:" + job;
  if (replica >= 0) out += StrCat("/replica:", replica);
  if (task >= 0) out += StrCat("/task:", task);
  if (!type.empty()) out += "/device:" + type + ":" + (id >= 0 ? std::to_string(id) : "*");
  return out;
}

std::string LocalDeviceName(const std::string& type, int id) {
  return StrCat("/job:localhost/replica:0/task:0/device:", type, ":", id);
}

Device::Device(std::string type, int id, Allocator* allocator, ThreadPool* intra_op_pool)
    : type_(std::move(type)),
      id_(id),
      name_(LocalDeviceName(type_, id)),
      allocator_(allocator),
      intra_op_pool_(intra_op_pool) {
  spec_.job = "localhost";
  spec_.replica = 0;
  spec_.task = 0;
  spec_.type = type_;
  spec_.id = id;
}

DeviceAttributes Device::attributes() const {
  DeviceAttributes attrs;
  attrs.name = name_;
  attrs.device_type = type_;
  attrs.memory_limit_bytes = allocator_->limit();
  return attrs;
}

Status Device::CopyToHost(const Tensor& device_tensor, Tensor* host_tensor) {
  *host_tensor = device_tensor;
  return Status::OK();
}

Status Device::CopyFromHost(const Tensor& host_tensor, Tensor* device_tensor) {
  *device_tensor = host_tensor;
  return Status::OK();
}

}  // namespace flowstone
