// Shared by the resize ops (resize_ops.cc: bilinear and nearest neighbour; resize_cubic_ops.cc:
// bicubic and area): the geometry of a resize, read from the images and the size, as TF1
// computes it.
#pragma once

#include <cstdint>

#include "flowstone/kernel.h"

namespace flowstone {

struct ResizeGeometry {
  int64_t batch, in_height, in_width, channels, out_height, out_width;
  // float, as TensorFlow computes them, so that positions round as TF's do.
  float height_scale, width_scale;
};

inline float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

inline Status ReadResizeGeometry(KernelContext& ctx, ResizeGeometry* g, bool* half_pixel) {
  const Tensor& images = ctx.input(0);
  const Tensor& size = ctx.input(1);
  if (images.rank() != 4) {
    return errors::InvalidArgument("input must be 4-dimensional, got shape ",
                                   images.shape().ToString());
  }
  if (size.rank() != 1 || size.num_elements() != 2) {
    return errors::InvalidArgument("shape_t must be 1-dimensional and have 2 elements, got shape ",
                                   size.shape().ToString());
  }
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  *half_pixel = ctx.attrs().GetOr<bool>("half_pixel_centers", false);
  if (align_corners && *half_pixel) {
    return errors::InvalidArgument("If half_pixel_centers is True, align_corners must be False.");
  }
  g->batch = images.dim(0);
  g->in_height = images.dim(1);
  g->in_width = images.dim(2);
  g->channels = images.dim(3);
  g->out_height = size.ElementAsInt64(0);
  g->out_width = size.ElementAsInt64(1);
  if (g->out_height <= 0 || g->out_width <= 0) {
    return errors::InvalidArgument("output dimensions must be positive, got ", g->out_height,
                                   " and ", g->out_width);
  }
  if (g->out_height > (1 << 24) || g->out_width > (1 << 24)) {
    return errors::InvalidArgument("output dimensions are too large: ", g->out_height, " x ",
                                   g->out_width);
  }
  if (g->in_height == 0 || g->in_width == 0) {
    return errors::InvalidArgument("input image must be of non-zero size, got shape ",
                                   images.shape().ToString());
  }
  g->height_scale = ResizeScale(g->in_height, g->out_height, align_corners);
  g->width_scale = ResizeScale(g->in_width, g->out_width, align_corners);
  return Status::OK();
}

// The geometry of a resize's gradient: from the original image's height and width to the
// resized gradient's (grads [batch, out_height, out_width, channels]).
inline Status ReadGradGeometry(const char* op, const Tensor& grads, int64_t in_height,
                               int64_t in_width, bool align_corners, ResizeGeometry* g) {
  if (grads.rank() != 4) {
    return errors::InvalidArgument(op, ": grads must be 4-dimensional, got shape ",
                                   grads.shape().ToString());
  }
  if (in_height <= 0 || in_width <= 0) {
    return errors::InvalidArgument(op, ": the original image must be of non-zero size, got ",
                                   in_height, " x ", in_width);
  }
  if (grads.dim(1) > (1 << 24) || grads.dim(2) > (1 << 24) || in_height > (1 << 24) ||
      in_width > (1 << 24)) {
    return errors::InvalidArgument(op, ": image dimensions are too large: grads ",
                                   grads.shape().ToString(), ", original ", in_height, " x ",
                                   in_width);
  }
  *g = {grads.dim(0),
        in_height,
        in_width,
        grads.dim(3),
        grads.dim(1),
        grads.dim(2),
        ResizeScale(in_height, grads.dim(1), align_corners),
        ResizeScale(in_width, grads.dim(2), align_corners)};
  return Status::OK();
}

}  // namespace flowstone
