#include "optimizer/remapper.h"

#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace flowstone {
namespace {

bool IsActivation(const std::string& type) {
  return type == "Relu" || type == "Relu6" || type == "Elu" || type == "LeakyRelu";
}

bool IsBiasCandidate(const std::string& type) {
  return type == "BiasAdd" || type == "Add" || type == "AddV2";
}

// A batch norm with given statistics (inference) and one dtype (T == U). Fusing it also needs
// its outputs other than y to have no readers (Remapper::OnlyOutputZeroRead).
bool IsInferenceBatchNorm(const Node& n) {
  return n.type().rfind("FusedBatchNorm", 0) == 0 && n.type().find("Grad") == std::string::npos &&
         !n.attrs().GetOr<bool>("is_training", true) && n.num_inputs() == 5 &&
         n.input_type(1) == n.output_type(0);
}

// What may follow the product: a bias or a batch norm.
bool IsScaleCandidate(const Node& n) {
  return IsBiasCandidate(n.type()) || IsInferenceBatchNorm(n);
}

bool FusableDType(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

bool IsAdd(const Node& n) { return n.type() == "AddV2" || n.type() == "Add"; }

// The convolutions that fuse with the tails a Conv2D takes (MobileNet's depthwise ones too).
bool IsConv(const Node& n) { return n.type() == "Conv2D" || n.type() == "DepthwiseConv2dNative"; }

// Readers that need only their input's shape: in training, the gradient of an Add reads the
// shapes of both operands (BroadcastGradientArgs), so an Add used as a bias has Shape readers on
// the product's output. They read the chain's result instead, which has the same shape.
bool ReadsShapeOnly(const Node& n) {
  return (n.type() == "Shape" || n.type() == "Size" || n.type() == "Rank") && n.num_inputs() == 1;
}

struct EndpointHash {
  size_t operator()(const Endpoint& e) const {
    return std::hash<const Node*>()(e.node) * 31 + static_cast<size_t>(e.index);
  }
};

// One chain to fuse: product -> [bias or batch norm] -> [activation], `last` being the node
// replaced; or, when batch norms are folded, Conv2D -> [BiasAdd] -> batch norm -> [activation].
struct Chain {
  const Node* product = nullptr;
  const Node* pre_bias = nullptr;   // a BiasAdd between a Conv2D and its batch norm
  const Node* bias_node = nullptr;  // the bias or batch norm
  std::vector<Endpoint> args;       // its per-channel vectors, as the user's graph names them
  const Node* activation = nullptr;
  const Node* last = nullptr;
  // An exact GELU as the activation: its nodes (the last one is `activation`) and constants.
  std::vector<const Node*> gelu_nodes;
  double gelu_half = 0.5;
  double gelu_scale = 0.0;
  bool gelu_divide = false;
};

// Folds an inference batch norm (and a bias before it) into a convolution's constant filter:
// conv(x, w) + b, normalized, is conv(x, w * gain) + (b - mean) * gain + offset per output
// channel, with gain = scale / sqrt(variance + epsilon) computed in double as FusedBatchNorm's
// kernel does. The filter is HWIO (or a depthwise HWIM) in either data format, so an output
// channel's weights are every `channels`-th element.
template <typename T>
void FoldNormInto(const Tensor& filter, int64_t new_bias_channels, const Tensor* bias,
                  const Tensor* stats[4], double epsilon, Tensor* new_filter, Tensor* new_bias) {
  const int64_t channels = new_bias_channels;
  std::vector<double> gain(channels);
  *new_bias = Tensor::Host(filter.dtype(), TensorShape({channels}));
  T* b = new_bias->data<T>();
  const T* scale = stats[0]->data<T>();
  const T* offset = stats[1]->data<T>();
  const T* mean = stats[2]->data<T>();
  const T* var = stats[3]->data<T>();
  for (int64_t c = 0; c < channels; ++c) {
    gain[c] = scale[c] / std::sqrt(static_cast<double>(var[c]) + epsilon);
    const double added = bias != nullptr ? static_cast<double>(bias->data<T>()[c]) : 0.0;
    b[c] = T((added - mean[c]) * gain[c] + offset[c]);
  }
  *new_filter = Tensor::Host(filter.dtype(), filter.shape());
  const T* w = filter.data<T>();
  T* out = new_filter->data<T>();
  for (int64_t k = 0; k < filter.num_elements(); ++k) out[k] = T(w[k] * gain[k % channels]);
}

class Remapper {
 public:
  Remapper(const OptimizerScope& scope, PlanRewrites* rewrites, bool fold_batch_norms)
      : scope_(scope), rewrites_(*rewrites), graph_(*scope.graph), fold_(fold_batch_norms) {}

  void Run() {
    CountReaders();
    // Chains that end in an activation first, so that a bias followed by one is fused whole.
    // Chains without one are matched from their last node backwards, so that a batch norm after
    // a BiasAdd is folded with it before the BiasAdd alone would be fused (anywhere else, only
    // the first of two scale nodes follows a product, so the order changes nothing).
    const int num_nodes = graph_.num_nodes_unlocked();
    for (const bool activations : {true, false}) {
      for (int k = 0; k < num_nodes; ++k) {
        const int id = activations ? k : num_nodes - 1 - k;
        if (!Live(id)) continue;
        const Node* n = graph_.node_unlocked(id);
        if (used_.count(n)) continue;
        const bool candidate =
            activations ? IsActivation(n->type()) || n->type() == "Mul" : IsScaleCandidate(*n);
        if (!candidate) continue;
        Chain chain;
        if (Match(*n, &chain)) Replace(chain);
      }
    }
    for (int id = 0; id < graph_.num_nodes_unlocked(); ++id) {
      if (Live(id) && graph_.node_unlocked(id)->type() == "BiasAddGrad")
        FuseReluGradBiasAddGrad(*graph_.node_unlocked(id));
    }
    for (int id = 0; id < graph_.num_nodes_unlocked(); ++id) {
      if (Live(id) && graph_.node_unlocked(id)->type() == "MaxPoolGrad")
        PairMaxPoolGrad(*graph_.node_unlocked(id));
    }
    for (int id = 0; id < graph_.num_nodes_unlocked(); ++id) {
      const Node* n = graph_.node_unlocked(id);
      if (Live(id) && !used_.count(n) && IsAdd(*n)) FuseLayerNorm(*n);
    }
  }

 private:
  Endpoint Source(const Endpoint& e) const { return scope_.is_fed(e) ? e : rewrites_.Resolve(e); }

  // A node this plan runs as written, on a host device.
  bool Live(int id) const {
    if (!(*scope_.needed)[id] || !(*scope_.on_host)[id]) return false;
    const Node* n = graph_.node_unlocked(id);
    return rewrites_.Folded(n) == nullptr && !rewrites_.IsForwarded(n) &&
           rewrites_.Replaced(n) == nullptr;
  }

  // How many inputs of the plan's nodes, and fetches, read each endpoint; which nodes something
  // waits for by a control edge.
  void CountReaders() {
    for (int id = 0; id < graph_.num_nodes_unlocked(); ++id) {
      if (!(*scope_.needed)[id]) continue;
      const Node* n = graph_.node_unlocked(id);
      if (rewrites_.Folded(n) != nullptr || rewrites_.IsForwarded(n)) continue;
      for (const Endpoint& in : n->inputs()) {
        ++readers_[Source(in)];
        if (ReadsShapeOnly(*n) && Live(id)) shape_readers_[Source(in)].push_back(n);
      }
      for (const Node* dep : n->control_inputs()) waited_for_.insert(dep);
    }
    for (const Endpoint& e : scope_.fetches) ++readers_[Source(e)];
    for (const Node* t : scope_.targets) waited_for_.insert(t);
  }

  int Readers(const Endpoint& e) const {
    auto it = readers_.find(e);
    return it == readers_.end() ? 0 : it->second;
  }

  // Whether `e` (a Source, output 0) is an intermediate result that can disappear into a fused
  // node read by `reader`: computed by a live node whose other outputs nobody reads, with no
  // control edges either way, on the reader's device, and read once (by `reader`), not fed or
  // fetched.
  bool Intermediate(const Endpoint& e, const Node& reader, int num_readers = 1) const {
    const Node* n = e.node;
    if (n == nullptr || e.index != 0 || scope_.is_fed(e) || !Live(n->id()) || used_.count(n))
      return false;
    if (graph_.node_unlocked(n->id()) != n || !OnlyOutputZeroRead(*n)) return false;
    if (!n->control_inputs().empty() || waited_for_.count(n)) return false;
    if (n->requested_device() != reader.requested_device()) return false;
    return Readers(e) - static_cast<int>(ShapeReaders(e).size()) == num_readers;
  }

  const std::vector<const Node*>& ShapeReaders(const Endpoint& e) const {
    static const std::vector<const Node*> kNone;
    auto it = shape_readers_.find(e);
    return it == shape_readers_.end() ? kNone : it->second;
  }

  bool OnlyOutputZeroRead(const Node& n) const {
    for (int o = 1; o < n.num_outputs(); ++o) {
      const Endpoint e{const_cast<Node*>(&n), o};
      if (Readers(e) != 0 || scope_.is_fed(e)) return false;
    }
    return true;
  }

  // The chain that ends in `last` (an activation, or a bias with no activation after it).
  bool Match(const Node& last, Chain* chain) const {
    chain->last = &last;
    if (scope_.is_fed(Endpoint{const_cast<Node*>(&last), 0})) return false;
    Endpoint product_out;
    if (last.type() == "Mul") {
      Endpoint in;
      // TensorFlow's GeluExact follows a bias only.
      if (!MatchGelu(last, chain, &in) || !IsBiasCandidate(in.node->type())) return false;
      chain->bias_node = in.node;
    } else if (IsActivation(last.type())) {
      chain->activation = &last;
      const Endpoint in = Source(last.input(0));
      if (!Intermediate(in, last)) return false;
      if (IsScaleCandidate(*in.node)) {
        chain->bias_node = in.node;
      } else {
        product_out = in;
      }
    } else {
      chain->bias_node = &last;
      // The replaced node's other outputs (a batch norm's statistics) are not computed.
      if (!OnlyOutputZeroRead(last)) return false;
    }
    if (chain->bias_node != nullptr && !MatchBias(*chain->bias_node, chain, &product_out))
      return false;
    // Conv2D -> BiasAdd -> batch norm (Keras's convolutions with use_bias before a
    // BatchNormalization) fuses only by folding the batch norm into the filter.
    if (fold_ && chain->bias_node != nullptr && IsInferenceBatchNorm(*chain->bias_node) &&
        product_out.node != nullptr && product_out.node->type() == "BiasAdd" &&
        Intermediate(product_out, *chain->bias_node)) {
      chain->pre_bias = product_out.node;
      product_out = Source(chain->pre_bias->input(0));
    }
    const Node& reader = chain->pre_bias != nullptr    ? *chain->pre_bias
                         : chain->bias_node != nullptr ? *chain->bias_node
                                                       : last;
    if (!Intermediate(product_out, reader)) return false;
    const Node* product = product_out.node;
    if (!IsConv(*product) && product->type() != "MatMul") return false;
    if (!FusableDType(product->output_type(0)) || product->is_stateful()) return false;
    chain->product = product;
    const DType dtype = product->output_type(0);
    if (last.output_type(0) != dtype) return false;
    // An activation alone fuses into a convolution only (a CNN's Conv2D -> Relu without a bias);
    // like TensorFlow's remapper, a MatMul fuses with a bias, so traces of MatMul -> Relu keep
    // showing both nodes.
    if (chain->bias_node == nullptr) return IsConv(*product);
    // The bias must add along the product's channels: its last dimension, or the second one for
    // an NCHW convolution with an NCHW BiasAdd.
    const bool nchw_conv =
        IsConv(*product) && product->attrs().GetOr<std::string>("data_format", "NHWC") == "NCHW";
    const Node& bias_node = *chain->bias_node;
    if (IsInferenceBatchNorm(bias_node)) {
      // FusedBatchNorm takes rank-4 inputs in the convolution's layout.
      const bool nchw_norm = bias_node.attrs().GetOr<std::string>("data_format", "NHWC") == "NCHW";
      if (chain->pre_bias != nullptr && (chain->pre_bias->attrs().GetOr<std::string>(
                                             "data_format", "NHWC") == "NCHW") != nchw_conv) {
        return false;
      }
      return IsConv(*product) && nchw_norm == nchw_conv;
    }
    if (bias_node.type() == "BiasAdd") {
      const bool nchw_bias = bias_node.attrs().GetOr<std::string>("data_format", "NHWC") == "NCHW";
      // A rank-2 BiasAdd adds along dimension 1 in either format.
      if (IsConv(*product) && nchw_bias != nchw_conv) return false;
      return true;
    }
    if (nchw_conv) return false;  // an Add of a vector adds along the last dimension
    const PartialShape& out = product->output_shape(0);
    const PartialShape& bias = chain->args[0].node->output_shape(chain->args[0].index);
    if (!out.known_rank() || out.rank() < 1 || !bias.known_rank() || bias.rank() != 1) return false;
    const int64_t channels = out.dim(out.rank() - 1);
    return channels >= 0 && bias.dim(0) == channels;
  }

  // The value of a single-element constant of `dtype` whose broadcasting cannot change the shape
  // of a rank-2 operand.
  bool ScalarConstant(const Endpoint& e, DType dtype, double* value) const {
    Tensor t;
    if (!ConstantValue(e, &t) || t.dtype() != dtype || t.num_elements() != 1 || t.rank() > 2)
      return false;
    *value = dtype == DType::kFloat32 ? double(t.data<float>()[0]) : t.data<double>()[0];
    return true;
  }

  // Whether `last` ends BERT's exact GELU of a rank-2 float y, (y * half) * (1 + erf(y * scale))
  // or with y / scale inside (operands of Mul and Add in either order); sets `*y` and the
  // chain's GELU fields. y itself must be read by the two GELU nodes alone.
  bool MatchGelu(const Node& last, Chain* chain, Endpoint* y) const {
    const DType dtype = last.output_type(0);
    if (!FusableDType(dtype) || !last.control_inputs().empty() || last.num_inputs() != 2)
      return false;
    for (int k = 0; k < 2; ++k) {
      const Endpoint half_out = Source(last.input(k)), add_out = Source(last.input(1 - k));
      if (!Part(half_out, last, "Mul") || !Part(add_out, last, "Add")) continue;
      const Node& half_mul = *half_out.node;
      const Node& add = *add_out.node;
      for (int h = 0; h < 2; ++h) {
        for (int a = 0; a < 2; ++a) {
          double half, one, scale;
          const Endpoint erf_out = Source(add.input(1 - a));
          if (!ScalarConstant(half_mul.input(1 - h), dtype, &half) ||
              !ScalarConstant(add.input(a), dtype, &one) || one != 1.0 ||
              !Part(erf_out, add, "Erf")) {
            continue;
          }
          const Endpoint candidate = Source(half_mul.input(h));
          const Endpoint inner_out = Source(erf_out.node->input(0));
          const Node* inner = inner_out.node;
          if (inner == nullptr || !Part(inner_out, *erf_out.node, inner->type().c_str())) continue;
          bool divide = false;
          bool found = false;
          if (inner->type() == "Mul") {
            for (int m = 0; m < 2 && !found; ++m) {
              found = Source(inner->input(m)) == candidate &&
                      ScalarConstant(inner->input(1 - m), dtype, &scale);
            }
          } else if (inner->type() == "RealDiv" || inner->type() == "Div") {
            divide = true;
            found = Source(inner->input(0)) == candidate &&
                    ScalarConstant(inner->input(1), dtype, &scale);
          }
          if (!found || !Intermediate(candidate, last, 2)) continue;
          const PartialShape& shape = candidate.node->output_shape(candidate.index);
          if (!shape.known_rank() || shape.rank() != 2) continue;
          *y = candidate;
          chain->activation = &last;
          chain->gelu_nodes = {&half_mul, inner, erf_out.node, &add, &last};
          chain->gelu_half = half;
          chain->gelu_scale = scale;
          chain->gelu_divide = divide;
          return true;
        }
      }
    }
    return false;
  }

  // Splits a bias or batch norm node into the product's output and the per-channel vectors.
  bool MatchBias(const Node& bias_node, Chain* chain, Endpoint* product_out) const {
    if (!bias_node.control_inputs().empty()) return false;
    if (bias_node.type() == "BiasAdd" || IsInferenceBatchNorm(bias_node)) {
      *product_out = Source(bias_node.input(0));
      for (int k = 1; k < bias_node.num_inputs(); ++k) chain->args.push_back(bias_node.input(k));
      return true;
    }
    // Add(product, bias) or Add(bias, product): addition of two floats is commutative.
    for (int k = 0; k < 2; ++k) {
      const Endpoint p = Source(bias_node.input(k));
      if (p.node != nullptr && (IsConv(*p.node) || p.node->type() == "MatMul")) {
        *product_out = p;
        chain->args.push_back(bias_node.input(1 - k));
        return true;
      }
    }
    return false;
  }

  // The value of `e` when the plan holds it as a constant: a Const's, or a folded node's.
  bool ConstantValue(const Endpoint& e, Tensor* value) const {
    const Endpoint s = Source(e);
    if (s.node == nullptr || scope_.is_fed(s)) return false;
    if (const std::vector<Tensor>* folded = rewrites_.Folded(s.node)) {
      *value = (*folded)[s.index];
      return true;
    }
    if (s.node->type() != "Const" || !s.node->control_inputs().empty()) return false;
    *value = std::get<Tensor>(*s.node->attrs().Find("value"));
    return true;
  }

  // The filter and bias of `chain`'s convolution with its batch norm (and the bias before it)
  // folded in, when they are all constants of the convolution's dtype and channel count.
  bool FoldNorm(const Chain& chain, std::vector<Tensor>* constants) const {
    const DType dtype = chain.product->output_type(0);
    Tensor filter, bias, stats[4];
    if (!ConstantValue(chain.product->input(1), &filter) || filter.dtype() != dtype ||
        filter.rank() != 4) {
      return false;
    }
    // A depthwise filter is [rows, cols, in, multiplier]: output channel i * multiplier + m.
    const int64_t channels =
        chain.product->type() == "Conv2D" ? filter.dim(3) : filter.dim(2) * filter.dim(3);
    auto vector_ok = [&](const Tensor& t) {
      return t.dtype() == dtype && t.rank() == 1 && t.dim(0) == channels;
    };
    if (chain.pre_bias != nullptr &&
        (!ConstantValue(chain.pre_bias->input(1), &bias) || !vector_ok(bias))) {
      return false;
    }
    const Tensor* stat_ptrs[4];
    for (int k = 0; k < 4; ++k) {
      if (!ConstantValue(chain.args[k], &stats[k]) || !vector_ok(stats[k])) return false;
      stat_ptrs[k] = &stats[k];
    }
    const double epsilon = chain.bias_node->attrs().GetOr<double>("epsilon", 1e-4);
    Tensor new_filter, new_bias;
    const Tensor* pre = chain.pre_bias != nullptr ? &bias : nullptr;
    if (dtype == DType::kFloat32) {
      FoldNormInto<float>(filter, channels, pre, stat_ptrs, epsilon, &new_filter, &new_bias);
    } else {
      FoldNormInto<double>(filter, channels, pre, stat_ptrs, epsilon, &new_filter, &new_bias);
    }
    *constants = {std::move(new_filter), std::move(new_bias)};
    return true;
  }

  void Replace(const Chain& chain) {
    const Node& product = *chain.product;
    const bool conv = product.type() == "Conv2D";
    const bool depthwise = product.type() == "DepthwiseConv2dNative";
    bool norm = chain.bias_node != nullptr && IsInferenceBatchNorm(*chain.bias_node);
    std::vector<Tensor> constants;
    const bool folded = norm && fold_ && FoldNorm(chain, &constants);
    if (chain.pre_bias != nullptr && !folded) return;
    if (folded) norm = false;  // the fused node adds the folded bias
    std::vector<std::string> fused_ops;
    if (chain.bias_node != nullptr) fused_ops.push_back(norm ? "FusedBatchNorm" : "BiasAdd");
    const bool gelu = !chain.gelu_nodes.empty();
    if (chain.activation != nullptr)
      fused_ops.push_back(gelu ? "GeluExact" : chain.activation->type());
    std::vector<Endpoint> inputs = {product.input(0)};
    if (!folded) {
      inputs.push_back(product.input(1));
      inputs.insert(inputs.end(), chain.args.begin(), chain.args.end());
    }

    AttrMap attrs;
    for (const auto& [name, value] : product.attrs().entries()) attrs.Set(name, value);
    if (norm) attrs.Set("epsilon", *chain.bias_node->attrs().Find("epsilon"));
    const int64_t num_args = folded ? 1 : static_cast<int64_t>(chain.args.size());
    attrs.Set("num_args", num_args);
    if (conv) {
      attrs.Set("TArgs", std::vector<DType>(num_args, product.output_type(0)));
      attrs.Set("num_host_args", int64_t{0});
    }
    attrs.Set("fused_ops", fused_ops);
    // A convolution's kernel keeps its constant filter reordered into oneDNN's layout.
    Tensor filter;
    if ((conv || depthwise) && (folded || ConstantValue(product.input(1), &filter))) {
      attrs.Set("_constant_filter", true);
    }
    if (chain.activation != nullptr && chain.activation->type() == "LeakyRelu") {
      attrs.Set("leakyrelu_alpha", chain.activation->attrs().GetOr<double>("alpha", 0.2));
    }
    if (gelu) {
      attrs.Set("_gelu_half", chain.gelu_half);
      attrs.Set("_gelu_scale", chain.gelu_scale);
      attrs.Set("_gelu_divide", chain.gelu_divide);
    }
    const Node& last = *chain.last;
    const Node* fused =
        MakeFused(last,
                  conv        ? "_FusedConv2D"
                  : depthwise ? "_FusedDepthwiseConv2dNative"
                              : "_FusedMatMul",
                  inputs, constants, attrs,
                  StrCat(product.id(), ",", chain.bias_node ? chain.bias_node->id() : -1,
                         folded ? ",folded" : ""));
    if (fused == nullptr) return;
    used_.insert(&product);
    if (chain.pre_bias != nullptr) used_.insert(chain.pre_bias);
    if (chain.bias_node != nullptr) used_.insert(chain.bias_node);
    used_.insert(&last);
    for (const Node* n : chain.gelu_nodes) used_.insert(n);
    rewrites_.Replace(&last, Replacement{fused, std::move(inputs), std::move(constants)});
    // The intermediates' shape readers read the result, so that the intermediates never run.
    std::vector<Endpoint> intermediates = {Endpoint{const_cast<Node*>(&product), 0}};
    if (chain.pre_bias != nullptr)
      intermediates.push_back(Endpoint{const_cast<Node*>(chain.pre_bias), 0});
    if (chain.bias_node != nullptr && chain.bias_node != &last)
      intermediates.push_back(Endpoint{const_cast<Node*>(chain.bias_node), 0});
    for (const Endpoint& e : intermediates) {
      for (const Node* reader : ShapeReaders(e)) {
        rewrites_.Replace(reader, Replacement{reader, {Endpoint{const_cast<Node*>(&last), 0}}});
      }
    }
  }

  // Backward: BiasAddGrad(ReluGrad(g, y)) becomes output 1 of a _ReluGradBiasAddGrad that
  // replaces the ReluGrad, whose output keeps its other readers (the product's gradients).
  void FuseReluGradBiasAddGrad(const Node& bias_grad) {
    const Endpoint in = Source(bias_grad.input(0));
    const Node* relu_grad = in.node;
    if (relu_grad == nullptr || relu_grad->type() != "ReluGrad" || in.index != 0 ||
        scope_.is_fed(in) || !Live(relu_grad->id()) || used_.count(relu_grad) ||
        graph_.node_unlocked(relu_grad->id()) != relu_grad) {
      return;
    }
    const Endpoint out{const_cast<Node*>(&bias_grad), 0};
    if (!bias_grad.control_inputs().empty() || !relu_grad->control_inputs().empty() ||
        scope_.is_fed(out) || waited_for_.count(&bias_grad) ||
        bias_grad.requested_device() != relu_grad->requested_device() ||
        !FusableDType(relu_grad->output_type(0)) ||
        bias_grad.output_type(0) != relu_grad->output_type(0)) {
      return;
    }
    AttrMap attrs;
    attrs.Set("T", relu_grad->output_type(0));
    attrs.Set("data_format", bias_grad.attrs().GetOr<std::string>("data_format", "NHWC"));
    std::vector<Endpoint> inputs = {relu_grad->input(0), relu_grad->input(1)};
    const Node* fused =
        MakeFused(*relu_grad, "_ReluGradBiasAddGrad", inputs, {}, attrs,
                  StrCat(bias_grad.id(), ";", AttrValueToString(*attrs.Find("data_format"))));
    if (fused == nullptr) return;
    used_.insert(relu_grad);
    used_.insert(&bias_grad);
    rewrites_.Replace(relu_grad, Replacement{fused, std::move(inputs)});
    rewrites_.Forward(&bias_grad, {Endpoint{const_cast<Node*>(relu_grad), 1}});
  }

  // MaxPoolGrad(x, MaxPool(x), dy), float32 NHWC, as _MaxPoolGradWithWorkspace reading the
  // workspace of the MaxPool run as _MaxPoolWithWorkspace (src/ops/pooling_ops.cc): the gradient
  // then does not read x again. The MaxPool keeps its other readers (the next layer); several
  // gradients of one MaxPool share its workspace.
  void PairMaxPoolGrad(const Node& grad) {
    const Endpoint pooled = Source(grad.input(1));
    const Node* pool = pooled.node;
    if (pool == nullptr || pool->type() != "MaxPool" || pooled.index != 0 ||
        scope_.is_fed(pooled) || graph_.node_unlocked(pool->id()) != pool) {
      return;
    }
    const Replacement* paired = rewrites_.Replaced(pool);
    if (paired == nullptr ? !Live(pool->id()) || used_.count(pool)
                          : paired->node->type() != "_MaxPoolWithWorkspace") {
      return;
    }
    static const char* const kWindowAttrs[] = {"ksize", "strides", "padding", "explicit_paddings",
                                               "data_format"};
    AttrMap attrs;
    attrs.Set("T", DType::kFloat32);
    for (const char* name : kWindowAttrs) {
      const AttrValue* mine = pool->attrs().Find(name);
      const AttrValue* theirs = grad.attrs().Find(name);
      if ((mine == nullptr) != (theirs == nullptr)) return;
      if (mine == nullptr) continue;
      if (AttrValueToString(*mine) != AttrValueToString(*theirs)) return;
      attrs.Set(name, *mine);
    }
    int64_t taps = 1;
    for (int64_t k : pool->attrs().GetOr<std::vector<int64_t>>("ksize", {})) taps *= k;
    if (Source(grad.input(0)) != Source(pool->input(0)) || !grad.control_inputs().empty() ||
        pool->output_type(0) != DType::kFloat32 || grad.output_type(0) != DType::kFloat32 ||
        grad.requested_device() != pool->requested_device() ||
        pool->attrs().GetOr<std::string>("data_format", "NHWC") != "NHWC" || taps > 256 ||
        scope_.is_fed(Endpoint{const_cast<Node*>(&grad), 0})) {
      return;
    }
    if (paired == nullptr) {
      const std::vector<Endpoint> pool_inputs = {pool->input(0)};
      const Node* fused =
          MakeFused(*pool, "_MaxPoolWithWorkspace", pool_inputs, {}, attrs, StrCat(pool->id()));
      if (fused == nullptr) return;
      used_.insert(pool);
      rewrites_.Replace(pool, Replacement{fused, pool_inputs});
    }
    std::vector<Endpoint> inputs = {grad.input(0), Endpoint{const_cast<Node*>(pool), 1},
                                    grad.input(2)};
    const Node* fused =
        MakeFused(grad, "_MaxPoolGradWithWorkspace", inputs, {}, attrs, StrCat(grad.id()));
    if (fused == nullptr) return;  // the MaxPool, paired or not, computes the same output
    used_.insert(&grad);
    rewrites_.Replace(&grad, Replacement{fused, std::move(inputs)});
  }

  // The node whose outputs `e` names in this plan: a replaced node's replacement, which may have
  // more outputs than the node (_MaxPoolWithWorkspace's workspace), or the node itself.
  const Node& Producer(const Endpoint& e) const {
    const Replacement* r = rewrites_.Replaced(e.node);
    return r != nullptr ? *r->node : *e.node;
  }

  // Node `e.node` if it is a live intermediate of type `type` (Add: either Add op) read by
  // `reader` (`num_readers` times in all, and by no Shape: a layer norm's mean does not have the
  // result's shape), else null. The parts of the GELU and layer norm chains.
  const Node* Part(const Endpoint& e, const Node& reader, const char* type,
                   int num_readers = 1) const {
    const Node* n = e.node;
    if (n == nullptr || (n->type() != type && !(std::string(type) == "Add" && IsAdd(*n))))
      return nullptr;
    return Intermediate(e, reader, num_readers) && ShapeReaders(e).empty() &&
                   n->control_inputs().empty()
               ? n
               : nullptr;
  }

  // Whether `mean` is a Mean over the last axis of a rank-`rank` input, keeping dimensions.
  bool MeanOverLastAxis(const Node& mean, int rank) const {
    Tensor axes;
    if (!mean.attrs().GetOr<bool>("keep_dims", false) || !ConstantValue(mean.input(1), &axes) ||
        axes.num_elements() != 1 || axes.rank() > 1) {
      return false;
    }
    int64_t axis;
    if (axes.dtype() == DType::kInt32) {
      axis = axes.data<int32_t>()[0];
    } else if (axes.dtype() == DType::kInt64) {
      axis = axes.data<int64_t>()[0];
    } else {
      return false;
    }
    return axis == -1 || axis == rank - 1;
  }

  // A layer norm ending in `last`, as tf.nn.moments and BERT's formula write it:
  //   mean = Mean(x, -1), var = Mean(SquaredDifference(x, mean), -1),
  //   last = (Sub(x, mean) * Rsqrt(var + epsilon)) * scale + offset
  // (the operands of Mul, Add and SquaredDifference in either order), of a float x whose last
  // dimension is known, runs as one _FusedLayerNorm(x, scale, offset) with the same bits.
  void FuseLayerNorm(const Node& last) {
    const DType dtype = last.output_type(0);
    if (!FusableDType(dtype) || !last.control_inputs().empty() || last.num_inputs() != 2 ||
        scope_.is_fed(Endpoint{const_cast<Node*>(&last), 0})) {
      return;
    }
    for (int a = 0; a < 2; ++a) {
      const Node* scaled = Part(Source(last.input(a)), last, "Mul");
      if (scaled == nullptr) continue;
      for (int b = 0; b < 2; ++b) {
        const Node* normed = Part(Source(scaled->input(b)), *scaled, "Mul");
        if (normed == nullptr) continue;
        for (int c = 0; c < 2; ++c) {
          const Node* sub = Part(Source(normed->input(c)), *normed, "Sub");
          const Node* rsqrt = Part(Source(normed->input(1 - c)), *normed, "Rsqrt");
          if (sub == nullptr || rsqrt == nullptr) continue;
          std::vector<const Node*> nodes = {&last, scaled, normed, sub, rsqrt};
          Endpoint inputs[3] = {sub->input(0), scaled->input(1 - b), last.input(1 - a)};
          double epsilon;
          if (MatchMoments(*sub, *rsqrt, dtype, &nodes, &epsilon) &&
              ReplaceLayerNorm(last, nodes, inputs, epsilon)) {
            return;
          }
        }
      }
    }
  }

  // The moments of a layer norm whose centered input is `sub` and whose Rsqrt is `rsqrt`.
  bool MatchMoments(const Node& sub, const Node& rsqrt, DType dtype,
                    std::vector<const Node*>* nodes, double* epsilon) const {
    const Endpoint x = Source(sub.input(0));
    const Endpoint mean_out = Source(sub.input(1));
    const Node* add = Part(Source(rsqrt.input(0)), rsqrt, "Add");
    if (add == nullptr || x.node == nullptr) return false;
    const PartialShape& shape = x.node->output_shape(x.index);
    if (!shape.known_rank() || shape.rank() < 1 || shape.dim(shape.rank() - 1) < 1 ||
        x.node->output_type(x.index) != dtype) {
      return false;
    }
    for (int e = 0; e < 2; ++e) {
      const Node* var = Part(Source(add->input(e)), *add, "Mean");
      if (var == nullptr || !ScalarConstant(add->input(1 - e), dtype, epsilon)) continue;
      const Node* sq = Part(Source(var->input(0)), *var, "SquaredDifference");
      if (sq == nullptr || !MeanOverLastAxis(*var, shape.rank())) continue;
      const Endpoint s0 = Source(sq->input(0)), s1 = Source(sq->input(1));
      if (!((s0 == x && s1 == mean_out) || (s0 == mean_out && s1 == x))) continue;
      const Node* mean = Part(mean_out, sub, "Mean", 2);
      if (mean == nullptr || !(Source(mean->input(0)) == x) ||
          !MeanOverLastAxis(*mean, shape.rank())) {
        continue;
      }
      nodes->insert(nodes->end(), {add, var, sq, mean});
      return true;
    }
    return false;
  }

  // Replaces `nodes[0]` by _FusedLayerNorm(x, scale, offset) when scale and offset are vectors
  // as long as x's last dimension.
  bool ReplaceLayerNorm(const Node& last, const std::vector<const Node*>& nodes,
                        const Endpoint (&inputs)[3], double epsilon) {
    const PartialShape& x = inputs[0].node->output_shape(inputs[0].index);
    const int64_t n = x.dim(x.rank() - 1);
    for (int k = 1; k < 3; ++k) {
      const PartialShape& v = inputs[k].node->output_shape(inputs[k].index);
      if (!v.known_rank() || v.rank() != 1 || v.dim(0) != n ||
          inputs[k].node->output_type(inputs[k].index) != last.output_type(0)) {
        return false;
      }
    }
    AttrMap attrs;
    attrs.Set("T", last.output_type(0));
    attrs.Set("epsilon", epsilon);
    std::vector<Endpoint> fused_inputs(inputs, inputs + 3);
    const Node* fused = MakeFused(last, "_FusedLayerNorm", fused_inputs, {}, attrs,
                                  StrCat(nodes[3]->id(), ",", nodes.back()->id()));
    if (fused == nullptr) return false;
    for (const Node* n : nodes) used_.insert(n);
    rewrites_.Replace(&last, Replacement{fused, std::move(fused_inputs)});
    return true;
  }

  // The fused node `op` that stands for `last`, reading `inputs` then `constants`, made on first
  // use.
  const Node* MakeFused(const Node& last, const std::string& op,
                        const std::vector<Endpoint>& inputs, const std::vector<Tensor>& constants,
                        const AttrMap& attrs, const std::string& key) {
    std::string signature = op + ";" + key;
    for (const auto& [name, value] : attrs.entries())
      signature += StrCat(";", name, "=", AttrValueToString(value));
    return scope_.fusions->Get(&last, signature, [&](Graph* g) -> const Node* {
      // One placeholder per input, with its dtype and static shape, so that the fused node's
      // shape inference sees what the user's nodes saw.
      std::vector<Endpoint> placeholders;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const Endpoint& in = inputs[k];
        NodeSpec spec;
        spec.name = StrCat(in.node->name(), "_", in.index, "_", k);
        spec.op = "Placeholder";
        spec.attrs.Set("dtype", Producer(in).output_type(in.index));
        spec.attrs.Set("shape", Producer(in).output_shape(in.index));
        StatusOr<Node*> p = g->AddNode(std::move(spec));
        if (!p.ok()) return nullptr;
        placeholders.push_back({*p, 0});
      }
      for (size_t k = 0; k < constants.size(); ++k) {
        NodeSpec spec;
        spec.name = StrCat(last.name(), "_folded_", k);
        spec.op = "Placeholder";
        spec.attrs.Set("dtype", constants[k].dtype());
        spec.attrs.Set("shape", PartialShape(constants[k].shape()));
        StatusOr<Node*> p = g->AddNode(std::move(spec));
        if (!p.ok()) return nullptr;
        placeholders.push_back({*p, 0});
      }
      NodeSpec spec;
      spec.name = last.name();
      spec.op = op;
      spec.inputs = placeholders;
      spec.attrs = attrs;
      spec.device = last.requested_device();
      spec.creation_site = last.creation_site();
      StatusOr<Node*> node = g->AddNode(std::move(spec));
      return node.ok() ? *node : nullptr;
    });
  }

  const OptimizerScope& scope_;
  PlanRewrites& rewrites_;
  const Graph& graph_;
  std::unordered_map<Endpoint, int, EndpointHash> readers_;
  std::unordered_map<Endpoint, std::vector<const Node*>, EndpointHash> shape_readers_;
  std::unordered_set<const Node*> waited_for_;
  std::unordered_set<const Node*> used_;
  const bool fold_;
};

}  // namespace

void FuseProducts(const OptimizerScope& scope, PlanRewrites* rewrites, bool fold_batch_norms) {
  if (scope.fusions == nullptr) return;
  Remapper(scope, rewrites, fold_batch_norms).Run();
}

}  // namespace flowstone
