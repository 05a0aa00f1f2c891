// Winograd F(4x4, 3x3) convolution for float32 NHWC images: 3x3 filters, stride 1, dilation 1.
//
// Each 4x4 block of output pixels (a tile) is computed from the 6x6 block of input pixels under
// it as Y = A^T [(G g G^T) . (B^T d B)] A (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2015): 36 multiplications per tile and channel pair instead of 144. The
// transformed input and filter meet in 36 independent products [tiles x C] x [C x K], one per
// position of the 6x6 tile, which run as an AVX-512 register-blocked kernel on blocks of tiles
// small enough to stay in the L2 cache. The input gradient at stride 1 is such a forward
// convolution (TransformFilter's `flip`), and the filter gradient is the same algorithm
// transposed (BackpropFilter).
//
// Determinism: every output element is a fixed sequence of float operations (the tile's
// transforms, then a multiply-add chain over the input channels in order), whatever the block
// size or the thread that runs its block, so results are bit-identical at any thread count.
// They differ from the direct convolution's by the transforms' rounding (docs/COMPAT.md).
#pragma once

#include <cstdint>
#include <functional>

#include "flowstone/kernel.h"
#include "flowstone/status.h"

namespace flowstone::winograd {

// A 3x3, stride-1 convolution of NHWC images: output pixel (y, x) of channel k is the sum over
// taps (i, j) and input channels c of x[y - pad_top + i, x - pad_left + j, c] * filter[i, j, c, k],
// with zeros outside the input.
struct Conv3x3 {
  int64_t batch = 0;
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t pad_top = 0, pad_left = 0;
};

// When the convolution kernels use Winograd, from FLOWSTONE_CONV_WINOGRAD (read once): "0" never,
// "always" for every 3x3 stride-1 float32 NHWC convolution (for tests), otherwise where
// Worthwhile. Never on a CPU without AVX-512F.
enum class Mode { kOff, kAuto, kAlways };
Mode GetMode();

// Whether Winograd is worth it for `p` (the rule measured in docs/architecture/speed.md): enough
// channels for the products to run near the FMA peak, and enough tiles to amortize the filter
// transform.
bool Worthwhile(const Conv3x3& p);

// Whether the kernels run `p` through Winograd: GetMode() and, for kAuto, Worthwhile.
bool Use(const Conv3x3& p);

// Floats in a transformed filter of `in_c` x `out_c` channels.
int64_t TransformedFilterSize(int64_t in_c, int64_t out_c);

// u = the transform of a [3, 3, in_c, out_c] (HWIO) filter, TransformedFilterSize floats.
// When `flip` is set, the filter used is the input gradient's: g'[i, j, k, c] = g[2 - i, 2 - j,
// c, k], so that Conv2DBackpropInput at stride 1 runs as a forward convolution of the output
// gradient (in_c and out_c are then those of `filter` as stored). Requires GetMode() != kOff.
Status TransformFilter(KernelContext& ctx, const float* filter, int64_t in_c, int64_t out_c,
                       bool flip, float* u);

// Called after output rows [row, row + rows) of image `image` are written, on the thread that
// wrote them (for a fused bias and activation while the rows are in cache).
using RowsDone = std::function<void(int64_t image, int64_t row, int64_t rows)>;

// y = the convolution of x with the filter `u` transformed by TransformFilter (for in_c =
// p.in_c, out_c = p.out_c). Tiles are split over ctx's intra-op threads. Requires GetMode() !=
// kOff.
Status Forward(KernelContext& ctx, const Conv3x3& p, const float* x, const float* u, float* y,
               const RowsDone* rows_done);

// df = the filter gradient of `p`'s convolution of x, given dy (the gradient of its output):
// df[i, j, c, k] = the sum over images and output pixels (y, x) of x[y - pad_top + i,
// x - pad_left + j, c] * dy[y, x, k], as a [3, 3, in_c, out_c] (HWIO) filter. The same algorithm
// transposed: df = G^T [(A dy A^T) . (B^T d B)] G summed over tiles. The tiles are cut into
// chunks by the shapes alone, summed separately and then added in order, so results do not
// depend on the thread count. Requires GetMode() != kOff.
Status BackpropFilter(KernelContext& ctx, const Conv3x3& p, const float* x, const float* dy,
                      float* df);

}  // namespace flowstone::winograd
