// The eager executor and GradientTape from C++: values, errors, the signature cache, tapes.
#include "flowstone/eager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

namespace flowstone {
namespace {

TensorHandle Handle(const std::vector<float>& values) {
  return TensorHandle(
      Tensor::FromVector<float>(values, TensorShape{static_cast<int64_t>(values.size())}), nullptr);
}

TEST(EagerTest, ExecutesThroughTheKernelAndCachesTheSignature) {
  EagerContext& ctx = EagerContext::Global();
  TensorHandle a = Handle({1, 2, 3}), b = Handle({4, 5, 6});
  std::vector<TensorHandle> out;
  ASSERT_TRUE(ctx.Execute("AddV2", {&a, &b}, {}, "", "", &out).ok());
  ASSERT_EQ(out.size(), 1u);
  const float* sum = out[0].tensor().data<float>();
  EXPECT_EQ(sum[0], 5);
  EXPECT_EQ(sum[2], 9);
  EXPECT_NE(out[0].id(), a.id());
  const int64_t entries = ctx.cache_size();
  TensorHandle c = Handle({1}), d = Handle({2});
  ASSERT_TRUE(ctx.Execute("AddV2", {&c, &d}, {}, "", "", &out).ok());
  EXPECT_EQ(ctx.cache_size(), entries);  // same dtypes and attrs: the cached kernel
  EXPECT_TRUE(ctx.initialized());
}

TEST(EagerTest, ShapeErrorsHaveTheGraphMessageAndTheOp) {
  TensorHandle a = Handle({1, 2, 3}), b = Handle({1, 2});
  std::vector<TensorHandle> out;
  Status s = EagerContext::Global().Execute("AddV2", {&a, &b}, {}, "", "", &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Incompatible shapes: [3] vs. [2] [Op:AddV2] name: "),
            std::string::npos)
      << s.message();
}

TEST(EagerTest, UnknownOpIsNotFound) {
  std::vector<TensorHandle> out;
  Status s = EagerContext::Global().Execute("NoSuchOp", {}, {}, "", "", &out);
  EXPECT_EQ(s.code(), Code::kNotFound);
}

TEST(EagerTest, TapeGradientOfAProduct) {
  EagerContext& ctx = EagerContext::Global();
  TensorHandle x = Handle({1, 2, 3}), k = Handle({3, 4, 5});
  auto tape = std::make_shared<GradientTape>(/*persistent=*/true, true);
  tape->Watch(x);
  EagerContext::ThreadTapes().push_back(tape);
  std::vector<TensorHandle> y;
  Status s = ctx.Execute("Mul", {&x, &k}, {}, "", "", &y);
  EagerContext::ThreadTapes().pop_back();
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<std::optional<TensorHandle>> grads;
  ASSERT_TRUE(tape->Gradient(ctx, {&y[0]}, {&x, &k}, {}, &grads).ok());
  ASSERT_TRUE(grads[0].has_value());
  EXPECT_EQ(grads[0]->tensor().data<float>()[1], 4);  // d(x*k)/dx = k
  EXPECT_FALSE(grads[1].has_value());                 // k was not watched
  // A second pass reuses the cached backward graph and gives the same values.
  ASSERT_TRUE(tape->Gradient(ctx, {&y[0]}, {&x, &k}, {}, &grads).ok());
  EXPECT_EQ(grads[0]->tensor().data<float>()[2], 5);
}

TEST(EagerTest, PreparedOpRunsWithoutLookupAndChecksDtypes) {
  EagerContext& ctx = EagerContext::Global();
  EagerContext::CachedOp* op = nullptr;
  ASSERT_TRUE(ctx.Prepare("Mul", {DType::kFloat32, DType::kFloat32}, {}, "", &op).ok());
  TensorHandle a = Handle({1, 2}), b = Handle({3, 4});
  std::vector<TensorHandle> out;
  ASSERT_TRUE(ctx.Run(*op, {&a, &b}, "", &out).ok());
  EXPECT_EQ(out[0].tensor().data<float>()[1], 8);
  TensorHandle wrong(Tensor::FromVector<int32_t>({1, 2}, TensorShape{2}), nullptr);
  Status s = ctx.Run(*op, {&a, &wrong}, "", &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("expected to be a float tensor but is a int32"), std::string::npos)
      << s.message();
}

TEST(EagerTest, AVariableLivesAsLongAsAHandle) {
  EagerContext& ctx = EagerContext::Global();
  const int64_t before = ctx.num_variables();
  AttrMap attrs;
  attrs.Set("dtype", DType::kFloat32);
  attrs.Set("shape", PartialShape(TensorShape{2}));
  attrs.Set("shared_name", std::string("eager_test_lifetime"));
  std::vector<TensorHandle> handle;
  ASSERT_TRUE(ctx.Execute("VarHandleOp", {}, attrs, "", "", &handle).ok());
  EXPECT_EQ(ctx.num_variables(), before + 1);
  TensorHandle value = Handle({7, 8});
  AttrMap dtype;
  dtype.Set("dtype", DType::kFloat32);
  std::vector<TensorHandle> none;
  ASSERT_TRUE(ctx.Execute("AssignVariableOp", {&handle[0], &value}, dtype, "", "", &none).ok());
  {
    TensorHandle copy = handle[0];  // shares the buffer, so the variable
    handle.clear();
    EXPECT_EQ(ctx.num_variables(), before + 1);
    std::vector<TensorHandle> read;
    ASSERT_TRUE(ctx.Execute("ReadVariableOp", {&copy}, dtype, "", "", &read).ok());
    EXPECT_EQ(read[0].tensor().data<float>()[1], 8);
  }
  EXPECT_EQ(ctx.num_variables(), before);
}

TEST(EagerTest, TapeHoldsOnlyWhatTheGradientReads) {
  EagerContext& ctx = EagerContext::Global();
  TensorHandle x = Handle({0.5f, 1.0f}), c = Handle({1, 1});
  auto tape = std::make_shared<GradientTape>(/*persistent=*/false, true);
  tape->Watch(x);
  EagerContext::ThreadTapes().push_back(tape);
  std::vector<TensorHandle> sum, e;
  ASSERT_TRUE(ctx.Execute("AddV2", {&x, &c}, {}, "", "", &sum).ok());  // reads nothing
  ASSERT_TRUE(ctx.Execute("Exp", {&sum[0]}, {}, "", "", &e).ok());     // reads its output
  EagerContext::ThreadTapes().pop_back();
  EXPECT_EQ(tape->HeldIds(), std::vector<int64_t>{e[0].id()});
  std::vector<std::optional<TensorHandle>> grads;
  ASSERT_TRUE(tape->Gradient(ctx, {&e[0]}, {&x}, {}, &grads).ok());
  EXPECT_FLOAT_EQ(grads[0]->tensor().data<float>()[0], std::exp(1.5f));
}

}  // namespace
}  // namespace flowstone
