"""Graph passes, one per file, and the pipeline the compiler runs (names usable in disabled_passes)."""
from __future__ import annotations

from .cancel_transposes import cancel_transposes
from .compute_in_float32 import compute_in_float32
from .drop_half_casts import drop_half_casts
from .eliminate_dead_code import eliminate_dead_code
from .fold_batchnorm import fold_batchnorm
from .fold_constants import fold_constants
from .fold_symbolic import fold_symbolic
from .fold_channel_scale import fold_channel_scale
from .fold_if import fold_if
from .fold_pad import fold_pad
from .fuse_activation import fuse_activation
from .fuse_attention import fuse_attention
from .fuse_collectives import fuse_collectives
from .fuse_layer_norm import fuse_layer_norm
from .fuse_qdq import fuse_qdq
from .fuse_skip_layer_norm import fuse_skip_layer_norm
from .gemm_to_matmul import gemm_to_matmul
from .infer_shapes import infer_shapes
from .kv_cache_attention import kv_cache_attention
from .kv_cache_pad import kv_cache_pad
from .pack_bf16_convs import pack_bf16_convs
from .pack_bf16_matmuls import pack_bf16_matmuls
from .pack_conv_weights import pack_conv_weights
from .pack_matmul_weights import pack_matmul_weights
from .pack_qconv_weights import pack_qconv_weights
from .pack_rnn_weights import pack_rnn_weights
from .precision_mode import precision_mode
from .recognize_activations import recognize_activations
from .manager import PassManager
from .nhwc_int8 import nhwc_int8
from .remove_identity import remove_identity
from .split_variadic import split_variadic

# (name, pass); shapes are inferred again after passes that create nodes or constants.
# fold_batchnorm runs after fold_constants (its per-channel operands are folded Unsqueezes) and before
# fuse_activation (Conv -> BN -> Relu fuses only once the BN is gone); recognize_activations before
# fuse_activation too (its Gelu / Silu then fold into the producer's epilogue). fuse_qdq runs before
# fold_constants, which would fold the weights' DequantizeLinears into float constants.
# compute_in_float32 first: kernel infers refuse 16-bit floats in the ops it brackets.
PIPELINE = [
    ("compute_in_float32", compute_in_float32),
    ("infer_shapes", infer_shapes),
    ("fuse_qdq", fuse_qdq),
    ("fold_constants", fold_constants),
    ("fold_symbolic", fold_symbolic),   # shape arithmetic over symbolic sizes (input shapes not all fixed)
    ("kv_cache_pad", kv_cache_pad),     # Options.kv_cache_static: sizes made of the past length -> the cache's
    ("fold_if", fold_if),               # an If on a constant condition: the branch it picks
    ("remove_identity", remove_identity),
    ("cancel_transposes", cancel_transposes),
    ("fold_pad", fold_pad),             # a zero Pad before a Conv: the Conv's pads (Keras's ZeroPadding2D)
    ("fold_batchnorm", fold_batchnorm),
    ("recognize_activations", recognize_activations),
    ("fuse_attention", fuse_attention),             # transformers: before fuse_activation takes a MatMul + Add
    ("kv_cache_attention", kv_cache_attention),     # Options.kv_cache_max_len: attention over the cache in place
    ("fuse_layer_norm", fuse_layer_norm),           # before fuse_skip_layer_norm, which takes its node
    ("fuse_skip_layer_norm", fuse_skip_layer_norm),
    ("fuse_activation", fuse_activation),
    ("eliminate_dead_code", eliminate_dead_code),
    ("infer_shapes", infer_shapes),
]
# once the pipeline has reached its fixed point: layouts for the kernels (the folds above match plain Convs)
LOWERING = [
    # many-input Sum / Max / Min / Mean / Concat: nodes of <= 8 inputs (compiled once per arity class); after
    # PRECISION, which decides a node's 16-bit stores as one node (its parts then keep its bits), and before
    # fuse_collectives, whose Concats stay whole (continuous memory)
    ("split_variadic", split_variadic),
    ("infer_shapes", infer_shapes),
    ("fuse_collectives", fuse_collectives),    # fused AllReduces: one Concat -> HcomAllReduce -> Split a group
    ("pack_bf16_convs", pack_bf16_convs),   # before pack_conv_weights, which would take the same Convs
    ("pack_bf16_matmuls", pack_bf16_matmuls),  # before pack_matmul_weights, which would take the same MatMuls
    ("fold_channel_scale", fold_channel_scale),   # SE's Mul into the unpacked conv after it (ge::ScaledConv)
    ("pack_conv_weights", pack_conv_weights),
    ("gemm_to_matmul", gemm_to_matmul),   # a decoder step's Gemms (Options.kv_cache_max_len) -> packed below
    ("pack_matmul_weights", pack_matmul_weights),  # MatMul's constant B in gemm.py's panels (gemm_packed.py)
    ("drop_half_casts", drop_half_casts),     # after the packing: 16-bit convs run IMPLICIT (conv_half.py)
    ("pack_qconv_weights", pack_qconv_weights),
    ("nhwc_int8", nhwc_int8),                 # after the packing: NHWC int8 maps between packed QLinearConvs
    ("pack_rnn_weights", pack_rnn_weights),
    ("eliminate_dead_code", eliminate_dead_code),
]
# once, after the pipeline's folds and fusions (so a FusedConv is reduced as one op): which float32 ops store
# 16-bit results (Options.precision_mode), then their Casts bracketed and the weights' Casts folded
PRECISION = [
    ("precision_mode", precision_mode),
    ("compute_in_float32", compute_in_float32),
    ("infer_shapes", infer_shapes),
    ("fold_constants", fold_constants),
    ("eliminate_dead_code", eliminate_dead_code),
]
MAX_FOLD_ROUNDS = 8


def run_pipeline(graph, options, lower: bool = True) -> PassManager:
    """The PIPELINE to its fixed point, PRECISION when asked, then (`lower`) the LOWERING's kernel layouts."""
    pm = PassManager(PIPELINE, options.disabled_passes, options.dump_after, options.verify_passes, options)
    # folding can make new shapes static, which can make more nodes foldable: run to a fixed point
    for _ in range(MAX_FOLD_ROUNDS):
        n_nodes = len(graph.nodes)
        pm.run(graph)
        if len(graph.nodes) == n_nodes:
            break
    if options.precision_mode != "must_keep_origin_dtype":
        pm.run(graph, PRECISION)
    if lower:
        pm.run(graph, LOWERING)
    return pm
