// The element-wise optimizer update rules beyond the first six (those are in
// src/ops/training_ops.cc): Adadelta, AdaMax, the proximal and dual-averaging rules, FTRL and the
// sign-based AddSign/PowerSign. Each is a row of kUpdateRules: its TensorFlow signature and a
// per-element function; one kernel locks the variables, checks the inputs and applies the row's
// function to every element. Rows that TensorFlow also has in row-sparse form
// (ResourceSparseApply*) register that op too, applying the same function to indexed rows.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/optimizer_support.h"

namespace flowstone {
namespace {

template <typename T>
T Sign(T x) {
  return T((x > T(0)) - (x < T(0)));
}

// One element's update: `v` are the variable and its slots (the op's resource inputs in order),
// `g` the gradient element and `s` the scalar hyper-parameters in the op's input order. `flag`
// is the row's boolean attr, when it has one.
template <typename T>
using RuleFn = void (*)(T* const* v, int64_t i, T g, const T* s, bool flag);

// s = {lr, rho, epsilon}; v = {var, accum, accum_update}.
struct Adadelta {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T lr = s[0], rho = s[1], epsilon = s[2];
    T& accum = v[1][i];
    T& accum_update = v[2][i];
    accum = accum * rho + g * g * (T(1) - rho);
    const T update = std::sqrt(accum_update + epsilon) / std::sqrt(accum + epsilon) * g;
    v[0][i] -= update * lr;
    accum_update = accum_update * rho + update * update * (T(1) - rho);
  }
};

// s = {beta1_power, lr, beta1, beta2, epsilon}; v = {var, m, v}.
struct AdaMax {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T beta1_power = s[0], lr = s[1], beta1 = s[2], beta2 = s[3], epsilon = s[4];
    T& m = v[1][i];
    T& u = v[2][i];
    m += (g - m) * (T(1) - beta1);
    u = std::max(beta2 * u, std::abs(g));
    v[0][i] -= lr / (T(1) - beta1_power) * (m / (u + epsilon));
  }
};

// The proximal step shared by the proximal rules: shrink `prox` by lr * l1 towards zero, then
// scale by 1 / (1 + lr * l2).
template <typename T>
T ProximalStep(T prox, T lr, T l1, T l2) {
  return Sign(prox) * std::max(std::abs(prox) - lr * l1, T(0)) / (T(1) + lr * l2);
}

// s = {alpha, l1, l2}; v = {var}.
struct ProximalGradientDescent {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T alpha = s[0], l1 = s[1], l2 = s[2];
    v[0][i] = ProximalStep(v[0][i] - alpha * g, alpha, l1, l2);
  }
};

// s = {lr, l1, l2}; v = {var, accum}.
struct ProximalAdagrad {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T l1 = s[1], l2 = s[2];
    T& accum = v[1][i];
    accum += g * g;
    const T lr = s[0] / std::sqrt(accum);
    v[0][i] = ProximalStep(v[0][i] - lr * g, lr, l1, l2);
  }
};

// s = {lr, l1, l2, global_step}; v = {var, gradient_accumulator, gradient_squared_accumulator}.
struct AdagradDA {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T lr = s[0], l1 = s[1], l2 = s[2], step = s[3];
    T& sum = v[1][i];
    T& sum_sq = v[2][i];
    sum += g;
    sum_sq += g * g;
    const T shrunk = Sign(-sum) * std::max(std::abs(sum) - l1 * step, T(0));
    v[0][i] = shrunk * lr / (l2 * step * lr + std::sqrt(sum_sq));
  }
};

// The FTRL-proximal step once the gradient (with any shrinkage) is known; `multiply_by_lr` is the
// ops' multiply_linear_by_lr attr, which keeps `linear` scaled by the learning rate.
template <typename T>
void FtrlStep(T* const* v, int64_t i, T g, T shrinkage_g, T lr, T l1, T l2, T lr_power,
              bool multiply_by_lr) {
  T& var = v[0][i];
  T& accum = v[1][i];
  T& linear = v[2][i];
  const T accum_new = accum + g * g;
  const T power_new = std::pow(accum_new, -lr_power);
  const T power_old = std::pow(accum, -lr_power);
  if (multiply_by_lr) {
    linear += shrinkage_g * lr - (power_new - power_old) * var;
    const T quadratic = power_new + T(2) * l2 * lr;
    const T l1_lr = l1 * lr;
    var = std::abs(linear) > l1_lr ? (Sign(linear) * l1_lr - linear) / quadratic : T(0);
  } else {
    linear += shrinkage_g - (power_new - power_old) / lr * var;
    const T quadratic = power_new / lr + T(2) * l2;
    var = std::abs(linear) > l1 ? (Sign(linear) * l1 - linear) / quadratic : T(0);
  }
  accum = accum_new;
}

// s = {lr, l1, l2, lr_power}; v = {var, accum, linear}.
struct Ftrl {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool multiply_by_lr) {
    FtrlStep(v, i, g, g, s[0], s[1], s[2], s[3], multiply_by_lr);
  }
};

// s = {lr, l1, l2, l2_shrinkage, lr_power}; v = {var, accum, linear}. The shrinkage enters the
// linear term only; the accumulator sums the plain gradient's squares.
struct FtrlV2 {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool multiply_by_lr) {
    const T shrinkage_g = g + T(2) * s[3] * v[0][i];
    FtrlStep(v, i, g, shrinkage_g, s[0], s[1], s[2], s[4], multiply_by_lr);
  }
};

// s = {lr, alpha, sign_decay, beta}; v = {var, m}.
struct AddSign {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T lr = s[0], alpha = s[1], sign_decay = s[2], beta = s[3];
    T& m = v[1][i];
    m = m * beta + g * (T(1) - beta);
    v[0][i] -= lr * (alpha + sign_decay * Sign(g) * Sign(m)) * g;
  }
};

// s = {lr, logbase, sign_decay, beta}; v = {var, m}.
struct PowerSign {
  template <typename T>
  static void Apply(T* const* v, int64_t i, T g, const T* s, bool) {
    const T lr = s[0], logbase = s[1], sign_decay = s[2], beta = s[3];
    T& m = v[1][i];
    m = m * beta + g * (T(1) - beta);
    v[0][i] -= lr * std::exp(logbase * sign_decay * Sign(g) * Sign(m)) * g;
  }
};

struct UpdateRuleRow {
  const char* name;
  const char* sparse_name;  // TensorFlow's row-sparse variant (indexed rows), or nullptr
  std::vector<std::string> resources;
  // Inputs after the resources, of type T unless written "name:type" (those come last).
  std::vector<std::string> inputs;
  const char* grad;       // which of `inputs` is the gradient
  const char* flag_attr;  // a boolean attr passed to the rule, or nullptr
  RuleFn<float> apply_float;
  RuleFn<double> apply_double;
  const char* doc;
};

#define FS_RULE(Rule) &Rule::Apply<float>, &Rule::Apply<double>

const UpdateRuleRow kUpdateRules[] = {
    {"ResourceApplyAdadelta",
     "ResourceSparseApplyAdadelta",
     {"var", "accum", "accum_update"},
     {"lr", "rho", "epsilon", "grad"},
     "grad",
     nullptr,
     FS_RULE(Adadelta),
     "accum = rho * accum + (1 - rho) * g^2; update = sqrt(accum_update + epsilon) / "
     "sqrt(accum + epsilon) * g; var -= lr * update; accum_update = rho * accum_update + "
     "(1 - rho) * update^2"},
    {"ResourceApplyAdaMax",
     nullptr,
     {"var", "m", "v"},
     {"beta1_power", "lr", "beta1", "beta2", "epsilon", "grad"},
     "grad",
     nullptr,
     FS_RULE(AdaMax),
     "m += (g - m)(1 - beta1); v = max(beta2 * v, |g|); var -= lr / (1 - beta1_power) * m / "
     "(v + epsilon)"},
    {"ResourceApplyProximalGradientDescent",
     "ResourceSparseApplyProximalGradientDescent",
     {"var"},
     {"alpha", "l1", "l2", "delta"},
     "delta",
     nullptr,
     FS_RULE(ProximalGradientDescent),
     "prox = var - alpha * delta; var = sign(prox) * max(|prox| - alpha * l1, 0) / "
     "(1 + alpha * l2)"},
    {"ResourceApplyProximalAdagrad",
     "ResourceSparseApplyProximalAdagrad",
     {"var", "accum"},
     {"lr", "l1", "l2", "grad"},
     "grad",
     nullptr,
     FS_RULE(ProximalAdagrad),
     "accum += g^2; the proximal gradient step of ResourceApplyProximalGradientDescent with "
     "alpha = lr / sqrt(accum)"},
    {"ResourceApplyAdagradDA",
     "ResourceSparseApplyAdagradDA",
     {"var", "gradient_accumulator", "gradient_squared_accumulator"},
     {"grad", "lr", "l1", "l2", "global_step:int64"},
     "grad",
     nullptr,
     FS_RULE(AdagradDA),
     "Adagrad dual averaging: sum += g; sum_sq += g^2; var = sign(-sum) * max(|sum| - l1 * "
     "step, 0) * lr / (l2 * step * lr + sqrt(sum_sq))"},
    {"ResourceApplyFtrl",
     "ResourceSparseApplyFtrl",
     {"var", "accum", "linear"},
     {"grad", "lr", "l1", "l2", "lr_power"},
     "grad",
     "multiply_linear_by_lr",
     FS_RULE(Ftrl),
     "FTRL-proximal: accum_new = accum + g^2; linear += g - (accum_new^-p - accum^-p) / lr * var; "
     "var = (sign(linear) * l1 - linear) / (accum_new^-p / lr + 2 l2) where |linear| > l1, "
     "else 0"},
    {"ResourceApplyFtrlV2",
     "ResourceSparseApplyFtrlV2",
     {"var", "accum", "linear"},
     {"grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"},
     "grad",
     "multiply_linear_by_lr",
     FS_RULE(FtrlV2),
     "ResourceApplyFtrl with g + 2 * l2_shrinkage * var in the linear term"},
    {"ResourceApplyAddSign",
     nullptr,
     {"var", "m"},
     {"lr", "alpha", "sign_decay", "beta", "grad"},
     "grad",
     nullptr,
     FS_RULE(AddSign),
     "m = beta * m + (1 - beta) * g; var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g"},
    {"ResourceApplyPowerSign",
     nullptr,
     {"var", "m"},
     {"lr", "logbase", "sign_decay", "beta", "grad"},
     "grad",
     nullptr,
     FS_RULE(PowerSign),
     "m = beta * m + (1 - beta) * g; var -= lr * exp(logbase * sign_decay * sign(g) * sign(m)) "
     "* g"},
};

#undef FS_RULE

int GradIndex(const UpdateRuleRow& row) {
  const auto it = std::find(row.inputs.begin(), row.inputs.end(), row.grad);
  return static_cast<int>(row.resources.size() + (it - row.inputs.begin()));
}

Status ApplyRule(KernelContext& ctx, const UpdateRuleRow& row) {
  const int num_vars = static_cast<int>(row.resources.size());
  std::vector<int> var_inputs(num_vars);
  for (int k = 0; k < num_vars; ++k) var_inputs[k] = k;
  LockedVars vars(ctx, var_inputs, HostCopy);
  const int grad_index = GradIndex(row);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, grad_index));
  const bool flag = row.flag_attr != nullptr && ctx.attrs().GetOr<bool>(row.flag_attr, false);
  auto run = [&]<typename T>(RuleFn<T> apply) -> Status {
    std::vector<T*> v(num_vars);
    for (int k = 0; k < num_vars; ++k) v[k] = vars.data<T>(k);
    std::vector<T> scalars;
    for (int i = num_vars; i < ctx.num_inputs(); ++i) {
      if (i != grad_index) scalars.push_back(ScalarInput<T>(ctx, i));
    }
    const T* g = ctx.input(grad_index).data<T>();
    ForEachBlock(ctx, vars.size(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) apply(v.data(), i, g[i], scalars.data(), flag);
    });
    return Status::OK();
  };
  return DispatchDType<float, double>(ctx.input(grad_index).dtype(), row.name,
                                      [&]<typename T>() -> Status {
                                        if constexpr (std::is_same_v<T, float>) {
                                          return run(row.apply_float);
                                        } else {
                                          return run(row.apply_double);
                                        }
                                      });
}

// The row-sparse form: `grad` holds rows of the variable ([N] + var.shape[1:]) and `indices`
// [N] says which; each row's elements get the row's rule, rows in order (a repeated index is
// updated once per occurrence, as in TensorFlow). The inputs are the dense op's with `indices`
// right after the gradient.
Status ApplySparseRule(KernelContext& ctx, const UpdateRuleRow& row) {
  const int num_vars = static_cast<int>(row.resources.size());
  std::vector<int> var_inputs(num_vars);
  for (int k = 0; k < num_vars; ++k) var_inputs[k] = k;
  LockedVars vars(ctx, var_inputs, HostCopy);
  FS_RETURN_IF_ERROR(vars.status());
  const int grad_index = GradIndex(row);
  const int indices_index = grad_index + 1;
  const Tensor& grad = ctx.input(grad_index);
  const Tensor& indices = ctx.input(indices_index);
  const TensorShape& var_shape = vars.shape();
  if (var_shape.rank() < 1) {
    return errors::InvalidArgument(row.sparse_name, ": var must be at least 1 dimensional, got ",
                                   var_shape.ToString());
  }
  if (indices.shape().rank() != 1) {
    return errors::InvalidArgument(row.sparse_name, ": indices must be one-dimensional, got ",
                                   indices.shape().ToString());
  }
  const int64_t num_rows = indices.num_elements();
  bool rows_match = grad.shape().rank() == var_shape.rank() && grad.shape().dim(0) == num_rows;
  for (int d = 1; rows_match && d < var_shape.rank(); ++d) {
    rows_match = grad.shape().dim(d) == var_shape.dim(d);
  }
  if (!rows_match) {
    return errors::InvalidArgument(row.sparse_name, ": grad must be [", num_rows,
                                   "] + var.shape[1:] (one row per index) for var ",
                                   var_shape.ToString(), ", got ", grad.shape().ToString());
  }
  for (int i = num_vars; i < ctx.num_inputs(); ++i) {
    if (i != grad_index && i != indices_index && ctx.input(i).num_elements() != 1) {
      return errors::InvalidArgument("Input ", i, " of ", row.sparse_name,
                                     " must be a scalar, got shape ",
                                     ctx.input(i).shape().ToString());
    }
  }
  const int64_t first_dim = var_shape.dim(0);
  std::vector<int64_t> rows(num_rows);
  for (int64_t r = 0; r < num_rows; ++r) {
    rows[r] = static_cast<int64_t>(indices.ElementAsDouble(r));
    if (rows[r] < 0 || rows[r] >= first_dim) {
      return errors::InvalidArgument(row.sparse_name, ": indices[", r, "] = ", rows[r],
                                     " is not in [0, ", first_dim, ")");
    }
  }
  const int64_t row_size = first_dim == 0 ? 0 : vars.size() / first_dim;
  const bool flag = row.flag_attr != nullptr && ctx.attrs().GetOr<bool>(row.flag_attr, false);
  auto run = [&]<typename T>(RuleFn<T> apply) -> Status {
    std::vector<T*> v(num_vars);
    for (int k = 0; k < num_vars; ++k) v[k] = vars.data<T>(k);
    std::vector<T> scalars;
    for (int i = num_vars; i < ctx.num_inputs(); ++i) {
      if (i != grad_index && i != indices_index) scalars.push_back(ScalarInput<T>(ctx, i));
    }
    const T* g = grad.data<T>();
    for (int64_t r = 0; r < num_rows; ++r) {
      for (int64_t j = 0; j < row_size; ++j) {
        apply(v.data(), rows[r] * row_size + j, g[r * row_size + j], scalars.data(), flag);
      }
    }
    return Status::OK();
  };
  return DispatchDType<float, double>(grad.dtype(), row.sparse_name, [&]<typename T>() -> Status {
    if constexpr (std::is_same_v<T, float>) {
      return run(row.apply_float);
    } else {
      return run(row.apply_double);
    }
  });
}

OpBuilder UpdateRuleOp(const UpdateRuleRow& row) {
  std::vector<std::string> typed_inputs;
  std::vector<std::pair<std::string, std::string>> other_inputs;
  for (const std::string& input : row.inputs) {
    const size_t colon = input.find(':');
    if (colon == std::string::npos) {
      typed_inputs.push_back(input);
    } else {
      other_inputs.emplace_back(input.substr(0, colon), input.substr(colon + 1));
    }
  }
  OpBuilder builder = ApplyOp(row.name, row.resources, typed_inputs);
  for (const auto& [name, type] : other_inputs) builder.Input(name, type);
  if (row.flag_attr != nullptr) builder.Attr(row.flag_attr, false);
  builder.Kernel("CPU", [&row](KernelContext& ctx) { return ApplyRule(ctx, row); }).Doc(row.doc);
  return builder;
}

OpBuilder SparseUpdateRuleOp(const UpdateRuleRow& row) {
  std::vector<std::string> typed_inputs;
  std::vector<std::pair<std::string, std::string>> other_inputs;
  for (const std::string& input : row.inputs) {
    const size_t colon = input.find(':');
    if (colon != std::string::npos) {
      other_inputs.emplace_back(input.substr(0, colon), input.substr(colon + 1));
    } else {
      typed_inputs.push_back(input == row.grad ? "grad" : input);
    }
  }
  // `indices` follows the gradient: split the typed inputs there.
  const auto grad = std::find(typed_inputs.begin(), typed_inputs.end(), "grad");
  std::vector<std::string> before(typed_inputs.begin(), grad + 1);
  std::vector<std::string> after(grad + 1, typed_inputs.end());
  OpBuilder builder(row.sparse_name);
  for (const std::string& r : row.resources) builder.Input(r, "resource");
  for (const std::string& in : before) builder.Input(in, "T");
  builder.Input("indices", "Tindices");
  for (const std::string& in : after) builder.Input(in, "T");
  for (const auto& [name, type] : other_inputs) builder.Input(name, type);
  builder.TypeAttr("T", kFloatTypes)
      .TypeAttr("Tindices", {DType::kInt32, DType::kInt64})
      .Attr("use_locking", false)
      .Stateful()
      .Shape([](InferenceContext&) { return Status::OK(); })
      .NotDifferentiable();
  if (row.flag_attr != nullptr) builder.Attr(row.flag_attr, false);
  builder.Kernel("CPU", [&row](KernelContext& ctx) { return ApplySparseRule(ctx, row); })
      .Doc(StrCat(row.name, " on the rows of the variables named by `indices`"));
  return builder;
}

const bool kUpdateRulesRegistered = [] {
  for (const UpdateRuleRow& row : kUpdateRules) {
    OpRegistrar registrar(UpdateRuleOp(row));
    if (row.sparse_name != nullptr) OpRegistrar sparse(SparseUpdateRuleOp(row));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
