// A cache-blocked GEMM in portable C++ (the classic Goto/BLIS structure):
//
//   * B is packed once into panels of kNR columns, kKC rows deep, so the micro-kernel reads it
//     contiguously; transposition is absorbed by the packing.
//   * C is cut into tiles of kMC rows x kNC columns, the units of parallel work. A tile packs its
//     rows of A into panels of kMR rows per kKC block and runs the micro-kernel over every
//     (A panel, B panel) pair.
//   * The micro-kernel keeps a kMR x kNR block of C in local accumulators and walks k with one
//     broadcast of A and one contiguous row of B per step: plain loops GCC vectorizes without
//     reassociating any sum, so results do not depend on the vector width.
//
// The tile routine is compiled twice (AVX2+FMA and baseline x86-64) and picked at load time, so
// one binary runs everywhere and is fast on current CPUs. It serves float64 and the integers.
//
// float32 products go to oneDNN's sgemm, whose JIT kernels use the widest vector units of the CPU
// (AVX-512 where present): 2-2.5x the kernel above on an AVX-512 machine for the shapes of a
// small MLP (FLOWSTONE_ONEDNN=0 turns it off, as for the other oneDNN kernels). See OneDnnGemm for
// how its threads fit with the intra-op pool.
#include "ops/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/multiversion.h"
#include "ops/onednn_util.h"

namespace flowstone {
namespace {

#define FS_GEMM_MULTIVERSION FS_MULTIVERSION

// Rows of C per micro-kernel call. With kNR below, 4 rows of 64 bytes are 8 AVX2 registers of
// accumulators: enough independent FMA chains to hide their latency, and few enough that GCC
// keeps all of them in registers (6 rows, BLIS's choice for hand-written kernels, made it spill
// and run at half the speed).
constexpr int64_t kMR = 4;
// Columns of C per micro-kernel call: 64 bytes of one row.
template <typename T>
constexpr int64_t kNR = 64 / sizeof(T);
// Depth of one packed block: a kKC x kNR panel of B (16 KiB of floats) stays in L1 while it
// meets every row panel of the packed A block, which (kMC x kKC) stays in L2.
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 72;   // a multiple of kMR
constexpr int64_t kNC = 256;  // a multiple of kNR
// Below this many multiply-adds, packing costs more than it saves.
constexpr int64_t kSmallProduct = 16 * 16 * 16;

// Element (row, col) of op(X) for a row-major X that may be stored transposed.
template <typename T>
struct Operand {
  const T* data;
  int64_t ld;
  bool transposed;
  T operator()(int64_t row, int64_t col) const {
    return transposed ? data[col * ld + row] : data[row * ld + col];
  }
};

int64_t RoundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// Direct loops for tiny products (typical of per-example math in small models).
template <typename T>
void SmallGemm(const Operand<T>& a, const Operand<T>& b, int64_t m, int64_t n, int64_t k, T* c,
               int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * ldc;
    std::fill(crow, crow + n, T(0));
    for (int64_t p = 0; p < k; ++p) {
      T aip = a(i, p);
      for (int64_t j = 0; j < n; ++j) crow[j] += aip * b(p, j);
    }
  }
}

// Packs rows [i0, i0 + rows) x depth [p0, p0 + kb) of op(A) into panels of kMR rows: panel q
// holds, for each depth index, kMR consecutive row values (zero past the last row).
template <typename T>
void PackA(const Operand<T>& a, int64_t i0, int64_t rows, int64_t p0, int64_t kb, T* out) {
  for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
    int64_t panel_rows = std::min(kMR, rows - r0);
    T* panel = out + r0 * kb;
    if (panel_rows < kMR) std::fill(panel, panel + kb * kMR, T(0));
    if (a.transposed) {
      for (int64_t p = 0; p < kb; ++p) {
        const T* src = a.data + (p0 + p) * a.ld + i0 + r0;
        for (int64_t r = 0; r < panel_rows; ++r) panel[p * kMR + r] = src[r];
      }
    } else {
      for (int64_t r = 0; r < panel_rows; ++r) {
        const T* src = a.data + (i0 + r0 + r) * a.ld + p0;
        for (int64_t p = 0; p < kb; ++p) panel[p * kMR + r] = src[p];
      }
    }
  }
}

// Packs columns [j0, j0 + kNR) x depth [p0, p0 + kb) of op(B) into one panel: for each depth
// index, kNR consecutive column values (zero past the last column n).
template <typename T>
void PackBPanel(const Operand<T>& b, int64_t n, int64_t j0, int64_t p0, int64_t kb, T* panel) {
  constexpr int64_t nr = kNR<T>;
  int64_t cols = std::min(nr, n - j0);
  if (cols < nr) std::fill(panel, panel + kb * nr, T(0));
  if (b.transposed) {
    for (int64_t col = 0; col < cols; ++col) {
      const T* src = b.data + (j0 + col) * b.ld + p0;
      for (int64_t p = 0; p < kb; ++p) panel[p * nr + col] = src[p];
    }
  } else {
    for (int64_t p = 0; p < kb; ++p) {
      const T* src = b.data + (p0 + p) * b.ld + j0;
      std::memcpy(panel + p * nr, src, cols * sizeof(T));
    }
  }
}

// C[rows x cols] (= or +=) A panel (kb x kMR) * B panel (kb x kNR).
template <typename T>
[[gnu::always_inline]] inline void MicroKernel(int64_t kb, const T* ap, const T* bp, T* c,
                                               int64_t ldc, int64_t rows, int64_t cols,
                                               bool accumulate) {
  constexpr int64_t nr = kNR<T>;
  T acc[kMR][nr] = {};
  for (int64_t p = 0; p < kb; ++p) {
    const T* brow = bp + p * nr;
    const T* acol = ap + p * kMR;
    // Fully unrolled, both loops become kMR * kNR / (vector width) FMAs on registers; left to
    // its own heuristics GCC vectorizes across rows instead, with shuffles, many times slower.
#pragma GCC unroll 4
    for (int64_t r = 0; r < kMR; ++r) {
#pragma GCC unroll 16
      for (int64_t j = 0; j < nr; ++j) acc[r][j] += acol[r] * brow[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* crow = c + r * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < cols; ++j) crow[j] += acc[r][j];
    } else {
      for (int64_t j = 0; j < cols; ++j) crow[j] = acc[r][j];
    }
  }
}

// One depth block of one C tile: every A panel of `a_packed` (rows x kb) against the B panels
// starting at `b_panels` covering `cols` columns.
template <typename T>
FS_GEMM_MULTIVERSION void TileBlock(const T* a_packed, const T* b_panels, int64_t kb, int64_t rows,
                                    int64_t cols, T* c, int64_t ldc, bool accumulate) {
  constexpr int64_t nr = kNR<T>;
  for (int64_t j0 = 0; j0 < cols; j0 += nr) {
    const T* bp = b_panels + (j0 / nr) * kb * nr;
    for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
      MicroKernel(kb, a_packed + r0 * kb, bp, c + r0 * ldc + j0, ldc, std::min(kMR, rows - r0),
                  std::min(nr, cols - j0), accumulate);
    }
  }
}

template <typename T>
Status BlockedGemm(KernelContext& ctx, const Operand<T>& a, const Operand<T>& b, int64_t m,
                   int64_t n, int64_t k, T* c, int64_t ldc) {
  constexpr int64_t nr = kNR<T>;
  const int64_t n_padded = RoundUp(n, nr);
  const int64_t panels = n_padded / nr;
  const int64_t depth_blocks = (k + kKC - 1) / kKC;

  // Packed B: depth block d (rows [d*kKC, ...)) starts at d*kKC*n_padded and holds its panels
  // one after another.
  Tensor packed_b;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(
      DType::kUInt8, TensorShape{k * n_padded * static_cast<int64_t>(sizeof(T))}, &packed_b));
  T* bpack = static_cast<T*>(packed_b.raw_data());
  ctx.ParallelFor(depth_blocks * panels, kKC * nr, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t d = u / panels, q = u % panels;
      int64_t p0 = d * kKC, kb = std::min(kKC, k - p0);
      PackBPanel(b, n, q * nr, p0, kb, bpack + p0 * n_padded + q * kb * nr);
    }
  });

  const int64_t row_tiles = (m + kMC - 1) / kMC;
  const int64_t col_tiles = (n + kNC - 1) / kNC;
  ctx.ParallelFor(row_tiles * col_tiles, 2 * kMC * kNC * k, [&](int64_t begin, int64_t end) {
    std::vector<T> apack(kMC * std::min(kKC, k));
    for (int64_t u = begin; u < end; ++u) {
      if (ctx.cancelled()) return;  // the run discards C
      int64_t i0 = (u / col_tiles) * kMC, j0 = (u % col_tiles) * kNC;
      int64_t rows = std::min(kMC, m - i0), cols = std::min(kNC, n - j0);
      for (int64_t p0 = 0; p0 < k; p0 += kKC) {
        int64_t kb = std::min(kKC, k - p0);
        PackA(a, i0, rows, p0, kb, apack.data());
        TileBlock(apack.data(), bpack + p0 * n_padded + (j0 / nr) * kb * nr, kb, rows, cols,
                  c + i0 * ldc + j0, ldc, p0 > 0);
      }
    }
  });
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Transposition

// Square blocks of kTransposeBlock x kTransposeBlock elements (16 KiB of floats): a block's source
// and destination rows stay in L1 while it is copied.
constexpr int64_t kTransposeBlock = 64;

template <typename T>
void TransposeBlock(const T* src, int64_t lds, T* dst, int64_t ldd, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
  }
}

}  // namespace

template <typename T>
void TransposeMatrix(KernelContext& ctx, int64_t rows, int64_t cols, const T* src, int64_t lds,
                     T* dst, int64_t ldd) {
  const int64_t bands = (rows + kTransposeBlock - 1) / kTransposeBlock;
  ctx.ParallelFor(bands, kTransposeBlock * cols * 2, [&](int64_t begin, int64_t end) {
    for (int64_t band = begin; band < end; ++band) {
      const int64_t r0 = band * kTransposeBlock, h = std::min(kTransposeBlock, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += kTransposeBlock) {
        TransposeBlock(src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd, h,
                       std::min(kTransposeBlock, cols - c0));
      }
    }
  });
}

template void TransposeMatrix<float>(KernelContext&, int64_t, int64_t, const float*, int64_t,
                                     float*, int64_t);
template void TransposeMatrix<double>(KernelContext&, int64_t, int64_t, const double*, int64_t,
                                      double*, int64_t);

namespace {

// ---------------------------------------------------------------------------------------------
// float32 through oneDNN
//
// Threads: the oneDNN build Flowstone links parallelizes with OpenMP, which would run its own team
// of threads beside the intra-op pool. Two pools on the same cores oversubscribe them: OpenMP's
// spin-waiting threads take cycles from the pool's next op, and every inter-op thread calling
// sgemm at once gets a team of its own. On a shared 2-core machine, 2-thread OpenMP sgemm calls
// were erratic: from 1.4x faster to 40x slower than the same products as single-threaded calls
// spread over the pool, and slower still on small products. So each sgemm call is
// single-threaded and the intra-op pool parallelizes, over tiles of C, as it does for every other
// kernel; oneDNN never starts an OpenMP thread for a matrix product.
//
// The tiles depend on the shape alone, never on the number of threads, so every element of C is
// computed by the same call whatever the pool size: results are reproducible across thread
// counts, as on the hand-written path (oneDNN's rounding can depend on the size of the product it
// is given).

// Below this many multiply-adds, a call into oneDNN costs more than the direct loops.
constexpr int64_t kOneDnnMinProduct = 8 * 8 * 8;
// Target tile of C: big enough that one single-threaded sgemm runs near its peak (packing its
// panels of A and B is then a few percent of the work), small enough that a 1024 x 1024 product
// has 32 tiles to share out.
constexpr int64_t kTileRows = 128;
constexpr int64_t kTileCols = 256;
// Column tile edges fall on multiples of 16 elements: whole AVX-512 vectors of floats. Rows need
// no vector alignment, and a finer one keeps the tiles' sizes even: 700 rows in 6 tiles of 128
// left 60 for the last, so two threads splitting the tiles in halves got 384 and 316 rows.
constexpr int64_t kTileAlign = 16;
constexpr int64_t kRowAlign = 8;
// Products with a transposed B, at most kFewRows rows, at least kFewRowsMinCols columns and
// kFewRowsMinProduct multiply-adds are computed transposed.
constexpr int64_t kFewRows = 32;
constexpr int64_t kFewRowsMinCols = 128;
constexpr int64_t kFewRowsMinProduct = int64_t{1} << 21;

// Splits `extent` into ceil(extent / target) near-equal pieces, each a multiple of `align`
// except the last.
int64_t TileEdge(int64_t extent, int64_t target, int64_t align = kTileAlign) {
  int64_t pieces = (extent + target - 1) / target;
  return RoundUp((extent + pieces - 1) / pieces, align);
}

// A product with fewer than kMinTiles tiles of the target size has its tiles cut finer while a
// tile keeps at least kMinTileMacs multiply-adds (~20 us on one core): a transformer layer at
// batch 1 (128 x 256 by 256 x 256) was one tile on one core. Columns are cut down to
// kMinTileCols before rows go below kMinTileRows: oneDNN's single-threaded sgemm ran 64-column
// tiles 5-10% slower than 128-column ones at the MLP's shapes on this Zen 4 (128 x 784 by
// 784 x 512: 64 x 128 tiles 54-57 G multiply-adds/s, 128 x 64 tiles 47-50), while 32- and 64-row
// tiles ran as fast as 128-row ones. A transposed B that fits one row tile keeps it: every row
// tile would pack B again from strided reads (or B would be transposed once, see OneDnnGemm, at
// about 0.4 ns per float, more than the product saves), so its columns stop at kMinTileCols too
// (128 x 512 by [512, 512]^T: 128 x 128 tiles 43-48 G/s, 128 x 64 tiles 33). Like the target,
// all of this depends on the shape alone.
constexpr int64_t kMinTiles = 8;
constexpr int64_t kMinTileMacs = int64_t{1} << 20;
constexpr int64_t kMinTileCols = 128;
constexpr int64_t kMinTileRows = 32;

void ChooseTiles(int64_t m, int64_t n, int64_t k, bool transpose_b, int64_t* tile_m,
                 int64_t* tile_n) {
  *tile_m = TileEdge(m, kTileRows, kRowAlign);
  *tile_n = TileEdge(n, kTileCols);
  const bool one_row_tile_of_transposed_b = transpose_b && *tile_m >= m;
  auto tiles = [&](int64_t tm, int64_t tn) { return ((m + tm - 1) / tm) * ((n + tn - 1) / tn); };
  while (tiles(*tile_m, *tile_n) < kMinTiles) {
    int64_t tm = *tile_m, tn = *tile_n;
    const bool rows_can_shrink = !one_row_tile_of_transposed_b && tm > kMinTileRows;
    if (tn > kMinTileCols && (tn >= tm || !rows_can_shrink)) {
      tn = TileEdge(n, tn / 2);
    } else if (rows_can_shrink) {
      tm = TileEdge(m, tm / 2, kRowAlign);
    } else if (!one_row_tile_of_transposed_b && tn > kTileAlign) {
      // A few rows (an RNN step's batch): only narrower columns share the product out.
      tn = TileEdge(n, tn / 2);
    }
    if ((tm == *tile_m && tn == *tile_n) || std::min(tm, m) * std::min(tn, n) * k < kMinTileMacs) {
      break;
    }
    *tile_m = tm;
    *tile_n = tn;
  }
}

Status OneDnnGemm(KernelContext& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                  int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                  int64_t ldc) {
  // A few rows by a transposed B (an RNN step's gradient, 20 x 1024 by [256, 1024]^T): sgemm
  // would pack all of B from strided reads for those few rows, 2.6x the time of the product with
  // B untransposed. C^T = B op(A)^T reads B as stored and packs only the few rows of A; its
  // n x m result is then transposed into C (1.5x faster overall for that shape).
  if (transpose_b && m <= kFewRows && n >= kFewRowsMinCols && m * n * k >= kFewRowsMinProduct) {
    Tensor c_transposed;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, TensorShape{n, m}, &c_transposed));
    float* ct = c_transposed.data<float>();
    FS_RETURN_IF_ERROR(OneDnnGemm(ctx, false, !transpose_a, n, m, k, b, ldb, a, lda, ct, m));
    TransposeMatrix(ctx, n, m, static_cast<const float*>(ct), m, c, ldc);
    return Status::OK();
  }
  // ChooseTiles also cuts a product of a few rows (an RNN step's batch) that fits one tile into
  // column tiles, so that it is shared out.
  int64_t tile_m, tile_n;
  ChooseTiles(m, n, k, transpose_b, &tile_m, &tile_n);
  const int64_t row_tiles = (m + tile_m - 1) / tile_m, col_tiles = (n + tile_n - 1) / tile_n;
  // Every row tile packs its columns of op(B) again, and packing a transposed B reads it
  // column by column: for the 700 x 10,000 by 10,000 x 256 gradient of a softmax projection that
  // made the product 1.4x slower than with B stored untransposed. So a transposed B that more
  // than one row tile reads is transposed once, in parallel, and the tiles read that.
  Tensor b_transposed;
  if (transpose_b && row_tiles > 1) {
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, TensorShape{k, n}, &b_transposed));
    float* bt = b_transposed.data<float>();
    TransposeMatrix(ctx, n, k, b, ldb, bt, n);
    b = bt;
    ldb = n;
    transpose_b = false;
  }
  std::atomic<dnnl_status_t> failure{dnnl_success};
  // Cost in rough cycles: a single-threaded sgemm retires about 16 multiply-adds per cycle.
  ctx.ParallelFor(row_tiles * col_tiles, tile_m * tile_n * k / 16, [&](int64_t begin, int64_t end) {
    onednn::OneOpenMpThread one_thread;
    for (int64_t u = begin; u < end; ++u) {
      if (ctx.cancelled()) return;  // the run discards C
      const int64_t i0 = (u / col_tiles) * tile_m, j0 = (u % col_tiles) * tile_n;
      // Row i0 of op(A) and column j0 of op(B), wherever transposition stores them.
      const float* a_tile = a + (transpose_a ? i0 : i0 * lda);
      const float* b_tile = b + (transpose_b ? j0 * ldb : j0);
      dnnl_status_t status = dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N',
                                        std::min(tile_m, m - i0), std::min(tile_n, n - j0), k, 1.0f,
                                        a_tile, lda, b_tile, ldb, 0.0f, c + i0 * ldc + j0, ldc);
      if (status != dnnl_success) failure = status;
    }
  });
  if (failure == dnnl_out_of_memory) {
    return errors::ResourceExhausted("OOM in oneDNN's sgemm packing a ", m, "x", k, " by ", k, "x",
                                     n, " float32 matrix product");
  }
  if (failure != dnnl_success) {
    return errors::Internal("oneDNN's sgemm failed with status ", static_cast<int>(failure),
                            " for a ", m, "x", k, " by ", k, "x", n,
                            " product (transpose_a=", transpose_a, ", transpose_b=", transpose_b,
                            ", lda=", lda, ", ldb=", ldb, ", ldc=", ldc, ")");
  }
  return Status::OK();
}

template <typename T>
Status GemmImpl(KernelContext& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return Status::OK();
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return Status::OK();
  }
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k > kOneDnnMinProduct && onednn::Enabled()) {
      return OneDnnGemm(ctx, transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc);
    }
  }
  Operand<T> op_a{a, lda, transpose_a};
  Operand<T> op_b{b, ldb, transpose_b};
  if (m * n * k <= kSmallProduct) {
    SmallGemm(op_a, op_b, m, n, k, c, ldc);
    return Status::OK();
  }
  return BlockedGemm(ctx, op_a, op_b, m, n, k, c, ldc);
}

}  // namespace

template <typename T>
Status Gemm(KernelContext& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
            const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_integral_v<T>) {
    // Two's-complement products and sums are the same bits in unsigned arithmetic, which wraps
    // on overflow by definition (signed overflow would be undefined behaviour).
    using U = std::make_unsigned_t<T>;
    FS_RETURN_IF_ERROR(
        GemmImpl<U>(ctx, transpose_a, transpose_b, m, n, k, reinterpret_cast<const U*>(a), lda,
                    reinterpret_cast<const U*>(b), ldb, reinterpret_cast<U*>(c), ldc));
  } else {
    FS_RETURN_IF_ERROR(GemmImpl<T>(ctx, transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc));
  }
  // The tiles stop once the run is cancelled, leaving C incomplete.
  return ctx.CheckCancelled();
}

template Status Gemm<float>(KernelContext&, bool, bool, int64_t, int64_t, int64_t, const float*,
                            int64_t, const float*, int64_t, float*, int64_t);
template Status Gemm<double>(KernelContext&, bool, bool, int64_t, int64_t, int64_t, const double*,
                             int64_t, const double*, int64_t, double*, int64_t);
template Status Gemm<int32_t>(KernelContext&, bool, bool, int64_t, int64_t, int64_t, const int32_t*,
                              int64_t, const int32_t*, int64_t, int32_t*, int64_t);
template Status Gemm<int64_t>(KernelContext&, bool, bool, int64_t, int64_t, int64_t, const int64_t*,
                              int64_t, const int64_t*, int64_t, int64_t*, int64_t);

}  // namespace flowstone
