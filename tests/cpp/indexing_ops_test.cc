// The indexing kernels in src/ops/array/ with bad inputs fed at run time: each fails with
// InvalidArgument (never a crash or an out-of-bounds access; `make asan` runs this file under
// AddressSanitizer), and the session stays usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

struct OpRun {
  Status status;
  std::vector<Tensor> outputs;
};

// Runs `op` on `inputs` fed through placeholders of unknown shape, so that only the kernel
// checks them; fetches `num_outputs` outputs.
OpRun RunOp(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {},
            int num_outputs = 1) {
  GraphBuilder b;
  std::vector<Endpoint> placeholders;
  std::vector<std::pair<Endpoint, Tensor>> feeds;
  for (const Tensor& input : inputs) {
    placeholders.push_back(b.Placeholder(input.dtype()));
    feeds.emplace_back(placeholders.back(), input);
  }
  Node* node = b.AddOp(op, placeholders, attrs);
  OpRun run;
  if (!b.status().ok()) {
    run.status = b.status();
    return run;
  }
  std::vector<Endpoint> fetches;
  for (int i = 0; i < num_outputs; ++i) fetches.push_back(Endpoint{node, i});
  std::unique_ptr<Session> session;
  run.status = Session::Create(b.graph(), {}, &session);
  if (run.status.ok()) run.status = session->Run(feeds, fetches, {}, &run.outputs);
  return run;
}

Tensor Ints(const std::vector<int32_t>& values, const std::vector<int64_t>& shape) {
  return Tensor::FromVector<int32_t>(values, TensorShape(shape));
}

Tensor Floats(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  return Tensor::FromVector<float>(values, TensorShape(shape));
}

Tensor Scalar(int32_t value) { return Tensor::Scalar<int32_t>(value); }

void ExpectInvalid(const OpRun& run, const std::string& fragment) {
  EXPECT_EQ(run.status.code(), Code::kInvalidArgument) << run.status.ToString();
  EXPECT_NE(run.status.message().find(fragment), std::string::npos) << run.status.ToString();
}

AttrMap Attrs(const std::vector<std::pair<std::string, AttrValue>>& entries) {
  AttrMap attrs;
  for (const auto& [name, value] : entries) attrs.Set(name, value);
  return attrs;
}

const Tensor kFive = Floats({0, 1, 2, 3, 4}, {5});

TEST(IndexingOpsTest, GatherAndScatterRejectIndicesOutsideTheShape) {
  ExpectInvalid(RunOp("GatherNd", {kFive, Ints({1, 7}, {2, 1})}),
                "indices[1] = [7] does not index into param shape [5]");
  ExpectInvalid(RunOp("GatherNd", {kFive, Ints({-1}, {1, 1})}), "not in [0, 5)");
  ExpectInvalid(RunOp("GatherNd", {kFive, Ints({0, 0}, {1, 2})}),
                "index innermost dimension length must be <= param shape rank");
  ExpectInvalid(RunOp("GatherNd", {kFive, Scalar(1)}), "indices must be at least a vector");
  ExpectInvalid(RunOp("ScatterNd", {Ints({5}, {1, 1}), Floats({1}, {1}), Ints({5}, {1})}),
                "indices[0] = [5] does not index into shape [5]");
  ExpectInvalid(RunOp("ScatterNd", {Ints({1}, {1, 1}), Floats({1, 2}, {2}), Ints({5}, {1})}),
                "updates must have shape");
  ExpectInvalid(RunOp("ScatterNd", {Ints({0}, {1, 1}), Floats({1}, {1}), Ints({-3}, {1})}),
                "shape[0] = -3 must be non-negative");
  ExpectInvalid(
      RunOp("ScatterNd", {Tensor::FromVector<int64_t>({0}, TensorShape({1, 1})), Floats({1}, {1}),
                          Tensor::FromVector<int64_t>({1LL << 40, 1LL << 40}, TensorShape({2}))}),
      "too many elements");
  ExpectInvalid(RunOp("TensorScatterAdd", {kFive, Ints({2, 5}, {2, 1}), Floats({1, 1}, {2})}),
                "indices[1] = [5]");
  ExpectInvalid(RunOp("TensorScatterUpdate", {kFive, Ints({2}, {1, 1}), Floats({1, 1}, {2})}),
                "updates must have shape");
}

TEST(IndexingOpsTest, SegmentOpsRejectBadIds) {
  const Tensor data = Floats({1, 2, 3}, {3});
  ExpectInvalid(RunOp("SegmentSum", {data, Ints({0, 2, 1}, {3})}), "not increasing");
  ExpectInvalid(RunOp("SegmentMax", {data, Ints({-1, 0, 0}, {3})}), "is negative");
  ExpectInvalid(RunOp("SegmentMean", {data, Ints({0, 0}, {2})}), "same size as dimension 0");
  ExpectInvalid(RunOp("UnsortedSegmentMax", {data, Ints({0, 3, 1}, {3}), Scalar(3)}),
                "segment_ids[1] = 3 is not in [0, 3)");
  ExpectInvalid(RunOp("UnsortedSegmentProd", {data, Ints({0, 0, 1}, {3}), Scalar(-1)}),
                "num_segments must be non-negative");
  ExpectInvalid(RunOp("UnsortedSegmentMin", {data, Ints({0, 1}, {2}), Scalar(2)}),
                "does not start with segment_ids.shape");
  ExpectInvalid(RunOp("SparseSegmentSum", {data, Ints({0, 3}, {2}), Ints({0, 0}, {2})}),
                "indices[1] = 3 is not in [0, 3)");
  ExpectInvalid(RunOp("SparseSegmentMean", {data, Ints({0}, {1}), Ints({0, 0}, {2})}),
                "one entry per segment id");
}

TEST(IndexingOpsTest, SizesFromUserDataDoNotOverflow) {
  const Tensor wide = Floats({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  const Tensor huge_ids = Tensor::FromVector<int64_t>({0, int64_t{1} << 62}, TensorShape({2}));
  ExpectInvalid(RunOp("SegmentSum", {wide, huge_ids}), "too many elements to fit int64");
  ExpectInvalid(
      RunOp("BroadcastTo", {Floats({1}, {1}), Tensor::FromVector<int64_t>(
                                                  {int64_t{1} << 40, 1 << 30}, TensorShape({2}))}),
      "too many elements to fit int64");
  // No columns: a huge number of empty segments costs nothing.
  OpRun empty = RunOp("UnsortedSegmentMax", {Floats({}, {2, 0}), Ints({0, 1}, {2}),
                                             Tensor::Scalar<int64_t>(int64_t{1} << 62)});
  ASSERT_TRUE(empty.status.ok()) << empty.status.ToString();
  EXPECT_EQ(empty.outputs[0].num_elements(), 0);
}

TEST(IndexingOpsTest, ScansReversalsAndRollRejectBadAxes) {
  const Tensor x = Floats({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectInvalid(RunOp("Cumsum", {x, Scalar(2)}), "Expected axis in the range [-2, 2)");
  ExpectInvalid(RunOp("Cumprod", {x, Ints({0}, {1})}), "axis must be a scalar");
  ExpectInvalid(RunOp("ReverseV2", {x, Ints({0, -2}, {2})}), "axis 0 specified more than once");
  ExpectInvalid(RunOp("ReverseV2", {x, Ints({5}, {1})}), "Expected axis in the range");
  ExpectInvalid(RunOp("ReverseSequence", {x, Tensor::FromVector<int64_t>({4, 1}, TensorShape({2}))},
                      Attrs({{"seq_dim", int64_t{1}}})),
                "seq_lengths[0] = 4 is not in [0, 3]");
  ExpectInvalid(
      RunOp("ReverseSequence", {x, Ints({1, 1, 1}, {3})}, Attrs({{"seq_dim", int64_t{1}}})),
      "seq_lengths must be a vector of length");
  ExpectInvalid(RunOp("Roll", {x, Scalar(1), Scalar(-3)}), "Expected axis in the range");
  ExpectInvalid(RunOp("Roll", {x, Ints({1, 1}, {2}), Scalar(0)}), "shift and axis");
  ExpectInvalid(RunOp("BroadcastTo", {x, Ints({2, 4}, {2})}), "Unable to broadcast");
  ExpectInvalid(RunOp("BroadcastTo", {x, Ints({-2, 3}, {2})}), "must be non-negative");
}

TEST(IndexingOpsTest, BlockMovesRejectSizesThatDoNotDivide) {
  const Tensor image = Floats(std::vector<float>(2 * 4 * 6, 1.0f), {2, 4, 6, 1});
  ExpectInvalid(RunOp("SpaceToDepth", {image}, Attrs({{"block_size", int64_t{4}}})),
                "Image width 6 and height 4 should be divisible by block_size: 4");
  ExpectInvalid(RunOp("DepthToSpace", {image}, Attrs({{"block_size", int64_t{2}}})),
                "Input depth dimension 1 should be divisible by: 4");
  ExpectInvalid(RunOp("SpaceToDepth", {Floats({1, 2}, {2})}, Attrs({{"block_size", int64_t{2}}})),
                "input rank should be: 4");
  ExpectInvalid(RunOp("SpaceToBatchND", {image, Ints({2, 3}, {2}), Ints({0, 1, 0, 0}, {2, 2})}),
                "padded_shape[0]=5 is not divisible by block_shape[0]=2");
  ExpectInvalid(RunOp("SpaceToBatchND", {image, Ints({2, 2}, {2}), Ints({0, -1, 0, 0}, {2, 2})}),
                "must be non-negative");
  ExpectInvalid(RunOp("SpaceToBatchND",
                      {image, Ints({2, 2, 1, 1}, {4}), Ints(std::vector<int32_t>(8, 0), {4, 2})}),
                "input rank should be > block_shape size");
  ExpectInvalid(RunOp("BatchToSpaceND", {image, Ints({2, 2}, {2}), Ints({0, 0, 0, 0}, {2, 2})}),
                "Input batch dimension (2) is not divisible by product of block sizes (4)");
  ExpectInvalid(RunOp("BatchToSpaceND", {image, Ints({2, 1}, {2}), Ints({5, 4, 0, 0}, {2, 2})}),
                "crops must not exceed");
  ExpectInvalid(RunOp("BatchToSpaceND", {image, Ints({1, 1}, {2}), Ints({0, 0}, {1, 2})}),
                "crops should have shape [2, 2]");
}

TEST(IndexingOpsTest, ExtractImagePatchesRejectsBadInputs) {
  const AttrMap attrs = Attrs({{"ksizes", std::vector<int64_t>{1, 2, 2, 1}},
                               {"strides", std::vector<int64_t>{1, 1, 1, 1}},
                               {"rates", std::vector<int64_t>{1, 1, 1, 1}},
                               {"padding", std::string("VALID")}});
  ExpectInvalid(RunOp("ExtractImagePatches", {Floats({1, 2}, {2})}, attrs),
                "images must be 4-dimensional");
  // A 1x1 image is smaller than the 2x2 patch: VALID gives an empty output, not a read outside.
  OpRun small = RunOp("ExtractImagePatches", {Floats({1}, {1, 1, 1, 1})}, attrs);
  ASSERT_TRUE(small.status.ok()) << small.status.ToString();
  EXPECT_EQ(small.outputs[0].num_elements(), 0);
}

TEST(IndexingOpsTest, PartitionStitchUniqueAndCountingRejectBadInputs) {
  const Tensor data = Floats({1, 2, 3}, {3});
  ExpectInvalid(RunOp("DynamicPartition", {data, Ints({0, 2, 1}, {3})},
                      Attrs({{"num_partitions", int64_t{2}}}), 2),
                "partitions[1] = 2 is not in [0, 2)");
  ExpectInvalid(RunOp("DynamicPartition", {data, Ints({0, 1}, {2})},
                      Attrs({{"num_partitions", int64_t{2}}}), 2),
                "must start with partitions.shape");
  ExpectInvalid(
      RunOp("DynamicStitch", {Ints({0, -4}, {2}), Floats({1, 2}, {2})}, Attrs({{"N", int64_t{1}}})),
      "indices[0][1] = -4 is negative");
  ExpectInvalid(RunOp("DynamicStitch", {Ints({0, 1}, {2}), Floats({1, 2, 3}, {3})},
                      Attrs({{"N", int64_t{1}}})),
                "data[0].shape [3] must start with indices[0].shape [2]");
  ExpectInvalid(RunOp("Unique", {Floats({1, 2}, {1, 2})}, {}, 2), "must be a vector");
  ExpectInvalid(RunOp("ListDiff", {Floats({1}, {1}), Floats({1}, {1, 1})}, {}, 2),
                "must be a vector");
  ExpectInvalid(RunOp("LowerBound", {Floats({1, 2}, {1, 2}), Floats({1, 2}, {2, 1})}),
                "same number of rows");
  ExpectInvalid(RunOp("Bincount", {Ints({1, -1}, {2}), Scalar(3), Floats({}, {0})}),
                "Input arr must be non-negative");
  ExpectInvalid(RunOp("Bincount", {Ints({1, 2}, {2}), Scalar(3), Floats({1}, {1})}),
                "weights must have the shape of arr");
  ExpectInvalid(RunOp("HistogramFixedWidth", {data, Floats({0, 1}, {2}), Scalar(0)}),
                "nbins should be a positive number, but got '0'");
  ExpectInvalid(RunOp("HistogramFixedWidth", {data, Floats({1, 1}, {2}), Scalar(2)}),
                "value_range[0] < value_range[1]");
  ExpectInvalid(
      RunOp("HistogramFixedWidth", {Floats({0.0f / 0.0f}, {1}), Floats({0, 1}, {2}), Scalar(2)}),
      "must not contain NaN");
  ExpectInvalid(RunOp("UnravelIndex", {Ints({6}, {1}), Ints({2, 3}, {2})}),
                "indices[0] = 6 is not in [0, 6)");
  ExpectInvalid(RunOp("UnravelIndex", {Ints({0}, {1}), Ints({2, 0}, {2})}),
                "dims[1] = 0 must be positive");
}

TEST(IndexingOpsTest, KernelsComputeOnValidInputs) {
  OpRun gathered = RunOp("GatherNd", {kFive, Ints({4, 0, 2}, {3, 1})});
  ASSERT_TRUE(gathered.status.ok()) << gathered.status.ToString();
  EXPECT_EQ(gathered.outputs[0].data<float>()[0], 4.0f);
  EXPECT_EQ(gathered.outputs[0].data<float>()[2], 2.0f);
  OpRun scattered = RunOp("ScatterNd", {Ints({1, 1}, {2, 1}), Floats({2, 3}, {2}), Ints({3}, {1})});
  ASSERT_TRUE(scattered.status.ok()) << scattered.status.ToString();
  EXPECT_EQ(scattered.outputs[0].data<float>()[1], 5.0f);
  OpRun summed = RunOp("Cumsum", {Floats({1, 2, 3}, {3}), Scalar(0)},
                       Attrs({{"exclusive", true}, {"reverse", true}}));
  ASSERT_TRUE(summed.status.ok()) << summed.status.ToString();
  EXPECT_EQ(summed.outputs[0].data<float>()[0], 5.0f);
  EXPECT_EQ(summed.outputs[0].data<float>()[2], 0.0f);
  OpRun stitched = RunOp("DynamicStitch",
                         {Ints({2}, {1}), Ints({0, 1}, {2}), Floats({7}, {1}), Floats({8, 9}, {2})},
                         Attrs({{"N", int64_t{2}}}));
  ASSERT_TRUE(stitched.status.ok()) << stitched.status.ToString();
  EXPECT_EQ(stitched.outputs[0].data<float>()[2], 7.0f);
  OpRun rolled = RunOp("Roll", {Floats({1, 2, 3}, {3}), Scalar(-4), Scalar(0)});
  ASSERT_TRUE(rolled.status.ok()) << rolled.status.ToString();
  EXPECT_EQ(rolled.outputs[0].data<float>()[0], 2.0f);
}

}  // namespace
}  // namespace flowstone
