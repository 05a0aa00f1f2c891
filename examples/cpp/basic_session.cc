// Builds y = x @ w with a variable w, initializes it, and runs it with a fed x: the C++ API
// without Python. Prints "y = [7 10]".
#include <cstdio>
#include <memory>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

int main() {
  using flowstone::DType;
  using flowstone::PartialShape;
  using flowstone::Tensor;
  using flowstone::TensorShape;

  flowstone::GraphBuilder b;
  auto x = b.Placeholder(DType::kFloat32, PartialShape({-1, 2}), "x");
  auto w =
      b.NewVariable("w", b.Const(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}))));
  auto y = b.MatMul(x, w.value, false, false, "y");
  if (!b.status().ok()) {
    std::fprintf(stderr, "building the graph failed: %s\n", b.status().ToString().c_str());
    return 1;
  }

  std::unique_ptr<flowstone::Session> session;
  flowstone::Status s = flowstone::Session::Create(b.graph(), {}, &session);
  std::vector<Tensor> out;
  if (s.ok()) s = session->Run({}, {}, {w.initializer}, &out);
  Tensor input = Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}));
  if (s.ok()) s = session->Run({{x, input}}, {y}, {}, &out);
  if (!s.ok()) {
    std::fprintf(stderr, "run failed: %s\n", s.ToString().c_str());
    return 1;
  }
  const float* v = out[0].data<float>();
  std::printf("y = [%g %g]\n", v[0], v[1]);
  return 0;
}
