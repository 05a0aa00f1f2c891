#include "placer.h"

#include <algorithm>

namespace flowstone {
namespace {

bool HasKernel(const Node& node, const Device& device) {
  const OpDef& op = node.op_def();
  DType dtype = DType::kInvalid;
  for (const AttrDef& attr : op.attrs) {
    if (attr.type == AttrType::kType) {
      dtype = node.attrs().GetOr<DType>(attr.name, DType::kInvalid);
      break;
    }
  }
  return op.FindKernel(device.type(), dtype) != nullptr;
}

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
        "}} was explicitly assigned to ", node.requested_device(),
        " but available devices are ", DeviceList(devices),
        ". Make sure the device specification refers to a valid device.", gpu_note,
        " To fix: change or remove the tf.device(...) pin, or create the session with "
        "tf.ConfigProto(allow_soft_placement=True) to fall back to an available device.");
  }
  return errors::InvalidArgument(
      "Cannot assign a device for operation ", name, ": Could not satisfy explicit device "
      "specification '", node.requested_device(), "' because no supported kernel for ",
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

}  // namespace flowstone
