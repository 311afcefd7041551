"""Ops ge runs as ONNX functions, with no kernel of their own (registry.expanded).

The ONNX importer replaces each of their nodes by the nodes of its function (frontends/onnx_functions.py):
the function ONNX's schema defines (a fixed body, or one built from the node's input types), or ge's own
where the schema has none. The parts are ops ge has kernels for, so these add no compile time: attention
FlexAttention becomes MatMul/Softmax, the causal convolution a Conv on the state and the input
concatenated, the optimizers elementwise arithmetic. (LinearAttention's function is a Scan over the
sequence, 50x slower than onnxruntime: it has a kernel, linear_attention.py.)
"""
from __future__ import annotations

from .registry import expanded

expanded("SwiGLU", since=28)                                                  # schema function
expanded(["RotaryEmbedding"], since=23)                                       # schema, by input types
expanded("CausalConvWithState", since=27)                                    # schema, by input types
expanded("FlexAttention", domain="ai.onnx.preview")                           # schema, by input types
expanded("TensorScatter", since=24)                                           # ge's function
expanded(["Momentum", "Adagrad", "Adam"], domain="ai.onnx.preview.training")  # ge's functions
expanded(["Binarizer", "ArrayFeatureExtractor"], domain="ai.onnx.ml")         # ge's functions
