// Tensor::SubSlice: a row of a tensor that shares its memory (the rows a fused map-and-batch
// hands to its calls as their outputs' destinations).
#include <gtest/gtest.h>

#include "flowstone/tensor.h"

namespace flowstone {
namespace {

TEST(TensorSubSliceTest, RowSharesTheMemoryAndKeepsItAlive) {
  Tensor whole = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({3, 2}));
  Tensor row = whole.SubSlice(1);
  EXPECT_EQ(row.shape(), TensorShape({2}));
  EXPECT_EQ(row.num_elements(), 2);
  EXPECT_EQ(row.data<float>(), whole.data<float>() + 2);
  EXPECT_FALSE(whole.RefCountIsOne());  // the row holds the whole buffer
  row.data<float>()[0] = 10;
  EXPECT_EQ(whole.data<float>()[2], 10);
  Tensor last = whole.SubSlice(2);
  whole = Tensor();  // the rows keep the memory alive
  EXPECT_EQ(last.data<float>()[1], 5);
  EXPECT_EQ(row.data<float>()[1], 3);
}

TEST(TensorSubSliceTest, RowsOfScalarsAndOfEmptyRows) {
  Tensor scalars = Tensor::FromVector<int64_t>({7, 8, 9}, TensorShape({3}));
  Tensor second = scalars.SubSlice(1);
  EXPECT_EQ(second.rank(), 0);
  EXPECT_EQ(*second.data<int64_t>(), 8);
  Tensor empty = Tensor::Host(DType::kFloat32, TensorShape({4, 0}));
  EXPECT_EQ(empty.SubSlice(3).num_elements(), 0);
  EXPECT_EQ(empty.SubSlice(3).shape(), TensorShape({0}));
}

}  // namespace
}  // namespace flowstone
