// Winograd F(4x4, 3x3) convolution (winograd_conv.h): the transforms and the 36 products, written
// with AVX-512 intrinsics in functions compiled for AVX-512F and chosen at run time.
#include "ops/nn/winograd_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace flowstone::winograd {
namespace {

constexpr int64_t kTile = 4;     // output pixels per tile side
constexpr int64_t kAlpha = 6;    // input pixels per tile side: kTile + 3 - 1
constexpr int64_t kPoints = 36;  // kAlpha * kAlpha products per tile and channel pair
constexpr int64_t kLanes = 16;   // floats per AVX-512 register

#define FS_WINO_TARGET __attribute__((target("avx512f,fma")))
#define FS_WINO_INLINE __attribute__((target("avx512f,fma"), always_inline)) inline

// The first n lanes (all when n >= 16).
inline __mmask16 LaneMask(int64_t n) {
  return n >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}

// w = B^T d for one row or column of a 6x6 input tile, with
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
FS_WINO_INLINE void InputTransform6(const __m512* d, __m512* w) {
  const __m512 two = _mm512_set1_ps(2.f), four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f);
  const __m512 sum12 = _mm512_add_ps(d[1], d[2]), diff12 = _mm512_sub_ps(d[1], d[2]);
  const __m512 diff31 = _mm512_sub_ps(d[3], d[1]), diff42 = _mm512_sub_ps(d[4], d[2]);
  w[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
  w[1] = _mm512_fnmadd_ps(four, sum12, _mm512_add_ps(d[3], d[4]));
  w[2] = _mm512_fmadd_ps(four, diff12, _mm512_sub_ps(d[4], d[3]));
  w[3] = _mm512_fmadd_ps(two, diff31, diff42);
  w[4] = _mm512_fnmadd_ps(two, diff31, diff42);
  w[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

// o = A^T m for one row or column of a 6x6 product tile, with
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
FS_WINO_INLINE void OutputTransform6(const __m512* m, __m512* o) {
  const __m512 two = _mm512_set1_ps(2.f), four = _mm512_set1_ps(4.f), eight = _mm512_set1_ps(8.f);
  const __m512 sum12 = _mm512_add_ps(m[1], m[2]), diff12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 sum34 = _mm512_add_ps(m[3], m[4]), diff34 = _mm512_sub_ps(m[3], m[4]);
  o[0] = _mm512_add_ps(_mm512_add_ps(m[0], sum12), sum34);
  o[1] = _mm512_fmadd_ps(two, diff34, diff12);
  o[2] = _mm512_fmadd_ps(four, sum34, sum12);
  o[3] = _mm512_fmadd_ps(eight, diff34, _mm512_add_ps(diff12, m[5]));
}

// r = G g for one row or column of a 3x3 filter, with
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
FS_WINO_INLINE void FilterTransform3(const __m512* g, __m512* r) {
  const __m512 quarter = _mm512_set1_ps(1.f / 4), minus_sixth = _mm512_set1_ps(-1.f / 6);
  const __m512 sixth = _mm512_set1_ps(1.f / 6), twelfth = _mm512_set1_ps(1.f / 12);
  const __m512 twenty_fourth = _mm512_set1_ps(1.f / 24);
  const __m512 sum02 = _mm512_add_ps(g[0], g[2]);
  const __m512 outer = _mm512_fmadd_ps(twenty_fourth, g[0], _mm512_mul_ps(sixth, g[2]));
  r[0] = _mm512_mul_ps(quarter, g[0]);
  r[1] = _mm512_mul_ps(minus_sixth, _mm512_add_ps(sum02, g[1]));
  r[2] = _mm512_mul_ps(minus_sixth, _mm512_sub_ps(sum02, g[1]));
  r[3] = _mm512_fmadd_ps(twelfth, g[1], outer);
  r[4] = _mm512_fnmadd_ps(twelfth, g[1], outer);
  r[5] = g[2];
}

// The filter gradient uses the same algorithm transposed: with the output gradient dy as the
// 4x4 "filter" of a tile, df = G^T [(A dy A^T) . (B^T d B)] G (the derivative of
// sum(y . dy) = sum over points of (A dy A^T) . (G g G^T) . (B^T d B) with respect to g).

// w = A g for one row or column of a 4x4 output-gradient tile (A = (A^T)^T, 6x4).
FS_WINO_INLINE void GradientTransform4(const __m512* g, __m512* w) {
  const __m512 two = _mm512_set1_ps(2.f), four = _mm512_set1_ps(4.f);
  const __m512 sum02 = _mm512_add_ps(g[0], g[2]), sum13 = _mm512_add_ps(g[1], g[3]);
  const __m512 even = _mm512_fmadd_ps(four, g[2], g[0]);  // g0 + 4 g2
  const __m512 odd = _mm512_fmadd_ps(four, g[3], g[1]);   // g1 + 4 g3
  w[0] = g[0];
  w[1] = _mm512_add_ps(sum02, sum13);
  w[2] = _mm512_sub_ps(sum02, sum13);
  w[3] = _mm512_fmadd_ps(two, odd, even);
  w[4] = _mm512_fnmadd_ps(two, odd, even);
  w[5] = g[3];
}

// o = G^T m for one row or column of a 6x6 product tile (3 filter taps).
FS_WINO_INLINE void FilterGradientTransform6(const __m512* m, __m512* o) {
  const __m512 quarter = _mm512_set1_ps(1.f / 4), sixth = _mm512_set1_ps(1.f / 6);
  const __m512 minus_sixth = _mm512_set1_ps(-1.f / 6), twelfth = _mm512_set1_ps(1.f / 12);
  const __m512 twenty_fourth = _mm512_set1_ps(1.f / 24);
  const __m512 sum12 = _mm512_add_ps(m[1], m[2]), diff21 = _mm512_sub_ps(m[2], m[1]);
  const __m512 sum34 = _mm512_add_ps(m[3], m[4]), diff34 = _mm512_sub_ps(m[3], m[4]);
  o[0] = _mm512_fmadd_ps(quarter, m[0],
                         _mm512_fmadd_ps(minus_sixth, sum12, _mm512_mul_ps(twenty_fourth, sum34)));
  o[1] = _mm512_fmadd_ps(sixth, diff21, _mm512_mul_ps(twelfth, diff34));
  o[2] = _mm512_fmadd_ps(minus_sixth, sum12, _mm512_fmadd_ps(sixth, sum34, m[5]));
}

// df[((i * 3 + j) * C + c) * K + k] from the 36 points of m[(p * C + c) * K + k], for input
// channels [c_begin, c_end).
FS_WINO_TARGET void TransformFilterGradientRange(const float* m, int64_t C, int64_t K,
                                                 int64_t c_begin, int64_t c_end, float* df) {
  for (int64_t c = c_begin; c < c_end; ++c) {
    for (int64_t k = 0; k < K; k += kLanes) {
      const __mmask16 mask = LaneMask(K - k);
      // Rows first (M G), then columns (G^T (M G)).
      __m512 half[kAlpha][3];
      for (int a = 0; a < kAlpha; ++a) {
        __m512 row[kAlpha];
        for (int b = 0; b < kAlpha; ++b) {
          row[b] = _mm512_maskz_loadu_ps(mask, m + ((a * kAlpha + b) * C + c) * K + k);
        }
        FilterGradientTransform6(row, half[a]);
      }
      for (int j = 0; j < 3; ++j) {
        __m512 column[kAlpha], tap[3];
        for (int a = 0; a < kAlpha; ++a) column[a] = half[a][j];
        FilterGradientTransform6(column, tap);
        for (int i = 0; i < 3; ++i) {
          _mm512_mask_storeu_ps(df + ((i * 3 + j) * C + c) * K + k, mask, tap[i]);
        }
      }
    }
  }
}

// u[(p * C + c) * K + k] for the 36 points p of the transform of filter g[(i * 3 + j) * C * K +
// c * K + k], for input channels [c_begin, c_end).
FS_WINO_TARGET void TransformFilterRange(const float* g, int64_t C, int64_t K, int64_t c_begin,
                                         int64_t c_end, float* u) {
  for (int64_t c = c_begin; c < c_end; ++c) {
    for (int64_t k = 0; k < K; k += kLanes) {
      const __mmask16 mask = LaneMask(K - k);
      __m512 taps[3][3];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          taps[i][j] = _mm512_maskz_loadu_ps(mask, g + (i * 3 + j) * C * K + c * K + k);
        }
      }
      // Columns first (G g), then rows ((G g) G^T).
      __m512 half[kAlpha][3];
      for (int j = 0; j < 3; ++j) {
        const __m512 column[3] = {taps[0][j], taps[1][j], taps[2][j]};
        __m512 out[kAlpha];
        FilterTransform3(column, out);
        for (int a = 0; a < kAlpha; ++a) half[a][j] = out[a];
      }
      for (int a = 0; a < kAlpha; ++a) {
        __m512 out[kAlpha];
        FilterTransform3(half[a], out);
        for (int b = 0; b < kAlpha; ++b) {
          _mm512_mask_storeu_ps(u + ((a * kAlpha + b) * C + c) * K + k, mask, out[b]);
        }
      }
    }
  }
}

// A block of tiles: tile rows [first_row, first_row + rows) of the batch's tile rows (image n's
// tile row ty is n * tiles_h + ty), each tiles_w tiles.
struct Block {
  int64_t first_row, rows;
};

struct Geometry {
  int64_t tiles_h, tiles_w;
  int64_t tiles_per_block_row;  // tile rows per block
  int64_t blocks;
  int64_t tile_rows;  // of the whole batch

  Block BlockAt(int64_t b) const {
    const int64_t first = b * tiles_per_block_row;
    return Block{first, std::min(tiles_per_block_row, tile_rows - first)};
  }
};

// v[(p * T + t) * C + c] for the 36 points p of each tile t of the block (T tiles).
FS_WINO_TARGET void TransformInputBlock(const Conv3x3& p, const Geometry& geo, const Block& block,
                                        const float* x, float* v) {
  const int64_t C = p.in_c;
  const int64_t T = block.rows * geo.tiles_w;
  for (int64_t r = 0; r < block.rows; ++r) {
    const int64_t n = (block.first_row + r) / geo.tiles_h;
    const int64_t ty = (block.first_row + r) % geo.tiles_h;
    const int64_t y0 = ty * kTile - p.pad_top;
    for (int64_t tx = 0; tx < geo.tiles_w; ++tx) {
      const int64_t t = r * geo.tiles_w + tx;
      const int64_t x0 = tx * kTile - p.pad_left;
      // Input pixels of the tile, or null where the tile hangs over the input's edge.
      const float* pixel[kAlpha][kAlpha];
      for (int i = 0; i < kAlpha; ++i) {
        for (int j = 0; j < kAlpha; ++j) {
          const int64_t iy = y0 + i, ix = x0 + j;
          const bool inside = iy >= 0 && iy < p.in_h && ix >= 0 && ix < p.in_w;
          pixel[i][j] = inside ? x + ((n * p.in_h + iy) * p.in_w + ix) * C : nullptr;
        }
      }
      for (int64_t c = 0; c < C; c += kLanes) {
        const __mmask16 mask = LaneMask(C - c);
        // Rows first (d B), then columns (B^T (d B)).
        __m512 half[kAlpha][kAlpha];
        for (int i = 0; i < kAlpha; ++i) {
          __m512 row[kAlpha];
          for (int j = 0; j < kAlpha; ++j) {
            row[j] = pixel[i][j] != nullptr ? _mm512_maskz_loadu_ps(mask, pixel[i][j] + c)
                                            : _mm512_setzero_ps();
          }
          InputTransform6(row, half[i]);
        }
        for (int b = 0; b < kAlpha; ++b) {
          __m512 column[kAlpha], out[kAlpha];
          for (int i = 0; i < kAlpha; ++i) column[i] = half[i][b];
          InputTransform6(column, out);
          for (int a = 0; a < kAlpha; ++a) {
            _mm512_mask_storeu_ps(v + ((a * kAlpha + b) * T + t) * C + c, mask, out[a]);
          }
        }
      }
    }
  }
}

// m[r, :] (+)= sum over c in order of v[r * v_row + c * v_step] * u[c * ldu + :] for R rows and
// NV * 16 columns (the last vector masked by `last`), starting from zero or, when kAccumulate,
// from m: one multiply-add chain per element, so the result does not depend on R or NV.
template <int R, int NV, bool kAccumulate>
FS_WINO_TARGET void MicroKernel(int64_t depth, const float* v, int64_t v_row, int64_t v_step,
                                const float* u, int64_t ldu, float* m, int64_t ldm,
                                __mmask16 last) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int n = 0; n < NV; ++n) {
      if constexpr (kAccumulate) {
        acc[r][n] = _mm512_maskz_loadu_ps(n + 1 < NV ? 0xFFFF : last, m + r * ldm + n * kLanes);
      } else {
        acc[r][n] = _mm512_setzero_ps();
      }
    }
  }
  for (int64_t c = 0; c < depth; ++c) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int n = 0; n < NV; ++n) {
      b[n] = n + 1 < NV ? _mm512_loadu_ps(u + c * ldu + n * kLanes)
                        : _mm512_maskz_loadu_ps(last, u + c * ldu + n * kLanes);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(v[r * v_row + c * v_step]);
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) acc[r][n] = _mm512_fmadd_ps(a, b[n], acc[r][n]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int n = 0; n < NV; ++n) {
      if (n + 1 < NV) {
        _mm512_storeu_ps(m + r * ldm + n * kLanes, acc[r][n]);
      } else {
        _mm512_mask_storeu_ps(m + r * ldm + n * kLanes, last, acc[r][n]);
      }
    }
  }
}

// Rows and 16-float column vectors of the micro-kernel: 6 x 4 uses 24 of the 32 registers for
// accumulators, leaving room for the 4 filter vectors and a broadcast.
constexpr int kRows = 6;
constexpr int kVectors = 4;

using MicroFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*,
                         int64_t, __mmask16);

template <int R, bool kAccumulate>
constexpr MicroFn MicroFor(int nv) {
  return nv == 1   ? MicroKernel<R, 1, kAccumulate>
         : nv == 2 ? MicroKernel<R, 2, kAccumulate>
         : nv == 3 ? MicroKernel<R, 3, kAccumulate>
                   : MicroKernel<R, 4, kAccumulate>;
}

template <bool kAccumulate>
MicroFn Micro(int rows, int nv) {
  switch (rows) {
    case 1:
      return MicroFor<1, kAccumulate>(nv);
    case 2:
      return MicroFor<2, kAccumulate>(nv);
    case 3:
      return MicroFor<3, kAccumulate>(nv);
    case 4:
      return MicroFor<4, kAccumulate>(nv);
    case 5:
      return MicroFor<5, kAccumulate>(nv);
    default:
      return MicroFor<6, kAccumulate>(nv);
  }
}

// For each of the 36 points: the product of a rows x depth matrix (element (r, d) at
// v[r * v_row + d * v_step]) and a depth x K matrix (row-major) into a rows x K matrix (row-major),
// written or, when kAccumulate, added to. The points' matrices are v_point, u_point and m_point
// floats apart.
template <bool kAccumulate>
void MultiplyPoints(int64_t rows, int64_t depth, int64_t K, const float* v, int64_t v_point,
                    int64_t v_row, int64_t v_step, const float* u, int64_t u_point, float* m,
                    int64_t m_point) {
  for (int64_t point = 0; point < kPoints; ++point) {
    const float* vp = v + point * v_point;
    const float* up = u + point * u_point;
    float* mp = m + point * m_point;
    for (int64_t k = 0; k < K; k += kVectors * kLanes) {
      const int64_t cols = std::min<int64_t>(kVectors * kLanes, K - k);
      const int nv = static_cast<int>((cols + kLanes - 1) / kLanes);
      const __mmask16 last = LaneMask(cols - (nv - 1) * kLanes);
      for (int64_t r = 0; r < rows; r += kRows) {
        const int n = static_cast<int>(std::min<int64_t>(kRows, rows - r));
        Micro<kAccumulate>(n, nv)(depth, vp + r * v_row, v_row, v_step, up + k, K, mp + r * K + k,
                                  K, last);
      }
    }
  }
}

// Forward: m[(p * T + t) * K + k] = sum over c of v[(p * T + t) * C + c] * u[(p * C + c) * K + k].
void MultiplyBlock(int64_t T, int64_t C, int64_t K, const float* v, const float* u, float* m) {
  MultiplyPoints<false>(T, C, K, v, T * C, C, 1, u, C * K, m, T * K);
}

// Filter gradient: m[(p * C + c) * K + k] += sum over t of v[(p * T + t) * C + c] *
// w[(p * T + t) * K + k], the block's tiles added in order.
void AccumulateBlock(int64_t T, int64_t C, int64_t K, const float* v, const float* w, float* m) {
  MultiplyPoints<true>(C, T, K, v, T * C, 1, C, w, T * K, m, C * K);
}

// The output pixels of the block's tiles from their products m.
FS_WINO_TARGET void TransformOutputBlock(const Conv3x3& p, const Geometry& geo, const Block& block,
                                         const float* m, float* y) {
  const int64_t K = p.out_c;
  const int64_t T = block.rows * geo.tiles_w;
  for (int64_t r = 0; r < block.rows; ++r) {
    const int64_t n = (block.first_row + r) / geo.tiles_h;
    const int64_t ty = (block.first_row + r) % geo.tiles_h;
    const int64_t rows = std::min(kTile, p.out_h - ty * kTile);
    for (int64_t tx = 0; tx < geo.tiles_w; ++tx) {
      const int64_t t = r * geo.tiles_w + tx;
      const int64_t cols = std::min(kTile, p.out_w - tx * kTile);
      float* out = y + ((n * p.out_h + ty * kTile) * p.out_w + tx * kTile) * K;
      for (int64_t k = 0; k < K; k += kLanes) {
        const __mmask16 mask = LaneMask(K - k);
        // Rows first (m A), then columns (A^T (m A)).
        __m512 half[kAlpha][kTile];
        for (int i = 0; i < kAlpha; ++i) {
          __m512 row[kAlpha];
          for (int j = 0; j < kAlpha; ++j) {
            row[j] = _mm512_maskz_loadu_ps(mask, m + ((i * kAlpha + j) * T + t) * K + k);
          }
          OutputTransform6(row, half[i]);
        }
        for (int64_t b = 0; b < cols; ++b) {
          __m512 column[kAlpha], pixel[kTile];
          for (int i = 0; i < kAlpha; ++i) column[i] = half[i][b];
          OutputTransform6(column, pixel);
          for (int64_t a = 0; a < rows; ++a) {
            _mm512_mask_storeu_ps(out + (a * p.out_w + b) * K + k, mask, pixel[a]);
          }
        }
      }
    }
  }
}

// w[(p * T + t) * K + k] = A dy A^T for the output-gradient tile t of the block (zero beyond
// the output's edge).
FS_WINO_TARGET void TransformGradientBlock(const Conv3x3& p, const Geometry& geo,
                                           const Block& block, const float* dy, float* w) {
  const int64_t K = p.out_c;
  const int64_t T = block.rows * geo.tiles_w;
  for (int64_t r = 0; r < block.rows; ++r) {
    const int64_t n = (block.first_row + r) / geo.tiles_h;
    const int64_t ty = (block.first_row + r) % geo.tiles_h;
    const int64_t rows = std::min(kTile, p.out_h - ty * kTile);
    for (int64_t tx = 0; tx < geo.tiles_w; ++tx) {
      const int64_t t = r * geo.tiles_w + tx;
      const int64_t cols = std::min(kTile, p.out_w - tx * kTile);
      const float* in = dy + ((n * p.out_h + ty * kTile) * p.out_w + tx * kTile) * K;
      for (int64_t k = 0; k < K; k += kLanes) {
        const __mmask16 mask = LaneMask(K - k);
        // Rows first (dy A^T), then columns (A (dy A^T)).
        __m512 half[kTile][kAlpha];
        for (int64_t i = 0; i < kTile; ++i) {
          __m512 row[kTile];
          for (int64_t j = 0; j < kTile; ++j) {
            row[j] = i < rows && j < cols
                         ? _mm512_maskz_loadu_ps(mask, in + (i * p.out_w + j) * K + k)
                         : _mm512_setzero_ps();
          }
          GradientTransform4(row, half[i]);
        }
        for (int b = 0; b < kAlpha; ++b) {
          __m512 column[kTile], out[kAlpha];
          for (int i = 0; i < kTile; ++i) column[i] = half[i][b];
          GradientTransform4(column, out);
          for (int a = 0; a < kAlpha; ++a) {
            _mm512_mask_storeu_ps(w + ((a * kAlpha + b) * T + t) * K + k, mask, out[a]);
          }
        }
      }
    }
  }
}

// Floats of L2 cache a block's transformed input and products may fill (Zen 4 and recent Intel
// server cores have 1-2 MiB of L2 per core); a block has at least kMinBlockTiles tiles so that
// the micro-kernel's rows stay full. Measured on the tutorial CNN's shapes (one thread): 12-24
// tiles per block ran 5-15% faster than 96-192.
constexpr int64_t kBlockFloats = int64_t{1} << 16;
constexpr int64_t kMinBlockTiles = 12;
// Every block reads the whole transformed filter. One larger than this (4 MiB: beyond a core's
// share of L3) streams from memory once per block, so its blocks hold at least
// kLargeFilterBlockTiles tiles: (32,7,7,512)x(3,3,512,512) took 70 ms at 12 tiles per block,
// 33 ms at 128 (direct: 62 ms).
constexpr int64_t kLargeFilterFloats = int64_t{1} << 20;
constexpr int64_t kLargeFilterBlockTiles = 128;

// The filter gradient's blocks read and write the whole transformed gradient (36 x C x K) once,
// so they hold at least this many tiles to keep that traffic small against the products.
constexpr int64_t kGradientBlockTiles = 48;

// The filter gradient's tiles are cut into at most this many chunks of whole blocks (by the
// shapes alone), each summed into a partial gradient of its own; the partials are then added
// in chunk order.
constexpr int64_t kGradientChunks = 8;

Geometry GeometryOf(const Conv3x3& p, int64_t min_tiles = kMinBlockTiles) {
  Geometry geo;
  geo.tiles_h = (p.out_h + kTile - 1) / kTile;
  geo.tiles_w = (p.out_w + kTile - 1) / kTile;
  int64_t tiles = std::max(kBlockFloats / (kPoints * (p.in_c + p.out_c)), min_tiles);
  if (TransformedFilterSize(p.in_c, p.out_c) > kLargeFilterFloats) {
    tiles = std::max(tiles, kLargeFilterBlockTiles);
  }
  geo.tiles_per_block_row = std::max<int64_t>(1, (tiles + geo.tiles_w / 2) / geo.tiles_w);
  geo.tile_rows = p.batch * geo.tiles_h;
  geo.blocks = (geo.tile_rows + geo.tiles_per_block_row - 1) / geo.tiles_per_block_row;
  return geo;
}

// ctx.ParallelFor over [0, n) whose shards each get scratch of `floats` floats: fn(begin, end,
// scratch). A shard whose scratch cannot be allocated runs nothing, and the first such error is
// returned.
template <typename Fn>
Status ParallelForWithScratch(KernelContext& ctx, int64_t n, int64_t cost, int64_t floats, Fn fn) {
  std::mutex mu;
  Status status;
  ctx.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
    Tensor scratch;
    Status s = ctx.AllocateTemp(DType::kFloat32, TensorShape{floats}, &scratch);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) status = s;
      return;
    }
    fn(begin, end, scratch.data<float>());
  });
  return status;
}

}  // namespace

Mode GetMode() {
  static const Mode mode = [] {
    if (!__builtin_cpu_supports("avx512f")) return Mode::kOff;
    const char* value = std::getenv("FLOWSTONE_CONV_WINOGRAD");
    if (value == nullptr) return Mode::kAuto;
    if (std::strcmp(value, "0") == 0) return Mode::kOff;
    return std::strcmp(value, "always") == 0 ? Mode::kAlways : Mode::kAuto;
  }();
  return mode;
}

bool Worthwhile(const Conv3x3& p) {
  const int64_t tiles = p.batch * ((p.out_h + kTile - 1) / kTile) * ((p.out_w + kTile - 1) / kTile);
  return p.in_c >= 16 && p.out_c >= 16 && tiles >= 32;
}

bool Use(const Conv3x3& p) {
  const Mode mode = GetMode();
  return mode == Mode::kAlways || (mode == Mode::kAuto && Worthwhile(p));
}

int64_t TransformedFilterSize(int64_t in_c, int64_t out_c) { return kPoints * in_c * out_c; }

Status TransformFilter(KernelContext& ctx, const float* filter, int64_t in_c, int64_t out_c,
                       bool flip, float* u) {
  const float* g = filter;
  int64_t C = in_c, K = out_c;
  Tensor flipped;
  if (flip) {
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, TensorShape{9 * in_c * out_c}, &flipped));
    float* f = flipped.data<float>();
    for (int64_t tap = 0; tap < 9; ++tap) {
      const float* src = filter + (8 - tap) * in_c * out_c;  // tap (2 - i, 2 - j)
      for (int64_t c = 0; c < in_c; ++c) {
        for (int64_t k = 0; k < out_c; ++k) f[(tap * out_c + k) * in_c + c] = src[c * out_c + k];
      }
    }
    g = f;
    std::swap(C, K);
  }
  ctx.ParallelFor(C, 9 * K * 40, [&](int64_t begin, int64_t end) {
    TransformFilterRange(g, C, K, begin, end, u);
  });
  return Status::OK();
}

Status Forward(KernelContext& ctx, const Conv3x3& p, const float* x, const float* u, float* y,
               const RowsDone* rows_done) {
  const Geometry geo = GeometryOf(p);
  const int64_t max_tiles = geo.tiles_per_block_row * geo.tiles_w;
  // Rough cycles per block: the products at ~16 multiply-adds per cycle.
  const int64_t block_cost = max_tiles * kPoints * p.in_c * p.out_c / 16;
  const int64_t scratch = kPoints * max_tiles * (p.in_c + p.out_c);
  auto run_blocks = [&](int64_t begin, int64_t end, float* v) {
    float* m = v + kPoints * max_tiles * p.in_c;
    for (int64_t b = begin; b < end; ++b) {
      if (ctx.cancelled()) return;  // the run discards the outputs
      const Block block = geo.BlockAt(b);
      const int64_t tiles = block.rows * geo.tiles_w;
      TransformInputBlock(p, geo, block, x, v);
      MultiplyBlock(tiles, p.in_c, p.out_c, v, u, m);
      TransformOutputBlock(p, geo, block, m, y);
      if (rows_done != nullptr) {
        for (int64_t r = 0; r < block.rows; ++r) {
          const int64_t n = (block.first_row + r) / geo.tiles_h;
          const int64_t row = (block.first_row + r) % geo.tiles_h * kTile;
          (*rows_done)(n, row, std::min(kTile, p.out_h - row));
        }
      }
    }
  };
  FS_RETURN_IF_ERROR(ParallelForWithScratch(ctx, geo.blocks, block_cost, scratch, run_blocks));
  return ctx.CheckCancelled();
}

Status BackpropFilter(KernelContext& ctx, const Conv3x3& p, const float* x, const float* dy,
                      float* df) {
  const Geometry geo = GeometryOf(p, kGradientBlockTiles);
  const int64_t max_tiles = geo.tiles_per_block_row * geo.tiles_w;
  const int64_t blocks_per_chunk = (geo.blocks + kGradientChunks - 1) / kGradientChunks;
  const int64_t chunks = (geo.blocks + blocks_per_chunk - 1) / blocks_per_chunk;
  const int64_t size = kPoints * p.in_c * p.out_c;
  Tensor partials;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, TensorShape{chunks, size}, &partials));
  float* sums = partials.data<float>();
  const int64_t chunk_cost = blocks_per_chunk * max_tiles * kPoints * p.in_c * p.out_c / 16;
  const int64_t scratch = kPoints * max_tiles * (p.in_c + p.out_c);
  auto run_chunks = [&](int64_t begin, int64_t end, float* v) {
    float* w = v + kPoints * max_tiles * p.in_c;
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      float* m = sums + chunk * size;
      std::fill(m, m + size, 0.f);
      const int64_t last = std::min(geo.blocks, (chunk + 1) * blocks_per_chunk);
      for (int64_t b = chunk * blocks_per_chunk; b < last; ++b) {
        if (ctx.cancelled()) return;  // the run discards the outputs
        const Block block = geo.BlockAt(b);
        TransformInputBlock(p, geo, block, x, v);
        TransformGradientBlock(p, geo, block, dy, w);
        AccumulateBlock(block.rows * geo.tiles_w, p.in_c, p.out_c, v, w, m);
      }
    }
  };
  FS_RETURN_IF_ERROR(ParallelForWithScratch(ctx, chunks, chunk_cost, scratch, run_chunks));
  FS_RETURN_IF_ERROR(ctx.CheckCancelled());
  // The chunks' partial sums, added in chunk order for every element whatever thread adds it.
  ctx.ParallelFor(size, chunks, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      const float* partial = sums + chunk * size;
      for (int64_t e = begin; e < end; ++e) sums[e] += partial[e];
    }
  });
  ctx.ParallelFor(p.in_c, 9 * p.out_c * 40, [&](int64_t begin, int64_t end) {
    TransformFilterGradientRange(sums, p.in_c, p.out_c, begin, end, df);
  });
  return Status::OK();
}

}  // namespace flowstone::winograd
