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

// The names of the nodes tf.colocate_with asked `node` to share a device with: the
// "loc:@<name>" entries of its `_class` attr, other than its own name.
std::vector<std::string> ColocationTargets(const Node& node);

// A node `node` is colocated with, and the device that node was placed on.
struct ColocationTarget {
  const Node* node;
  Device* device;
};

// Places `node` with its colocation targets (already placed). It goes to their device when its
// own pin allows that and the device has a kernel for it. Otherwise, with soft placement, it is
// placed as PlaceNode would place it; without, the InvalidArgumentError names both nodes
// ("Cannot colocate nodes {{colocation_node a}} and {{colocation_node b}}"), the devices and the
// fix.
Status PlaceColocatedNode(const Node& node, const std::vector<ColocationTarget>& targets,
                          const std::vector<Device*>& devices,
                          const std::vector<Device*>& input_devices,
                          const PlacementOptions& options, Device** out);

}  // namespace flowstone
