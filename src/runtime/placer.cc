#include "placer.h"

#include <algorithm>

#include "flowstone/kernel.h"

namespace flowstone {

bool HasKernel(const Node& node, const Device& device) {
  return FindKernelDef(node, device.type()) != nullptr;
}

namespace {

Device* FirstWithKernel(const Node& node, const std::vector<Device*>& devices,
                        const DeviceSpec* spec) {
  for (Device* d : devices) {
    if ((spec == nullptr || spec->Matches(d->spec())) && HasKernel(node, *d)) return d;
  }
  return nullptr;
}

// "[ /job:localhost/replica:0/task:0/device:CPU:0, ... ]", CPUs first as TensorFlow lists them.
std::string DeviceList(std::vector<Device*> devices) {
  std::stable_sort(devices.begin(), devices.end(), [](const Device* a, const Device* b) {
    return (a->type() == "CPU") > (b->type() == "CPU");
  });
  std::string out = "[ ";
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i]->name();
  return out + " ]";
}

}  // namespace

Status PlaceNode(const Node& node, const std::vector<Device*>& devices,
                 const std::vector<Device*>& input_devices, const PlacementOptions& options,
                 Device** out) {
  DeviceSpec requested;
  FS_RETURN_IF_ERROR(DeviceSpec::Parse(node.requested_device(), &requested));

  // An op on a variable runs on the variable's device. One with no kernel there (built after the
  // variable was placed) runs where it has one, and moves the value into that memory at run time
  // (ops/var_memory.h), unless the user pinned the variable and asked for no soft placement.
  for (int i = 0; i < node.num_inputs(); ++i) {
    Device* var_device = input_devices[i];
    if (node.input_type(i) != DType::kResource || var_device == nullptr ||
        var_device->host_memory()) {
      continue;
    }
    const bool has_kernel = HasKernel(node, *var_device);
    if (has_kernel && (requested.Matches(var_device->spec()) || options.allow_soft_placement)) {
      *out = var_device;
      return Status::OK();
    }
    const bool variable_pinned = !node.inputs()[i].node->requested_device().empty();
    if (!has_kernel && (!variable_pinned || options.allow_soft_placement)) continue;
    return errors::InvalidArgument(
        "Cannot assign a device for operation ", node.name(), ": it uses the variable ",
        node.inputs()[i].node->name(), ", which lives in the memory of ", var_device->name(),
        ", but ",
        has_kernel ? StrCat("it is pinned to ", node.requested_device())
                   : StrCat("op ", node.type(), " has no ", var_device->type(), " kernel"),
        ". To fix: create the variable under tf.device('/cpu:0'), or build the ops that use it "
        "before the session first runs, so that the placer can choose a device that runs them "
        "all.");
  }

  // Colocate ops on a variable with the variable.
  if (requested.empty()) {
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (node.input_type(i) == DType::kResource && input_devices[i] != nullptr &&
          HasKernel(node, *input_devices[i])) {
        *out = input_devices[i];
        return Status::OK();
      }
    }
  }

  if (Device* d = FirstWithKernel(node, devices, &requested)) {
    *out = d;
    return Status::OK();
  }
  bool any_match = false;
  for (Device* d : devices) any_match |= requested.Matches(d->spec());

  if (options.allow_soft_placement) {
    if (Device* d = FirstWithKernel(node, devices, nullptr)) {
      *out = d;
      return Status::OK();
    }
  }
  std::string name = node.name();
  if (!any_match) {
    std::string gpu_note;
    if (requested.type == "GPU") {
      gpu_note = " The requested device appears to be a GPU, but no GPU is available";
      gpu_note += options.gpu_unavailable_reason.empty()
                      ? "."
                      : StrCat(": ", options.gpu_unavailable_reason, ".");
    }
    return errors::InvalidArgument(
        "Cannot assign a device for operation ", name, ": {{node ", name,
        "}} was explicitly assigned to ", node.requested_device(), " but available devices are ",
        DeviceList(devices), ". Make sure the device specification refers to a valid device.",
        gpu_note,
        " To fix: change or remove the tf.device(...) pin, or create the session with "
        "tf.ConfigProto(allow_soft_placement=True) to fall back to an available device.");
  }
  return errors::InvalidArgument(
      "Cannot assign a device for operation ", name,
      ": Could not satisfy explicit device "
      "specification '",
      node.requested_device(), "' because no supported kernel for ",
      requested.type.empty() ? std::string("the requested") : requested.type,
      " devices is available. Op ", node.type(), " has kernels for: ",
      [&] {
        std::string types;
        for (const std::string& t : node.op_def().KernelDeviceTypes())
          types += (types.empty() ? "" : ", ") + t;
        return types;
      }(),
      ". To fix: pin it to one of those, or set allow_soft_placement=True.");
}

std::vector<std::string> ColocationTargets(const Node& node) {
  static const std::string kPrefix = "loc:@";
  std::vector<std::string> names;
  const auto* groups = std::get_if<std::vector<std::string>>(node.attrs().Find("_class"));
  if (groups == nullptr) return names;
  for (const std::string& group : *groups) {
    if (group.rfind(kPrefix, 0) != 0) continue;
    std::string name = group.substr(kPrefix.size());
    if (name != node.name()) names.push_back(std::move(name));
  }
  return names;
}

Status PlaceColocatedNode(const Node& node, const std::vector<ColocationTarget>& targets,
                          const std::vector<Device*>& devices,
                          const std::vector<Device*>& input_devices,
                          const PlacementOptions& options, Device** out) {
  const ColocationTarget& first = targets.front();
  auto cannot_colocate = [&](const Node& other, const std::string& why) {
    return errors::InvalidArgument(
        "Cannot colocate nodes {{colocation_node ", node.name(), "}} and {{colocation_node ",
        other.name(), "}}: ", why,
        " To fix: remove the conflicting tf.device pin or tf.colocate_with, or create the "
        "session with tf.ConfigProto(allow_soft_placement=True) to let the placer separate "
        "them.");
  };

  Status conflict;
  for (const ColocationTarget& target : targets) {
    if (target.device != first.device) {
      conflict = cannot_colocate(*target.node,
                                 StrCat("it is colocated with both ", first.node->name(), " on ",
                                        first.device->name(), " and ", target.node->name(), " on ",
                                        target.device->name(), ", which are different devices."));
      break;
    }
  }
  DeviceSpec requested;
  FS_RETURN_IF_ERROR(DeviceSpec::Parse(node.requested_device(), &requested));
  if (conflict.ok() && !requested.Matches(first.device->spec())) {
    conflict = cannot_colocate(
        *first.node, StrCat(node.name(), " is pinned to '", node.requested_device(), "' but ",
                            first.node->name(), ", which it is colocated with, is on ",
                            first.device->name(), "."));
  }
  if (conflict.ok() && !HasKernel(node, *first.device)) {
    // When no one in the group asked for a device, the placer chose it (a GPU, say), and a node
    // it cannot run goes where it can, as TensorFlow picks a device the whole group supports.
    bool pinned = !requested.empty();
    for (const ColocationTarget& target : targets)
      pinned |= !target.node->requested_device().empty();
    if (!pinned) return PlaceNode(node, devices, input_devices, options, out);
    std::string types;
    for (const std::string& t : node.op_def().KernelDeviceTypes())
      types += (types.empty() ? "" : ", ") + t;
    conflict =
        cannot_colocate(*first.node, StrCat(first.node->name(), " is on ", first.device->name(),
                                            ", which has no kernel for op ", node.type(),
                                            " (it has kernels for: ", types, ")."));
  }
  if (conflict.ok()) {
    *out = first.device;
    return Status::OK();
  }
  if (!options.allow_soft_placement) return conflict;
  // Soft placement keeps the group together where it can, else places the node on its own.
  if (HasKernel(node, *first.device)) {
    *out = first.device;
    return Status::OK();
  }
  return PlaceNode(node, devices, input_devices, options, out);
}

}  // namespace flowstone
