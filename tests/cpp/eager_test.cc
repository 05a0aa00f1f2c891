// The eager executor and GradientTape from C++: values, errors, the signature cache, tapes.
#include "flowstone/eager.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace flowstone
