"""The kernel library: importing this package registers every kernel family, each named here."""
from . import registry
from . import (activation, attention, axis_scan, binary, bitwise, cast, control, conv, conv_bf16,  # noqa: F401
               conv_scaled, einsum, elementwise, expanded, gemm_bf16, image_decoder, indexing, kv_cache, linalg,
               linear_attention, loss, matmul, matmul_int8, movement, nms, norm, pad, patches, pool, qlinear, qnhwc,
               quant, reduce,
               refused, resize, reverse_sequence, rms_norm, rnn, sample, select, sequence, softmax, spectral, tensor,
               tfidf, ml, ml_svm, strings, tree_ensemble, window)
from .registry import (AICORE, AICPU, DVPP, HCCL, KernelContext, Launch, OpKernel, TensorSpec,
                       is_registered, lookup, refuse, register, registered_ops, run_kernel)

__all__ = ["AICORE", "AICPU", "DVPP", "HCCL", "KernelContext", "Launch", "OpKernel", "TensorSpec",
           "is_registered", "lookup", "refuse", "register", "registered_ops", "run_kernel", "registry"]
