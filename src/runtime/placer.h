// Placer: chooses the device each node runs on.
#pragma once

#include <string>
#include <vector>

#include "flowstone/device.h"
#include "flowstone/graph.h"

namespace flowstone {

struct PlacementOptions {
  bool allow_soft_placement = false;
  // Why there is no GPU, for messages ("no CUDA driver: libcuda.so.1 not found"); empty if
  // unknown or a GPU exists.
  std::string gpu_unavailable_reason;
};

// Picks a device for `node`. `input_devices` are the devices of the nodes producing its inputs
// (nullptr where unknown); a node reading a resource (a variable) is colocated with it.
Status PlaceNode(const Node& node, const std::vector<Device*>& devices,
                 const std::vector<Device*>& input_devices, const PlacementOptions& options,
                 Device** out);

}  // namespace flowstone
