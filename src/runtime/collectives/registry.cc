// Process-wide tables of the collectives: which op types are collectives (the session runs plans
// holding one on a single thread) and which DeviceCollectives serve each device type.
#include <map>
#include <mutex>
#include <set>

#include "flowstone/collectives.h"
#include "runtime/collectives/data_plane.h"

namespace flowstone {
namespace {

struct Tables {
  std::mutex mu;
  std::set<std::string> op_types;
  std::set<std::string> early_op_types;  // a subset of op_types
  std::map<std::string, std::shared_ptr<DeviceCollectives>> device_collectives;
};

// Built on first use, since registrations run during other files' static initialization, and
// never destroyed, since plugins may look it up while the process exits.
Tables& GetTables() {
  static Tables* tables = new Tables;
  return *tables;
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce:
      return "allreduce";
    case CollectiveKind::kAllgather:
      return "allgather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAlltoall:
      return "alltoall";
  }
  return "unknown collective";
}

void RegisterCollectiveOpType(const std::string& type) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  t.op_types.insert(type);
}

bool IsCollectiveOpType(const std::string& type) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.op_types.count(type) > 0;
}

void RegisterEarlyCollectiveOpType(const std::string& type) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  t.early_op_types.insert(type);
}

bool IsEarlyCollectiveOpType(const std::string& type) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.early_op_types.count(type) > 0;
}

void RegisterDeviceCollectives(const std::string& device_type,
                               std::shared_ptr<DeviceCollectives> collectives) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  t.device_collectives[device_type] = std::move(collectives);
}

namespace collectives {

std::shared_ptr<DeviceCollectives> DeviceCollectivesFor(const std::string& device_type) {
  Tables& t = GetTables();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.device_collectives.find(device_type);
  return it == t.device_collectives.end() ? nullptr : it->second;
}

}  // namespace collectives
}  // namespace flowstone
