// The tf.linalg kernels on good and bad input through the C++ API, so that the sanitizer builds
// (make asan) run them: every bad input is a Status, never a crash or an out-of-bounds access.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

// Runs `op` on `inputs` fed through placeholders of unknown shape (so that only the kernel sees
// the shapes) and returns the run's status; outputs go to *out.
Status RunOp(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
             int num_outputs, std::vector<Tensor>* out) {
  GraphBuilder b;
  std::vector<Endpoint> placeholders;
  std::vector<std::pair<Endpoint, Tensor>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    placeholders.push_back(
        b.Placeholder(inputs[i].dtype(), PartialShape::Unknown(), "in" + std::to_string(i)));
    feeds.push_back({placeholders.back(), inputs[i]});
  }
  Node* node = b.AddOp(op, placeholders, attrs, "op");
  if (!b.status().ok()) return b.status();
  std::vector<Endpoint> fetches;
  for (int i = 0; i < num_outputs; ++i) fetches.push_back({node, i});
  std::unique_ptr<Session> session;
  FS_RETURN_IF_ERROR(Session::Create(b.graph(), {}, &session));
  return session->Run(feeds, fetches, {}, out);
}

Tensor Matrix(std::vector<double> values, std::vector<int64_t> dims) {
  return Tensor::FromVector<double>(values, TensorShape(dims));
}

TEST(LinalgOpsTest, InverseTimesInputIsTheIdentity) {
  std::vector<Tensor> out;
  Tensor a = Matrix({4, 1, 2, 1, 3, 0, 2, 0, 5}, {3, 3});
  ASSERT_TRUE(RunOp("MatrixInverse", {a}, {}, 1, &out).ok());
  const double* inv = out[0].data<double>();
  const double* m = a.data<double>();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      double sum = 0;
      for (int k = 0; k < 3; ++k) sum += m[i * 3 + k] * inv[k * 3 + j];
      EXPECT_NEAR(sum, i == j ? 1.0 : 0.0, 1e-12);
    }
  }
}

TEST(LinalgOpsTest, FactorizationsOfEmptyAndBatchedMatrices) {
  std::vector<Tensor> out;
  const std::vector<std::string> square_ops = {
      "MatrixInverse", "MatrixDeterminant",   "Cholesky", "SelfAdjointEigV2", "Qr",
      "Svd",           "LogMatrixDeterminant"};
  for (const std::string& op : square_ops) {
    EXPECT_TRUE(RunOp(op, {Matrix({}, {2, 0, 0})}, {}, 1, &out).ok()) << op;
    Tensor spd = Matrix({2, 1, 1, 2, 3, 0, 0, 3}, {2, 2, 2});
    Status s = RunOp(op, {spd}, {}, 1, &out);
    EXPECT_TRUE(s.ok()) << op << ": " << s.ToString();
  }
  AttrMap full;
  full.Set("full_matrices", true);
  for (const std::string& op : {"Qr", "Svd"}) {
    EXPECT_TRUE(RunOp(op, {Matrix({1, 2, 3, 4, 5, 6}, {3, 2})}, full, 1, &out).ok()) << op;
    EXPECT_TRUE(RunOp(op, {Matrix({1, 2, 3, 4, 5, 6}, {2, 3})}, full, 1, &out).ok()) << op;
    EXPECT_TRUE(RunOp(op, {Matrix({}, {0, 3})}, full, 1, &out).ok()) << op;
  }
  ASSERT_TRUE(RunOp("MatrixDeterminant", {Matrix({}, {0, 0})}, {}, 1, &out).ok());
  EXPECT_EQ(out[0].data<double>()[0], 1.0);  // the empty product
}

TEST(LinalgOpsTest, BadShapesAreErrorsNotCrashes) {
  std::vector<Tensor> out;
  const Tensor vector = Matrix({1, 2, 3}, {3});
  const Tensor wide = Matrix({1, 2, 3, 4, 5, 6}, {2, 3});
  for (const std::string& op : {"MatrixInverse", "MatrixDeterminant", "Cholesky",
                                "SelfAdjointEigV2", "LogMatrixDeterminant"}) {
    Status s = RunOp(op, {wide}, {}, 1, &out);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << op;
    EXPECT_NE(s.message().find("square"), std::string::npos) << s.ToString();
    EXPECT_EQ(RunOp(op, {vector}, {}, 1, &out).code(), Code::kInvalidArgument) << op;
  }
  const Tensor a = Matrix({2, 0, 0, 2}, {2, 2});
  for (const std::string& op : {"MatrixSolve", "MatrixTriangularSolve"}) {
    EXPECT_TRUE(RunOp(op, {a, Matrix({1, 2}, {2, 1})}, {}, 1, &out).ok()) << op;
    EXPECT_EQ(RunOp(op, {a, Matrix({1, 2, 3}, {3, 1})}, {}, 1, &out).code(), Code::kInvalidArgument)
        << op;
    EXPECT_EQ(RunOp(op, {a, Matrix({1, 2}, {1, 2, 1})}, {}, 1, &out).code(), Code::kInvalidArgument)
        << op;
  }
  EXPECT_EQ(RunOp("MatrixSetDiag", {wide, Matrix({1, 2, 3}, {3})}, {}, 1, &out).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(RunOp("DiagPart", {wide}, {}, 1, &out).code(), Code::kInvalidArgument);
  EXPECT_EQ(RunOp("DiagPart", {vector}, {}, 1, &out).code(), Code::kInvalidArgument);
  const Tensor tall = Matrix({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(RunOp("Cross", {tall, tall}, {}, 1, &out).code(), Code::kInvalidArgument);
  EXPECT_EQ(RunOp("Cross", {vector, Matrix({1, 2, 3, 4, 5, 6}, {2, 3})}, {}, 1, &out).code(),
            Code::kInvalidArgument);
  const Tensor lower = Tensor::Scalar<int64_t>(3);
  const Tensor upper = Tensor::Scalar<int64_t>(-1);
  Status band = RunOp("MatrixBandPart", {wide, lower, upper}, {}, 1, &out);
  EXPECT_EQ(band.code(), Code::kInvalidArgument);
  EXPECT_NE(band.message().find("num_lower must be negative or less or equal to number of rows"),
            std::string::npos);
  EXPECT_EQ(RunOp("MatrixBandPart", {wide, Matrix({1, 2}, {2}), upper}, {}, 1, &out).code(),
            Code::kInvalidArgument);
}

TEST(LinalgOpsTest, SingularAndIndefiniteInputsGiveTensorFlowsErrors) {
  std::vector<Tensor> out;
  const Tensor singular = Matrix({1, 2, 2, 4}, {2, 2});
  Status inverse = RunOp("MatrixInverse", {singular}, {}, 1, &out);
  EXPECT_EQ(inverse.message().find("Input is not invertible."), 0u) << inverse.ToString();
  Status solve = RunOp("MatrixSolve", {singular, Matrix({1, 1}, {2, 1})}, {}, 1, &out);
  EXPECT_EQ(solve.message().find("Input matrix is not invertible."), 0u) << solve.ToString();
  Status chol = RunOp("Cholesky", {Matrix({1, 2, 2, 1}, {2, 2})}, {}, 1, &out);
  EXPECT_EQ(chol.code(), Code::kInvalidArgument);
  EXPECT_NE(chol.message().find("Cholesky decomposition was not successful"), std::string::npos);
  ASSERT_TRUE(RunOp("LogMatrixDeterminant", {singular}, {}, 2, &out).ok());
  EXPECT_EQ(out[0].data<double>()[0], 0.0);
  EXPECT_TRUE(std::isinf(out[1].data<double>()[0]));
  // NaN input: an error or NaN results, never a crash.
  const Tensor nan = Matrix({NAN, 1, 1, NAN}, {2, 2});
  for (const std::string& op : {"Svd", "SelfAdjointEigV2", "Qr", "MatrixDeterminant"}) {
    RunOp(op, {nan}, {}, 1, &out);
  }
}

}  // namespace
}  // namespace flowstone
