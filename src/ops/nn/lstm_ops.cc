// Fused LSTM ops with TensorFlow's signatures: LSTMBlockCell and LSTMBlockCellGrad (one time
// step), BlockLSTM / BlockLSTMV2 (a whole time-major sequence) and their gradients BlockLSTMGrad /
// BlockLSTMGradV2.
//
// One step, with xh = [x, h_prev] and the four gate blocks of w's columns in the op's layout
// (i, ci, f, o for LSTMBlockCell and BlockLSTM; i, f, ci, o for BlockLSTMV2, Keras's order):
//   [i, ci, f, o] = xh * w + b                      (one GEMM for all four gates)
//   i = sigmoid(i + cs_prev * wci)   f = sigmoid(f + cs_prev * wcf + forget_bias)   ci = tanh(ci)
//   cs = clip(ci * i + cs_prev * f, cell_clip)      (no clipping when cell_clip <= 0)
//   o = sigmoid(o + cs * wco)   co = tanh(cs)   h = co * o
// (the peephole terms only with use_peephole). Every output is the activated value; the
// gradients use them and, as TensorFlow's, treat the clip as the identity and take gradients
// from cs and h only. The element-wise part of a step is one pass over the gate matrix.
//
// The sequence ops multiply every step's x by w's input rows in one GEMM before the loop, so
// each step runs one GEMM of h_prev by w's recurrent rows; their gradients run one GEMM per step
// (the recurrent h gradient) and, after the loop, one GEMM each for x's and w's gradients over
// all steps. Steps at or past seq_len_max output zeros and get no gradient. Sums over the batch
// and time (bias, peepholes) run in a fixed order, and GEMMs split work by shape, so results do
// not depend on the thread count.
//
// TensorFlow registers these ops for half and float; Flowstone registers float and double (see
// docs/COMPAT.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/gemm.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"

namespace flowstone {
namespace {

// Which of w's four column blocks holds each gate.
struct GateLayout {
  int i, ci, f, o;
};
constexpr GateLayout kICFO{0, 1, 2, 3};  // LSTMBlockCell, BlockLSTM
constexpr GateLayout kIFCO{0, 2, 1, 3};  // BlockLSTMV2

struct CellConfig {
  GateLayout gates = kICFO;
  double forget_bias = 0;
  double cell_clip = 0;  // no clipping unless > 0
  bool use_peephole = false;
};

CellConfig ReadConfig(const AttrMap& attrs, GateLayout gates, double default_clip) {
  CellConfig config;
  config.gates = gates;
  config.forget_bias = attrs.GetOr<double>("forget_bias", 0.0);
  config.cell_clip = attrs.GetOr<double>("cell_clip", default_clip);
  config.use_peephole = attrs.GetOr<bool>("use_peephole", false);
  return config;
}

// The problem's sizes: batch rows, input depth, cell units, and time steps (1 for a cell).
struct LstmDims {
  int64_t time = 1, batch = 0, input = 0, cell = 0;
  int64_t gate_width() const { return 4 * cell; }
};

Status ExpectShape(const std::string& op, const char* name, const Tensor& t,
                   const TensorShape& expected, const char* why) {
  if (t.shape() != expected) {
    return errors::InvalidArgument(op, ": ", name, " must have shape ", expected.ToString(), " (",
                                   why, "), got ", t.shape().ToString());
  }
  return Status::OK();
}

// Reads the sizes from x (input 0, or 1 after seq_len_max) and w, and checks the state, weight,
// peephole and bias inputs against them.
Status ReadDims(KernelContext& ctx, bool sequence, LstmDims* d) {
  const std::string& op = ctx.node().type();
  const int first = sequence ? 1 : 0;
  const Tensor& x = ctx.input(first);
  const int x_rank = sequence ? 3 : 2;
  if (x.shape().rank() != x_rank) {
    return errors::InvalidArgument(op, ": x must be ", x_rank, "-D (",
                                   sequence ? "[time, batch, input_size]" : "[batch, input_size]",
                                   "), got shape ", x.shape().ToString());
  }
  if (sequence) d->time = x.shape().dim(0);
  d->batch = x.shape().dim(x_rank - 2);
  d->input = x.shape().dim(x_rank - 1);
  const Tensor& w = ctx.input(first + 3);
  if (w.shape().rank() != 2 || w.shape().dim(1) % 4 != 0 || w.shape().dim(0) < d->input) {
    return errors::InvalidArgument(
        op, ": w must be a matrix [input_size + cell_size, 4 * cell_size], got shape ",
        w.shape().ToString(), " with input_size ", d->input);
  }
  d->cell = w.shape().dim(1) / 4;
  if (w.shape().dim(0) != d->input + d->cell) {
    return errors::InvalidArgument(op, ": w must have input_size + cell_size = ", d->input, " + ",
                                   d->cell, " rows (its columns give cell_size ", d->cell,
                                   "), got shape ", w.shape().ToString());
  }
  const TensorShape state{d->batch, d->cell};
  FS_RETURN_IF_ERROR(ExpectShape(op, "cs_prev", ctx.input(first + 1), state, "[batch, cell_size]"));
  FS_RETURN_IF_ERROR(ExpectShape(op, "h_prev", ctx.input(first + 2), state, "[batch, cell_size]"));
  const TensorShape units{d->cell};
  FS_RETURN_IF_ERROR(ExpectShape(op, "wci", ctx.input(first + 4), units, "[cell_size]"));
  FS_RETURN_IF_ERROR(ExpectShape(op, "wcf", ctx.input(first + 5), units, "[cell_size]"));
  FS_RETURN_IF_ERROR(ExpectShape(op, "wco", ctx.input(first + 6), units, "[cell_size]"));
  FS_RETURN_IF_ERROR(
      ExpectShape(op, "b", ctx.input(first + 7), TensorShape{4 * d->cell}, "[4 * cell_size]"));
  return Status::OK();
}

// The number of steps a sequence op runs: seq_len_max, at most the sequence's length.
Status StepsToRun(KernelContext& ctx, const LstmDims& d, int64_t* steps) {
  const Tensor& t = ctx.input(0);
  if (t.num_elements() != 1) {
    return errors::InvalidArgument(ctx.node().type(), ": seq_len_max must be a scalar, got shape ",
                                   t.shape().ToString());
  }
  const int64_t value = t.data<int64_t>()[0];
  if (value < 0) {
    return errors::InvalidArgument(ctx.node().type(), ": seq_len_max must be >= 0, got ", value);
  }
  *steps = std::min(value, d.time);
  return Status::OK();
}

// The gate activations: for float, the vectorizable ones of vector_math.h (so the row loops
// below vectorize); for double, <cmath>'s.
using vecmath::Sigmoid;
using vecmath::Tanh;

// The weights of one step, shared by all its rows.
template <typename T>
struct CellWeights {
  const T* b;
  const T *wci, *wcf, *wco;
};

// The seven per-step outputs, each [batch, cell] with rows `cell` apart.
template <typename T>
struct StepValues {
  T *i, *cs, *f, *o, *ci, *co, *h;
  StepValues Offset(int64_t n) const {
    return {i + n, cs + n, f + n, o + n, ci + n, co + n, h + n};
  }
};

// One row's four gate blocks (in any matrix 4 * cell wide).
template <typename T>
struct Gates {
  T *i, *ci, *f, *o;
};

template <typename T>
Gates<T> GatesOf(T* row, const GateLayout& layout, int64_t n) {
  return {row + layout.i * n, row + layout.ci * n, row + layout.f * n, row + layout.o * n};
}

// The element-wise part of a forward step for one row: g holds xh * w (without the bias), e
// (with kExtra) a second term to add.
template <typename T, bool kPeephole, bool kExtra>
FS_MULTIVERSION void ForwardRow(int64_t n, Gates<const T> g, Gates<const T> e, Gates<const T> b,
                                T forget_bias, T clip, const T* cs_prev, const CellWeights<T>& w,
                                StepValues<T> out) {
  const auto pre = [&](const T* gate, const T* extra, const T* bias, int64_t k) {
    T value = gate[k];
    if constexpr (kExtra) value += extra[k];
    return value + bias[k];
  };
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const T c_prev = cs_prev[k];
    T i_pre = pre(g.i, e.i, b.i, k);
    T f_pre = pre(g.f, e.f, b.f, k);
    if constexpr (kPeephole) {
      i_pre += c_prev * w.wci[k];
      f_pre += c_prev * w.wcf[k];
    }
    const T i = Sigmoid(i_pre);
    const T f = Sigmoid(f_pre + forget_bias);
    const T ci = Tanh(pre(g.ci, e.ci, b.ci, k));
    T cs = ci * i + c_prev * f;
    cs = cs < -clip ? -clip : cs;
    cs = cs > clip ? clip : cs;
    T o_pre = pre(g.o, e.o, b.o, k);
    if constexpr (kPeephole) o_pre += cs * w.wco[k];
    const T o = Sigmoid(o_pre);
    const T co = Tanh(cs);
    out.i[k] = i;
    out.cs[k] = cs;
    out.f[k] = f;
    out.o[k] = o;
    out.ci[k] = ci;
    out.co[k] = co;
    out.h[k] = co * o;
  }
}

// The element-wise part of a forward step over all rows: gates holds xh * w (without the bias),
// 4 * cell wide; extra (may be null) holds a second term of the same shape to add.
template <typename T>
void CellForward(KernelContext& ctx, const CellConfig& c, const LstmDims& d, const T* gates,
                 const T* extra, const T* cs_prev, const CellWeights<T>& w,
                 const StepValues<T>& out) {
  const int64_t n = d.cell;
  const T forget_bias = T(c.forget_bias);
  const T clip = c.cell_clip > 0 ? T(c.cell_clip) : std::numeric_limits<T>::infinity();
  const Gates<const T> bias = GatesOf(w.b, c.gates, n);
  ctx.ParallelFor(d.batch, n * 60, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const Gates<const T> g = GatesOf(gates + r * 4 * n, c.gates, n);
      const Gates<const T> e = extra ? GatesOf(extra + r * 4 * n, c.gates, n) : g;
      const auto row = [&]<bool kPeephole, bool kExtra>() {
        ForwardRow<T, kPeephole, kExtra>(n, g, e, bias, forget_bias, clip, cs_prev + r * n, w,
                                         out.Offset(r * n));
      };
      if (c.use_peephole) {
        extra ? row.template operator()<true, true>() : row.template operator()<true, false>();
      } else {
        extra ? row.template operator()<false, true>() : row.template operator()<false, false>();
      }
    }
  });
}

// One step's saved forward values, read by the backward pass.
template <typename T>
struct StepSaved {
  const T *i, *cs, *f, *o, *ci, *co;
  StepSaved Offset(int64_t n) const { return {i + n, cs + n, f + n, o + n, ci + n, co + n}; }
};

// The element-wise part of a backward step for one row: from the gradients reaching this step's h
// and cs, the gate pre-activations' gradient dicfo (in the op's layout) and cs_prev's gradient.
template <typename T, bool kPeephole>
FS_MULTIVERSION void BackwardRow(int64_t n, const StepSaved<T>& s, const T* cs_prev, const T* wci,
                                 const T* wcf, const T* wco, const T* dh, const T* dcs_in,
                                 Gates<T> dicfo, T* dcs_prev) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const T i = s.i[k], f = s.f[k], o = s.o[k], ci = s.ci[k], co = s.co[k];
    const T d_o = o * (T(1) - o) * dh[k] * co;
    T dcs = (T(1) - co * co) * dh[k] * o + dcs_in[k];
    if constexpr (kPeephole) dcs += d_o * wco[k];
    const T dci = (T(1) - ci * ci) * dcs * i;
    const T df = f * (T(1) - f) * dcs * cs_prev[k];
    const T di = i * (T(1) - i) * dcs * ci;
    dicfo.i[k] = di;
    dicfo.ci[k] = dci;
    dicfo.f[k] = df;
    dicfo.o[k] = d_o;
    T prev = dcs * f;
    if constexpr (kPeephole) prev += di * wci[k] + df * wcf[k];
    dcs_prev[k] = prev;
  }
}

template <typename T>
void CellBackward(KernelContext& ctx, const CellConfig& c, const LstmDims& d, const StepSaved<T>& s,
                  const T* cs_prev, const T* wci, const T* wcf, const T* wco, const T* dh,
                  const T* dcs_in, T* dicfo, T* dcs_prev) {
  const int64_t n = d.cell;
  ctx.ParallelFor(d.batch, n * 20, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * n;
      const Gates<T> row = GatesOf(dicfo + r * 4 * n, c.gates, n);
      if (c.use_peephole) {
        BackwardRow<T, true>(n, s.Offset(at), cs_prev + at, wci, wcf, wco, dh + at, dcs_in + at,
                             row, dcs_prev + at);
      } else {
        BackwardRow<T, false>(n, s.Offset(at), cs_prev + at, wci, wcf, wco, dh + at, dcs_in + at,
                              row, dcs_prev + at);
      }
    }
  });
}

// Adds one step's peephole gradients, summed over the batch in row order:
// wci += di * cs_prev, wcf += df * cs_prev, wco += do * cs.
template <typename T>
void AccumulatePeepholeGrads(const CellConfig& c, const LstmDims& d, const T* dicfo,
                             const T* cs_prev, const T* cs, T* wci_grad, T* wcf_grad, T* wco_grad) {
  const int64_t n = d.cell;
  for (int64_t r = 0; r < d.batch; ++r) {
    const T* g = dicfo + r * 4 * n;
    for (int64_t k = 0; k < n; ++k) {
      wci_grad[k] += g[c.gates.i * n + k] * cs_prev[r * n + k];
      wcf_grad[k] += g[c.gates.f * n + k] * cs_prev[r * n + k];
      wco_grad[k] += g[c.gates.o * n + k] * cs[r * n + k];
    }
  }
}

template <typename T>
CellWeights<T> WeightsFrom(KernelContext& ctx, int first) {
  return {ctx.input(first + 7).data<T>(), ctx.input(first + 4).data<T>(),
          ctx.input(first + 5).data<T>(), ctx.input(first + 6).data<T>()};
}

Status AllocateSevenOutputs(KernelContext& ctx, const TensorShape& shape, Tensor* outs[7]) {
  for (int k = 0; k < 7; ++k) FS_RETURN_IF_ERROR(ctx.AllocateOutput(k, shape, &outs[k]));
  return Status::OK();
}

template <typename T>
StepValues<T> ValuesOf(Tensor* outs[7]) {
  return {outs[0]->data<T>(), outs[1]->data<T>(), outs[2]->data<T>(), outs[3]->data<T>(),
          outs[4]->data<T>(), outs[5]->data<T>(), outs[6]->data<T>()};
}

void ZeroFill(Tensor* t) {
  if (t->bytes() > 0) std::memset(t->raw_data(), 0, t->bytes());
}

// ---------------------------------------------------------------------------------------------
// LSTMBlockCell

template <typename T>
Status LstmCellForward(KernelContext& ctx, const CellConfig& c, const LstmDims& d) {
  const T* x = ctx.input(0).data<T>();
  const T* cs_prev = ctx.input(1).data<T>();
  const T* h_prev = ctx.input(2).data<T>();
  const T* w = ctx.input(3).data<T>();
  Tensor* outs[7];
  FS_RETURN_IF_ERROR(AllocateSevenOutputs(ctx, TensorShape{d.batch, d.cell}, outs));
  // xh = [x, h_prev], then one GEMM for the four gates.
  Tensor xh, gates;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DTypeOf<T>::value, {d.batch, d.input + d.cell}, &xh));
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DTypeOf<T>::value, {d.batch, d.gate_width()}, &gates));
  T* xh_data = xh.data<T>();
  const int64_t width = d.input + d.cell;
  for (int64_t r = 0; r < d.batch; ++r) {
    std::copy_n(x + r * d.input, d.input, xh_data + r * width);
    std::copy_n(h_prev + r * d.cell, d.cell, xh_data + r * width + d.input);
  }
  FS_RETURN_IF_ERROR(Gemm<T>(ctx, false, false, d.batch, d.gate_width(), width, xh_data, width, w,
                             d.gate_width(), gates.data<T>(), d.gate_width()));
  CellForward<T>(ctx, c, d, gates.data<T>(), nullptr, cs_prev, WeightsFrom<T>(ctx, 0),
                 ValuesOf<T>(outs));
  return Status::OK();
}

Status LstmBlockCellKernel(KernelContext& ctx) {
  LstmDims d;
  FS_RETURN_IF_ERROR(ReadDims(ctx, false, &d));
  const CellConfig c = ReadConfig(ctx.attrs(), kICFO, 3.0);
  return DispatchDType<float, double>(
      ctx.input(0).dtype(), "LSTMBlockCell",
      [&]<typename T>() -> Status { return LstmCellForward<T>(ctx, c, d); });
}

// LSTMBlockCellGrad's inputs: the cell's 8 inputs, its outputs i, cs, f, o, ci, co (8-13), and
// the gradients of cs and h (14, 15). Its outputs: cs_prev_grad, dicfo, and the peephole weights'
// gradients (zeros without peepholes). x, h_prev, w and b get their gradients from dicfo in the
// graph (LstmBlockCellGrad below), as in TensorFlow.
template <typename T>
Status LstmCellBackward(KernelContext& ctx, const CellConfig& c, const LstmDims& d) {
  const TensorShape state{d.batch, d.cell};
  const char* names[] = {"i", "cs", "f", "o", "ci", "co", "cs_grad", "h_grad"};
  for (int k = 0; k < 8; ++k) {
    FS_RETURN_IF_ERROR(
        ExpectShape(ctx.node().type(), names[k], ctx.input(8 + k), state, "[batch, cell_size]"));
  }
  const StepSaved<T> saved{ctx.input(8).data<T>(),  ctx.input(9).data<T>(),
                           ctx.input(10).data<T>(), ctx.input(11).data<T>(),
                           ctx.input(12).data<T>(), ctx.input(13).data<T>()};
  Tensor *cs_prev_grad, *dicfo, *wci_grad, *wcf_grad, *wco_grad;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, state, &cs_prev_grad));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, {d.batch, d.gate_width()}, &dicfo));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, {d.cell}, &wci_grad));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(3, {d.cell}, &wcf_grad));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(4, {d.cell}, &wco_grad));
  const T* cs_prev = ctx.input(1).data<T>();
  CellBackward<T>(ctx, c, d, saved, cs_prev, ctx.input(4).data<T>(), ctx.input(5).data<T>(),
                  ctx.input(6).data<T>(), ctx.input(15).data<T>(), ctx.input(14).data<T>(),
                  dicfo->data<T>(), cs_prev_grad->data<T>());
  for (Tensor* t : {wci_grad, wcf_grad, wco_grad}) ZeroFill(t);
  if (c.use_peephole) {
    AccumulatePeepholeGrads<T>(c, d, dicfo->data<T>(), cs_prev, saved.cs, wci_grad->data<T>(),
                               wcf_grad->data<T>(), wco_grad->data<T>());
  }
  return Status::OK();
}

Status LstmBlockCellGradKernel(KernelContext& ctx) {
  LstmDims d;
  FS_RETURN_IF_ERROR(ReadDims(ctx, false, &d));
  const CellConfig c = ReadConfig(ctx.attrs(), kICFO, 0.0);
  return DispatchDType<float, double>(
      ctx.input(0).dtype(), "LSTMBlockCellGrad",
      [&]<typename T>() -> Status { return LstmCellBackward<T>(ctx, c, d); });
}

// ---------------------------------------------------------------------------------------------
// BlockLSTM, BlockLSTMV2

template <typename T>
Status BlockLstmForward(KernelContext& ctx, const CellConfig& c, const LstmDims& d, int64_t steps) {
  const T* x = ctx.input(1).data<T>();
  const T* cs_prev = ctx.input(2).data<T>();
  const T* h_prev = ctx.input(3).data<T>();
  const T* w = ctx.input(4).data<T>();
  Tensor* outs[7];
  FS_RETURN_IF_ERROR(AllocateSevenOutputs(ctx, TensorShape{d.time, d.batch, d.cell}, outs));
  // Steps past seq_len_max output zeros.
  const int64_t step_size = d.batch * d.cell;
  for (Tensor* t : outs) {
    std::fill(t->data<T>() + steps * step_size, t->data<T>() + d.time * step_size, T(0));
  }
  if (steps == 0 || step_size == 0) return Status::OK();
  const int64_t g = d.gate_width();
  Tensor x_gates, h_gates;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DTypeOf<T>::value, {steps * d.batch, g}, &x_gates));
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DTypeOf<T>::value, {d.batch, g}, &h_gates));
  // Every step's x times w's input rows, in one GEMM.
  if (d.input > 0) {
    FS_RETURN_IF_ERROR(Gemm<T>(ctx, false, false, steps * d.batch, g, d.input, x, d.input, w, g,
                               x_gates.data<T>(), g));
  } else {
    ZeroFill(&x_gates);
  }
  const T* w_h = w + d.input * g;
  const StepValues<T> all = ValuesOf<T>(outs);
  const CellWeights<T> weights = WeightsFrom<T>(ctx, 1);
  for (int64_t t = 0; t < steps; ++t) {
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
    const T* h_in = t == 0 ? h_prev : all.h + (t - 1) * step_size;
    const T* cs_in = t == 0 ? cs_prev : all.cs + (t - 1) * step_size;
    FS_RETURN_IF_ERROR(
        Gemm<T>(ctx, false, false, d.batch, g, d.cell, h_in, d.cell, w_h, g, h_gates.data<T>(), g));
    CellForward<T>(ctx, c, d, x_gates.data<T>() + t * d.batch * g, h_gates.data<T>(), cs_in,
                   weights, all.Offset(t * step_size));
  }
  return Status::OK();
}

template <GateLayout kLayout, int kDefaultClip>
Status BlockLstmKernel(KernelContext& ctx) {
  LstmDims d;
  FS_RETURN_IF_ERROR(ReadDims(ctx, true, &d));
  int64_t steps;
  FS_RETURN_IF_ERROR(StepsToRun(ctx, d, &steps));
  const CellConfig c = ReadConfig(ctx.attrs(), kLayout, kDefaultClip);
  return DispatchDType<float, double>(
      ctx.input(1).dtype(), ctx.node().type().c_str(),
      [&]<typename T>() -> Status { return BlockLstmForward<T>(ctx, c, d, steps); });
}

// BlockLSTMGrad's inputs: the forward op's 9 inputs, its 7 outputs (9-15), and the gradients of
// its cs and h outputs (16, 17). Outputs: the gradients of x, cs_prev, h_prev, w, wci, wcf, wco
// and b.
template <typename T>
Status BlockLstmBackward(KernelContext& ctx, const CellConfig& c, const LstmDims& d,
                         int64_t steps) {
  const std::string& op = ctx.node().type();
  const TensorShape seq{d.time, d.batch, d.cell};
  const char* names[] = {"i", "cs", "f", "o", "ci", "co", "h", "cs_grad", "h_grad"};
  for (int k = 0; k < 9; ++k) {
    FS_RETURN_IF_ERROR(
        ExpectShape(op, names[k], ctx.input(9 + k), seq, "[time, batch, cell_size]"));
  }
  const T* x = ctx.input(1).data<T>();
  const T* cs_prev = ctx.input(2).data<T>();
  const T* h_prev = ctx.input(3).data<T>();
  const T* w = ctx.input(4).data<T>();
  const StepSaved<T> saved{ctx.input(9).data<T>(),  ctx.input(10).data<T>(),
                           ctx.input(11).data<T>(), ctx.input(12).data<T>(),
                           ctx.input(13).data<T>(), ctx.input(14).data<T>()};
  const T* h = ctx.input(15).data<T>();
  const T* cs_grad = ctx.input(16).data<T>();
  const T* h_grad = ctx.input(17).data<T>();

  Tensor* grads[8];
  const TensorShape shapes[8] = {ctx.input(1).shape(),
                                 {d.batch, d.cell},
                                 {d.batch, d.cell},
                                 ctx.input(4).shape(),
                                 {d.cell},
                                 {d.cell},
                                 {d.cell},
                                 {d.gate_width()}};
  for (int k = 0; k < 8; ++k) {
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(k, shapes[k], &grads[k]));
    ZeroFill(grads[k]);
  }
  if (steps == 0 || d.batch == 0 || d.cell == 0) return Status::OK();

  const int64_t g = d.gate_width();
  const int64_t step_size = d.batch * d.cell;
  const DType dtype = DTypeOf<T>::value;
  Tensor dicfo_all, dh, dcs_in, h_before, w_t;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, {steps * d.batch, g}, &dicfo_all));
  // w transposed once ([4 * cell, input + cell]): the per-step GEMM and x's gradient multiply by
  // w^T, and a GEMM given a transposed operand packs it again in every call (in 35 steps of a
  // batch of 20 with 256 units, 1.8x the time of the same products with w^T stored).
  const int64_t depth = d.input + d.cell;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, {g, depth}, &w_t));
  TransposeMatrix<T>(ctx, depth, g, w, g, w_t.data<T>(), depth);
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, {d.batch, d.cell}, &dh));
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, {d.batch, d.cell}, &dcs_in));
  // h_before[t] is step t's h_prev: the initial h, then h[0 .. steps - 2].
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, {steps * d.batch, d.cell}, &h_before));
  std::copy_n(h_prev, step_size, h_before.data<T>());
  std::copy_n(h, (steps - 1) * step_size, h_before.data<T>() + step_size);

  // The gradients carried from step t + 1 into step t: h's (h_prev_grad, output 2) and cs's
  // (cs_prev_grad, output 1), zero after the last step run.
  T* dh_carry = grads[2]->data<T>();
  T* dcs_carry = grads[1]->data<T>();
  T* dh_data = dh.data<T>();
  T* dcs_data = dcs_in.data<T>();
  const T* wci = ctx.input(5).data<T>();
  const T* wcf = ctx.input(6).data<T>();
  const T* wco = ctx.input(7).data<T>();
  const T* w_h_t = w_t.data<T>() + d.input;  // [g, cell] with leading dimension depth
  for (int64_t t = steps - 1; t >= 0; --t) {
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
    const int64_t at = t * step_size;
    for (int64_t k = 0; k < step_size; ++k) {
      dh_data[k] = h_grad[at + k] + dh_carry[k];
      dcs_data[k] = cs_grad[at + k] + dcs_carry[k];
    }
    const T* cs_in = t == 0 ? cs_prev : saved.cs + at - step_size;
    T* dicfo = dicfo_all.data<T>() + t * d.batch * g;
    CellBackward<T>(ctx, c, d, saved.Offset(at), cs_in, wci, wcf, wco, dh_data, dcs_data, dicfo,
                    dcs_carry);
    if (c.use_peephole) {
      AccumulatePeepholeGrads<T>(c, d, dicfo, cs_in, saved.cs + at, grads[4]->data<T>(),
                                 grads[5]->data<T>(), grads[6]->data<T>());
    }
    // h_prev's gradient: dicfo times w's recurrent rows, transposed.
    FS_RETURN_IF_ERROR(
        Gemm<T>(ctx, false, false, d.batch, d.cell, g, dicfo, g, w_h_t, depth, dh_carry, d.cell));
  }
  // Over all steps at once: x_grad = dicfo * w_x^T, w_grad = [x, h_before]^T * dicfo.
  const T* dicfo = dicfo_all.data<T>();
  T* w_grad = grads[3]->data<T>();
  if (d.input > 0) {
    FS_RETURN_IF_ERROR(Gemm<T>(ctx, false, false, steps * d.batch, d.input, g, dicfo, g,
                               w_t.data<T>(), depth, grads[0]->data<T>(), d.input));
    FS_RETURN_IF_ERROR(
        Gemm<T>(ctx, true, false, d.input, g, steps * d.batch, x, d.input, dicfo, g, w_grad, g));
  }
  FS_RETURN_IF_ERROR(Gemm<T>(ctx, true, false, d.cell, g, steps * d.batch, h_before.data<T>(),
                             d.cell, dicfo, g, w_grad + d.input * g, g));
  // b_grad: dicfo summed over steps and rows, in order.
  T* b_grad = grads[7]->data<T>();
  for (int64_t r = 0; r < steps * d.batch; ++r) {
    for (int64_t k = 0; k < g; ++k) b_grad[k] += dicfo[r * g + k];
  }
  return Status::OK();
}

template <GateLayout kLayout>
Status BlockLstmGradKernel(KernelContext& ctx) {
  LstmDims d;
  FS_RETURN_IF_ERROR(ReadDims(ctx, true, &d));
  int64_t steps;
  FS_RETURN_IF_ERROR(StepsToRun(ctx, d, &steps));
  const CellConfig c = ReadConfig(ctx.attrs(), kLayout, 0.0);
  return DispatchDType<float, double>(
      ctx.input(1).dtype(), ctx.node().type().c_str(),
      [&]<typename T>() -> Status { return BlockLstmBackward<T>(ctx, c, d, steps); });
}

// ---------------------------------------------------------------------------------------------
// Shape functions. The cell's sizes come from x ([batch, input] or [time, batch, input]) and
// the state and weight inputs, each possibly unknown.

struct StaticDims {
  int64_t time = -1, batch = -1, cell = -1;
};

Status InferDims(InferenceContext& ctx, bool sequence, StaticDims* d) {
  const int first = sequence ? 1 : 0;
  PartialShape x, cs, h, w, b;
  FS_RETURN_IF_ERROR(ctx.WithRank(first, sequence ? 3 : 2, &x));
  FS_RETURN_IF_ERROR(ctx.WithRank(first + 1, 2, &cs));
  FS_RETURN_IF_ERROR(ctx.WithRank(first + 2, 2, &h));
  FS_RETURN_IF_ERROR(ctx.WithRank(first + 3, 2, &w));
  for (int k = 4; k < 7; ++k) {
    PartialShape v;
    FS_RETURN_IF_ERROR(ctx.WithRank(first + k, 1, &v));
    if (v.known_rank()) FS_RETURN_IF_ERROR(ctx.MergeDim(d->cell, v.dim(0), &d->cell));
  }
  FS_RETURN_IF_ERROR(ctx.WithRank(first + 7, 1, &b));
  if (x.known_rank()) {
    if (sequence) d->time = x.dim(0);
    d->batch = x.dim(sequence ? 1 : 0);
  }
  for (const PartialShape* state : {&cs, &h}) {
    if (!state->known_rank()) continue;
    FS_RETURN_IF_ERROR(ctx.MergeDim(d->batch, state->dim(0), &d->batch));
    FS_RETURN_IF_ERROR(ctx.MergeDim(d->cell, state->dim(1), &d->cell));
  }
  int64_t gates = -1;
  if (w.known_rank()) gates = w.dim(1);
  if (b.known_rank()) FS_RETURN_IF_ERROR(ctx.MergeDim(gates, b.dim(0), &gates));
  if (gates >= 0) {
    if (gates % 4 != 0) {
      return errors::InvalidArgument(ctx.op_type(), ": w and b must have 4 * cell_size columns, ",
                                     "got ", gates);
    }
    FS_RETURN_IF_ERROR(ctx.MergeDim(d->cell, gates / 4, &d->cell));
  }
  return Status::OK();
}

Status LstmBlockCellShape(InferenceContext& ctx) {
  StaticDims d;
  FS_RETURN_IF_ERROR(InferDims(ctx, false, &d));
  for (int k = 0; k < 7; ++k) ctx.set_output(k, PartialShape({d.batch, d.cell}));
  return Status::OK();
}

Status LstmBlockCellGradShape(InferenceContext& ctx) {
  StaticDims d;
  FS_RETURN_IF_ERROR(InferDims(ctx, false, &d));
  ctx.set_output(0, PartialShape({d.batch, d.cell}));
  ctx.set_output(1, PartialShape({d.batch, d.cell < 0 ? -1 : 4 * d.cell}));
  for (int k = 2; k < 5; ++k) ctx.set_output(k, PartialShape({d.cell}));
  return Status::OK();
}

Status BlockLstmShape(InferenceContext& ctx) {
  PartialShape seq_len;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 0, &seq_len));
  StaticDims d;
  FS_RETURN_IF_ERROR(InferDims(ctx, true, &d));
  for (int k = 0; k < 7; ++k) ctx.set_output(k, PartialShape({d.time, d.batch, d.cell}));
  return Status::OK();
}

Status BlockLstmGradShape(InferenceContext& ctx) {
  StaticDims d;
  FS_RETURN_IF_ERROR(InferDims(ctx, true, &d));
  ctx.set_output(0, ctx.input(1));
  ctx.set_output(1, PartialShape({d.batch, d.cell}));
  ctx.set_output(2, PartialShape({d.batch, d.cell}));
  ctx.set_output(3, ctx.input(4));
  for (int k = 4; k < 7; ++k) ctx.set_output(k, PartialShape({d.cell}));
  ctx.set_output(7, PartialShape({d.cell < 0 ? -1 : 4 * d.cell}));
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradients, TensorFlow's: only the gradients of cs and h flow back (the other outputs are the
// gates' values, kept for the backward pass).

AttrMap GradAttrs(GradientContext& ctx) {
  AttrMap attrs;
  for (const char* name : {"T", "use_peephole"}) {
    if (const AttrValue* v = ctx.attrs().Find(name)) attrs.Set(name, *v);
  }
  return attrs;
}

Status LstmBlockCellGrad(GradientContext& ctx) {
  std::vector<Endpoint> inputs;
  for (int k = 0; k < 8; ++k) inputs.push_back(ctx.input(k));
  for (int k = 0; k < 6; ++k) inputs.push_back(ctx.output(k));
  inputs.push_back(ctx.output_grad(1));
  inputs.push_back(ctx.output_grad(6));
  Node* grad = ctx.AddNode("LSTMBlockCellGrad", inputs, GradAttrs(ctx));
  if (grad == nullptr) return ctx.status();
  const Endpoint dicfo{grad, 1};
  // xh = [x, h_prev]: its gradient is dicfo * w^T, split at x's width; w's is xh^T * dicfo.
  AttrMap transpose_b, transpose_a, axis_attrs;
  transpose_b.Set("transpose_b", true);
  transpose_a.Set("transpose_a", true);
  const Endpoint xh_grad = ctx.Op("MatMul", {dicfo, ctx.input(3)}, transpose_b);
  const Endpoint x_shape = ctx.Shape(ctx.input(0));
  const Endpoint zeros = ctx.Const(Tensor::FromVector<int32_t>({0, 0}, {2}));
  // [0, input_size]: where h_prev's columns start.
  const Endpoint h_begin =
      ctx.Op("Mul", {x_shape, ctx.Const(Tensor::FromVector<int32_t>({0, 1}, {2}))});
  ctx.SetInputGrad(0, ctx.Op("Slice", {xh_grad, zeros, x_shape}));
  ctx.SetInputGrad(1, Endpoint{grad, 0});
  ctx.SetInputGrad(2, ctx.Op("Slice", {xh_grad, h_begin, ctx.Shape(ctx.input(2))}));
  const Endpoint xh =
      ctx.Op("ConcatV2", {ctx.input(0), ctx.input(2), ctx.Const(Tensor::Scalar<int32_t>(1))});
  ctx.SetInputGrad(3, ctx.Op("MatMul", {xh, dicfo}, transpose_a));
  for (int k = 0; k < 3; ++k) ctx.SetInputGrad(4 + k, Endpoint{grad, 2 + k});
  ctx.SetInputGrad(7, ctx.Op("BiasAddGrad", {dicfo}));
  return ctx.status();
}

template <const char* kGradOp>
Status BlockLstmGrad(GradientContext& ctx) {
  std::vector<Endpoint> inputs;
  for (int k = 0; k < 9; ++k) inputs.push_back(ctx.input(k));
  for (int k = 0; k < 7; ++k) inputs.push_back(ctx.output(k));
  inputs.push_back(ctx.output_grad(1));
  inputs.push_back(ctx.output_grad(6));
  Node* grad = ctx.AddNode(kGradOp, inputs, GradAttrs(ctx));
  if (grad == nullptr) return ctx.status();
  // seq_len_max (input 0) is an integer: no gradient.
  for (int k = 0; k < 8; ++k) ctx.SetInputGrad(1 + k, Endpoint{grad, k});
  return ctx.status();
}

constexpr char kBlockLstmGradOp[] = "BlockLSTMGrad";
constexpr char kBlockLstmGradV2Op[] = "BlockLSTMGradV2";

// ---------------------------------------------------------------------------------------------
// Registration.

const std::vector<DType> kLstmTypes = {DType::kFloat32, DType::kFloat64};

OpBuilder& CellInputs(OpBuilder& b) {
  return b.Input("x", "T")
      .Input("cs_prev", "T")
      .Input("h_prev", "T")
      .Input("w", "T")
      .Input("wci", "T")
      .Input("wcf", "T")
      .Input("wco", "T")
      .Input("b", "T");
}

OpBuilder& SevenOutputs(OpBuilder& b) {
  return b.Output("i", "T")
      .Output("cs", "T")
      .Output("f", "T")
      .Output("o", "T")
      .Output("ci", "T")
      .Output("co", "T")
      .Output("h", "T");
}

// The op builders are temporaries in FS_REGISTER_OP.
OpBuilder& CellInputs(OpBuilder&& b) { return CellInputs(b); }

// A gradient op's copies of the forward op's seven outputs.
OpBuilder& SevenOutputsAsInputs(OpBuilder& b) {
  return b.Input("i", "T")
      .Input("cs", "T")
      .Input("f", "T")
      .Input("o", "T")
      .Input("ci", "T")
      .Input("co", "T")
      .Input("h", "T");
}

FS_REGISTER_OP(SevenOutputs(CellInputs(OpBuilder("LSTMBlockCell")))
                   .Attr("forget_bias", 1.0f)
                   .Attr("cell_clip", 3.0f)
                   .Attr("use_peephole", false)
                   .TypeAttr("T", kLstmTypes)
                   .Shape(LstmBlockCellShape)
                   .Kernel("CPU", LstmBlockCellKernel)
                   .Gradient(LstmBlockCellGrad)
                   .Doc("One LSTM time step with all four gates from one matrix product."));

FS_REGISTER_OP(CellInputs(OpBuilder("LSTMBlockCellGrad"))
                   .Input("i", "T")
                   .Input("cs", "T")
                   .Input("f", "T")
                   .Input("o", "T")
                   .Input("ci", "T")
                   .Input("co", "T")
                   .Input("cs_grad", "T")
                   .Input("h_grad", "T")
                   .Output("cs_prev_grad", "T")
                   .Output("dicfo", "T")
                   .Output("wci_grad", "T")
                   .Output("wcf_grad", "T")
                   .Output("wco_grad", "T")
                   .Attr("use_peephole", false)
                   .TypeAttr("T", kLstmTypes)
                   .Shape(LstmBlockCellGradShape)
                   .Kernel("CPU", LstmBlockCellGradKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of LSTMBlockCell for one step, up to the gates' "
                        "pre-activations (dicfo)."));

// BlockLSTM's and BlockLSTMV2's inputs: seq_len_max, then a cell's inputs over a sequence.
OpBuilder& SequenceInputs(OpBuilder& b) { return CellInputs(b.Input("seq_len_max", "int64")); }

OpBuilder& SequenceInputs(OpBuilder&& b) { return SequenceInputs(b); }

OpBuilder& BlockLstmGradSignature(OpBuilder&& b) {
  return SevenOutputsAsInputs(SequenceInputs(b))
      .Input("cs_grad", "T")
      .Input("h_grad", "T")
      .Output("x_grad", "T")
      .Output("cs_prev_grad", "T")
      .Output("h_prev_grad", "T")
      .Output("w_grad", "T")
      .Output("wci_grad", "T")
      .Output("wcf_grad", "T")
      .Output("wco_grad", "T")
      .Output("b_grad", "T")
      .Attr("use_peephole", false)
      .TypeAttr("T", kLstmTypes)
      .Shape(BlockLstmGradShape)
      .NotDifferentiable();
}

FS_REGISTER_OP(SevenOutputs(SequenceInputs(OpBuilder("BlockLSTM").Attr("forget_bias", 1.0f)))
                   .Attr("cell_clip", 3.0f)
                   .Attr("use_peephole", false)
                   .TypeAttr("T", kLstmTypes)
                   .Shape(BlockLstmShape)
                   .Kernel("CPU", BlockLstmKernel<kICFO, 3>)
                   .Gradient(BlockLstmGrad<kBlockLstmGradOp>)
                   .Doc("LSTMBlockCell over every step of a time-major sequence, gates in the "
                        "order i, ci, f, o."));

FS_REGISTER_OP(SevenOutputs(SequenceInputs(OpBuilder("BlockLSTMV2")))
                   .Attr("cell_clip", 0.0f)
                   .Attr("use_peephole", false)
                   .TypeAttr("T", kLstmTypes)
                   .Shape(BlockLstmShape)
                   .Kernel("CPU", BlockLstmKernel<kIFCO, 0>)
                   .Gradient(BlockLstmGrad<kBlockLstmGradV2Op>)
                   .Doc("BlockLSTM with Keras's gate order i, f, ci, o and no forget_bias (it is "
                        "in b)."));

FS_REGISTER_OP(BlockLstmGradSignature(OpBuilder("BlockLSTMGrad"))
                   .Kernel("CPU", BlockLstmGradKernel<kICFO>)
                   .Doc("The gradient of BlockLSTM over the whole sequence."));

FS_REGISTER_OP(BlockLstmGradSignature(OpBuilder("BlockLSTMGradV2"))
                   .Kernel("CPU", BlockLstmGradKernel<kIFCO>)
                   .Doc("The gradient of BlockLSTMV2 over the whole sequence."));

}  // namespace
}  // namespace flowstone
