"""tf.contrib.seq2seq: sequence_loss, the decoders of TF1's sequence-to-sequence models
(Helper, BasicDecoder, dynamic_decode) and attention (BahdanauAttention, LuongAttention,
AttentionWrapper, tile_batch) and BeamSearchDecoder (over the GatherTree op), composed from ops
and tf.while_loop as TensorFlow's own."""

from flowstone.contrib.seq2seq.attention_wrapper import (  # noqa: F401
    AttentionMechanism, AttentionWrapper, AttentionWrapperState, BahdanauAttention,
    LuongAttention, hardmax)
from flowstone.contrib.seq2seq.basic_decoder import (  # noqa: F401
    BasicDecoder, BasicDecoderOutput, CustomHelper, Decoder, GreedyEmbeddingHelper, Helper,
    SampleEmbeddingHelper, TrainingHelper, dynamic_decode, tile_batch)
from flowstone.contrib.seq2seq.beam_search_decoder import (  # noqa: F401
    BeamSearchDecoder, BeamSearchDecoderOutput, BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput, gather_tree)
from flowstone.contrib.seq2seq.loss import sequence_loss  # noqa: F401
